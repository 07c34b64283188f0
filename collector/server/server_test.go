package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestLoadPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "collector.json")
	os.WriteFile(file, []byte(`{"listen": "10.0.0.1:7070", "store_dir": "/file", "memory_limit": "2GB", "log_level": "debug", "shutdown_grace": "3s", "history": ["/file-hist"]}`), 0o600)
	env := map[string]string{"STRATA_COLLECTOR_STORE_DIR": "/env", "STRATA_COLLECTOR_MEMORY_LIMIT": "3GB"}
	c, err := server.Load([]string{"--config", file, "--insecure", "--memory-limit", "4GB", "--history", "/a,/b", "--history", "http://jhs:19888"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := server.Defaults()
	want.Listen, want.StoreDir, want.MemoryLimit, want.LogLevel = "10.0.0.1:7070", "/env", "4GB", "debug"
	want.ShutdownGrace, want.History = server.Duration(3*time.Second), []string{"/a", "/b", "http://jhs:19888"}
	want.Insecure = true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("config = %+v, want %+v", c, want)
	}
	env["STRATA_COLLECTOR_CONFIG"] = file
	env["STRATA_COLLECTOR_INSECURE"] = "true"
	c, err = server.Load(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || c.LogLevel != "debug" || c.MemoryLimit != "3GB" || !reflect.DeepEqual(c.History, []string{"/file-hist"}) {
		t.Fatalf("config file from env: %+v, %v", c, err)
	}
	d, err := server.Load([]string{"--insecure"}, func(string) string { return "" }, io.Discard)
	want = server.Defaults()
	want.Insecure = true
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("no overrides but --insecure = %+v, %v; want defaults", d, err)
	}
}

// The ClickHouse backend's settings come from the file, the environment
// (the password, typically) and flags like every other.
func TestLoadClickHouse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "collector.json")
	os.WriteFile(file, []byte(`{"store": "clickhouse", "clickhouse_url": "http://ch:8123", "clickhouse_user": "file-user",
		"retention_max_age": "168h", "clickhouse_flush_interval": "1s"}`), 0o600)
	env := map[string]string{"STRATA_COLLECTOR_CLICKHOUSE_PASSWORD": "s3cret", "STRATA_COLLECTOR_CLICKHOUSE_DATABASE": "traces"}
	c, err := server.Load([]string{"--config", file, "--clickhouse-user", "strata", "--retention-max-bytes", "500GiB",
		"--collector-id", "c1", "--history-claim-lease", "5m", "--insecure"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := server.Defaults()
	want.Store, want.ClickHouseURL, want.ClickHouseUser, want.ClickHousePassword = "clickhouse", "http://ch:8123", "strata", "s3cret"
	want.ClickHouseDatabase, want.ClickHouseFlushInterval, want.CollectorID = "traces", server.Duration(time.Second), "c1"
	want.RetentionMaxAge, want.RetentionMaxBytes = server.Duration(168*time.Hour), 500<<30
	want.HistoryClaimLease, want.Insecure = server.Duration(5*time.Minute), true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("config = %+v\nwant %+v", c, want)
	}
}

func TestLoadInvalid(t *testing.T) {
	for name, args := range map[string][]string{
		"memory limit": {"--memory-limit", "lots"},
		"log level":    {"--log-level", "loud"},
		"listen":       {"--listen", "nowhere"},
		"grace":        {"--shutdown-grace", "0s"},
		"threads":      {"--threads", "-1"},
		"extra arg":    {"serve"},
		"store":        {"--store", "postgres"},
		"no url":       {"--store", "clickhouse"},
		"url scheme":   {"--store", "clickhouse", "--clickhouse-url", "tcp://ch:9000"},
		"database":     {"--store", "clickhouse", "--clickhouse-url", "http://ch:8123", "--clickhouse-database", "a;DROP"},
		"cluster":      {"--store", "clickhouse", "--clickhouse-url", "http://ch:8123", "--clickhouse-cluster", "x y"},
		"lease":        {"--history-claim-lease", "0s"},
		"max age":      {"--retention-max-age", "-1h"},
		"interval":     {"--retention-max-age", "1h", "--retention-interval", "0s"},
	} {
		// --insecure: each case is refused for its own reason, not for
		// the missing credentials.
		args = append(args, "--insecure")
		if _, err := server.Load(args, func(string) string { return "" }, io.Discard); !errors.Is(err, server.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	env := func(k string) string {
		if k == "STRATA_COLLECTOR_THREADS" {
			return "many"
		}
		return ""
	}
	if _, err := server.Load(nil, env, io.Discard); err == nil || !strings.Contains(err.Error(), "STRATA_COLLECTOR_THREADS") {
		t.Errorf("bad env: %v, want an error naming the variable", err)
	}
}

// FuzzDecodeConfig: whatever the file holds, decoding returns an error or a
// config, never panics, and a config that validates has a parsable level.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"listen": "127.0.0.1:7070", "shutdown_grace": "5s", "threads": 2}`))
	f.Add([]byte(`{"shutdown_grace": 5}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := server.Defaults()
		if server.DecodeConfig(data, &c) != nil {
			return
		}
		if c.Validate() == nil {
			if _, err := c.Level(); err != nil {
				t.Fatalf("valid config with bad level: %v", err)
			}
		}
	})
}

// Stopping the collector with an agent's Push stream still open: the stream
// ends with Unavailable without waiting for the grace to run out (a minute
// here, so that a stop that waited for it cannot pass for one that did not,
// however loaded the machine), Run returns, and the acknowledged batch is in
// the store.
func TestGracefulStopKeepsAcknowledged(t *testing.T) {
	const grace = time.Minute
	c := servertest.StartWith(t, nil, nil, func(cfg *server.Config) { cfg.ShutdownGrace = server.Duration(grace) })
	cc := c.Dial(t)
	for _, svc := range []string{"", "strata.v1.IngestService", "strata.v1.QueryService"} {
		h, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q = %v, %v", svc, h, err)
		}
	}
	stream, err := stratav1.NewIngestServiceClient(cc).Push(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(storetest.Sample(1)); err != nil {
		t.Fatal(err)
	}
	if ack, err := stream.Recv(); err != nil || ack.GetSeq() != 1 {
		t.Fatalf("ack = %v, %v", ack, err)
	}
	start := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if took := time.Since(start); took >= grace/2 {
		t.Fatalf("stop took %v of a %v grace: the open stream was not ended", took, grace)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("open stream after stop: %v, want Unavailable", err)
	}
	st, err := store.Open(context.Background(), store.Options{Dir: c.StoreDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.Append(context.Background(), storetest.Sample(1))
	if err != nil || !res.Duplicate {
		t.Fatalf("replay after restart = %+v, %v; want duplicate (the acked batch was kept)", res, err)
	}
}

// The collector also serves on a Unix socket.
func TestRunUnixSocket(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Defaults()
	cfg.Listen, cfg.StoreDir = "unix:"+filepath.Join(dir, "c.sock"), filepath.Join(dir, "store")
	if err := server.Preflight(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, slog.New(slog.DiscardHandler), pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasSuffix(line, "c.sock\n") {
		t.Fatalf("ready line %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	if st, err := os.Stat(filepath.Join(dir, "c.sock")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600: the file mode authenticates its peers", st.Mode(), err)
	}
	cc, err := grpc.NewClient(cfg.Listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health over unix socket = %v, %v", h, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The collector accepts a batch above gRPC's 4 MiB default and refuses one
// above stratav1.MaxBatchBytes with ResourceExhausted, before storing it.
func TestBatchSizeLimit(t *testing.T) {
	c := servertest.Start(t, nil, nil)
	push := func(seq uint64, bytes int) (*stratav1.Ack, error) {
		stream, err := stratav1.NewIngestServiceClient(c.Dial(t)).Push(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := storetest.Sample(seq)
		b.Records[0].ResolveError = strings.Repeat("x", bytes)
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
		return stream.Recv()
	}
	if ack, err := push(1, 5<<20); err != nil || ack.GetSeq() != 1 {
		t.Fatalf("5 MiB batch: %v, %v; want it acknowledged", ack, err)
	}
	if _, err := push(2, stratav1.MaxBatchBytes); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("batch over MaxBatchBytes: %v, want ResourceExhausted", err)
	}
}
