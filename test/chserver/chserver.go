package chserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is a running clickhouse-server.
type Server struct {
	// URL is its HTTP interface, e.g. http://127.0.0.1:41234.
	URL string
	// Version is what SELECT version() answered.
	Version string
	// Dir holds its configuration, data and logs ("" for an external one).
	Dir string
	// NoCluster says the server has no Cluster (Current's chdb).
	NoCluster bool
	cmd       *exec.Cmd
	exited    chan error // receives the process's exit
}

// Binary returns the clickhouse-server executable: $STRATA_CLICKHOUSE_SERVER,
// else clickhouse-server on PATH or in /usr/sbin (Debian's place); "" when
// there is none.
func Binary() string {
	if p := os.Getenv("STRATA_CLICKHOUSE_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/clickhouse-server"); err == nil {
		return "/usr/sbin/clickhouse-server"
	}
	return ""
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
	dbSeq      atomic.Uint64
)

// Shared returns the test binary's server, starting it on first use; it
// skips tb when no server is installed and fails it when one cannot start.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	if u := os.Getenv("STRATA_CLICKHOUSE_URL"); u != "" {
		sharedOnce.Do(func() { shared, sharedErr = external(u) })
	} else {
		if Binary() == "" {
			tb.Skip("skipping: clickhouse-server is not installed (make deps installs Debian's)")
		}
		sharedOnce.Do(func() { shared, sharedErr = Start() })
	}
	if sharedErr != nil {
		tb.Fatalf("clickhouse server: %v", sharedErr)
	}
	return shared
}

// Main runs a package's tests and then stops the shared server, if one was
// started: func TestMain(m *testing.M) { os.Exit(chserver.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	if current != nil {
		current.Stop()
	}
	return code
}

func external(raw string) (*Server, error) {
	s := &Server{URL: strings.TrimSuffix(raw, "/")}
	v, err := s.Query(context.Background(), "SELECT version()")
	if err != nil {
		return nil, fmt.Errorf("external server %s: %w", redact(raw), err)
	}
	s.Version = strings.TrimSpace(v)
	return s, nil
}

// config is the server's private configuration: loopback only, no native
// protocol port, small caches, the data under dir.
const config = `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{DIR}/server.log</log><errorlog>{DIR}/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>{HTTP}</http_port>
  <tcp_port>{TCP}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{DIR}/data/</path>
  <tmp_path>{DIR}/tmp/</tmp_path>
  <user_files_path>{DIR}/user_files/</user_files_path>
  <format_schema_path>{DIR}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <timezone>UTC</timezone>
  <remote_servers>
    <strata_single>
      <shard><replica><host>127.0.0.1</host><port>{TCP}</port></replica></shard>
    </strata_single>
  </remote_servers>
</yandex>
`

// users holds the default user (no password, tests' DDL) and strata (with
// a password, for the credential paths).
const users = `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    <strata><password>` + Password + `</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></strata>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`

// User and Password are a second account of a started server, for tests of
// credentials.
const (
	User     = "strata"
	Password = "strata-test-password"
)

// Cluster is the name of a one-shard cluster of the started server itself
// (remote_servers), for the Distributed-table layout.
const Cluster = "strata_single"

// Start starts a new server in a temporary directory; Stop ends it and
// removes the directory.
func Start() (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("start clickhouse: clickhouse-server is not installed")
	}
	dir, err := os.MkdirTemp("", "strata-clickhouse-")
	if err != nil {
		return nil, fmt.Errorf("start clickhouse: %w", err)
	}
	var lastErr error
	for range 3 { // a free port can be taken before the server binds it
		s, err := startIn(bin, dir)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func startIn(bin, dir string) (*Server, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	tcpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := strings.NewReplacer("{DIR}", dir, "{HTTP}", fmt.Sprint(httpPort), "{TCP}", fmt.Sprint(tcpPort)).Replace(config)
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("write clickhouse config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o600); err != nil {
		return nil, fmt.Errorf("write clickhouse users: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return nil, fmt.Errorf("create clickhouse log: %w", err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "--config-file="+filepath.Join(dir, "config.xml"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the test binary even when no TestMain stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), Dir: dir, cmd: cmd, exited: exited}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "server.err.log"))
			return nil, fmt.Errorf("clickhouse-server exited: %v\n%s", err, tail(log, 2000))
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			return nil, errors.New("clickhouse-server did not answer within 30s")
		case <-time.After(50 * time.Millisecond):
		}
		v, err := s.Query(context.Background(), "SELECT version()")
		if err == nil {
			s.Version = strings.TrimSpace(v)
			return s, nil
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Stop kills a started server and removes its directory; a no-op for an
// external one.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	os.RemoveAll(s.Dir)
}

// Query runs one statement as the default user and returns its text output.
func (s *Server) Query(ctx context.Context, q string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", strings.NewReader(q))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return string(body), nil
}

// Database creates a database for tb alone and drops it at tb's cleanup.
func (s *Server) Database(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("strata_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	if _, err := s.Query(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := s.Query(context.Background(), "DROP DATABASE IF EXISTS "+name); err != nil {
			tb.Logf("drop database %s: %v", name, err)
		}
	})
	return name
}

// UserURL is URL with the strata account's credentials in it; for an
// external server it is URL unchanged.
func (s *Server) UserURL() string {
	if s.cmd == nil {
		return s.URL
	}
	u, _ := url.Parse(s.URL)
	u.User = url.UserPassword(User, Password)
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
