package ui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// bins returns the directory of the strata binaries: $STRATA_BIN (make
// test sets it), else a fresh go build.
func bins(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("STRATA_BIN"); d != "" {
		return d
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/strata-agent", "./cmd/strata-collector")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// start runs a binary until the test ends (SIGTERM, then kill); its
// output is logged when the test fails. Lines of its stdout go to lines.
func start(t *testing.T, name string, lines chan<- string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	out := &testenv.Output{}
	cmd.Stderr = out
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(out, pw)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(done)
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if lines != nil {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, out.String())
		}
	})
	return cmd
}

// collector is a strata-collector serving gRPC and the UI.
type collector struct {
	grpc, http string
}

// startCollector starts strata-collector on loopback ports with a fresh
// store, polling histories every second.
func startCollector(t *testing.T, bin, histories string) collector {
	t.Helper()
	lines := make(chan string, 16)
	start(t, "collector", lines, filepath.Join(bin, "strata-collector"), "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--store-dir", filepath.Join(t.TempDir(), "store"), "--memory-limit", "512MB",
		"--history", histories, "--history-interval", "1s", "--insecure")
	var c collector
	deadline := time.After(60 * time.Second)
	for c.grpc == "" || c.http == "" {
		select {
		case l := <-lines:
			if a, ok := strings.CutPrefix(l, "listening "); ok {
				c.grpc = a
			}
			if a, ok := strings.CutPrefix(l, "http "); ok {
				c.http = "http://" + a
			}
		case <-deadline:
			t.Fatal("collector printed no listening and http lines within 60 s")
		}
	}
	return c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startAgent starts strata-agent against the collector and returns its hook
// socket.
func startAgent(t *testing.T, bin, collector string) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "hook.sock")
	metrics := freeAddr(t)
	start(t, "agent", nil, filepath.Join(bin, "strata-agent"), "--node-name", "ui-node", "--hook-socket", sock,
		"--collector", collector, "--spool-dir", filepath.Join(dir, "spool"), "--http", metrics, "--http-insecure",
		"--flush-interval", "50ms", "--counters-interval", "500ms")
	waitFor(t, "the agent's hook socket", 30*time.Second, func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	return sock
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// getJSON decodes the JSON answer of url into v; false on any error or a
// status other than 200.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}
