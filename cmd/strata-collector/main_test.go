package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// binary returns the strata-collector binary: $STRATA_BIN/strata-collector
// (make test builds it), else one built into a temporary directory.
func binary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("STRATA_BIN"); dir != "" {
		return filepath.Join(dir, "strata-collector")
	}
	bin := filepath.Join(t.TempDir(), "strata-collector")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// The real binary: prints its address, serves health and ingest, answers
// its own probe, and on SIGTERM stops gracefully with exit status 0 (the
// probe then fails); a bad flag exits 1, and so does a TCP listener
// without credentials or --insecure.
func TestBinary(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--store-dir", dir, "--memory-limit", "256MB", "--log-level", "warn", "--insecure")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening 127.0.0.1:") {
		t.Fatalf("first line %q, %v (stderr %s)", line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", h, err)
	}
	if out, err := exec.Command(bin, "probe", "--listen", addr, "--insecure").CombinedOutput(); err != nil {
		t.Fatalf("probe of a serving collector: %v %s", err, out)
	}
	stream, err := stratav1.NewIngestServiceClient(cc).Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(storetest.Sample(1))
	if ack, err := stream.Recv(); err != nil || ack.GetSeq() != 1 || ack.GetRecords() != 3 {
		t.Fatalf("ack = %v, %v", ack, err)
	}

	// Every thread, DuckDB's among them, yields to the work on the node.
	for tid, nice := range threadNices(t, cmd.Process.Pid) {
		if nice != 10 {
			t.Errorf("thread %d of the collector at nice %d, want the default 10", tid, nice)
		}
	}

	// SIGTERM with the Push stream still open.
	stopAt := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit 15 s after SIGTERM")
	}
	t.Logf("exited %v after SIGTERM", time.Since(stopAt).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(dir, "strata.duckdb.wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WAL left after a graceful stop (checkpoint missing): %v", err)
	}

	if out, err := exec.Command(bin, "probe", "--listen", addr, "--insecure").CombinedOutput(); err == nil {
		t.Fatalf("probe of a stopped collector succeeded: %s", out)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--memory-limit", "lots", "--insecure"}, "memory limit"},
		{[]string{"--listen", "127.0.0.1:0", "--store-dir", dir}, "--insecure"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), tc.says) {
			t.Fatalf("%v: %v, output %q; want exit 1 saying %q", tc.args, err, out, tc.says)
		}
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "strata-collector ") {
		t.Fatalf("--version: %q, %v", out, err)
	}
}

// threadNices reads the nice value of each thread of pid.
func threadNices(t *testing.T, pid int) map[int]int {
	t.Helper()
	fs := procmem.Default()
	tids, err := fs.Tasks(pid)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, tid := range tids {
		st, err := fs.TaskStat(pid, tid)
		if errors.Is(err, procmem.ErrProcessGone) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatal(err)
		}
		out[tid] = st.Nice
	}
	return out
}
