package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// bins returns the directory holding strata, strata-agent and
// strata-collector, building them when $STRATA_BIN is unset.
func bins(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if d := os.Getenv("STRATA_BIN"); d != "" {
			binDir = d
			return
		}
		binDir, binErr = os.MkdirTemp("", "strata-e2e-bin")
		if binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/strata", "./cmd/strata-agent", "./cmd/strata-collector")
		cmd.Dir = testenv.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// proc is a started binary whose output is kept for failure messages.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testenv.Output
	done chan error
}

func startProc(t testing.TB, name string, stdout io.Writer, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, stdout, nil, args...)
}

// startProcEnv is startProc with env added to the test's environment.
func startProcEnv(t testing.TB, name string, stdout io.Writer, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(args[0], args[1:]...), out: &testenv.Output{}, done: make(chan error, 1)}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = p.out
	if stdout != nil {
		p.cmd.Stdout = io.MultiWriter(stdout, p.out)
	} else {
		p.cmd.Stdout = p.out
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit within 20 s.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("%s exited with %v\n%s", p.name, err, p.out.String())
		}
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("%s did not stop within 20s after SIGTERM\n%s", p.name, p.out.String())
	}
}

// startCollector starts strata-collector on a free loopback port with a
// fresh store and returns its address.
func startCollector(t testing.TB, bin string) (*proc, string) {
	t.Helper()
	return startCollectorAt(t, bin, "127.0.0.1:0", filepath.Join(t.TempDir(), "store"))
}

// startCollectorWith starts strata-collector with a fresh store and extra
// flags.
func startCollectorWith(t testing.TB, bin string, extra ...string) (*proc, string) {
	t.Helper()
	return startCollectorAt(t, bin, "127.0.0.1:0", filepath.Join(t.TempDir(), "store"), extra...)
}

// startCollectorAt starts strata-collector on listen with the store in dir,
// without authentication (--insecure) unless extra holds credentials.
func startCollectorAt(t testing.TB, bin, listen, dir string, extra ...string) (*proc, string) {
	t.Helper()
	args := []string{filepath.Join(bin, "strata-collector"), "--listen", listen, "--store-dir", dir}
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--tls-client-ca" || a == "--token-file" }) {
		args = append(args, "--insecure")
	}
	pr, pw := io.Pipe()
	p := startProc(t, "collector", pw, append(args, extra...)...)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return p, a
	case err := <-p.done:
		t.Fatalf("collector exited: %v\n%s", err, p.out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("collector not listening after 60s\n%s", p.out.String())
	}
	return nil, ""
}

func freePort(t testing.TB) string {
	t.Helper()
	a, err := freeListener()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// freeListener returns a loopback address nobody listens on right now.
func freeListener() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

type agentProc struct {
	*proc
	socket, http string
	token        string // bearer token of its HTTP endpoint
}

func startAgent(t testing.TB, bin, collector string, extra ...string) *agentProc {
	t.Helper()
	return startAgentIn(t, bin, collector, t.TempDir(), extra...)
}

// startAgentIn starts strata-agent with its socket and spool in dir.
func startAgentIn(t testing.TB, bin, collector, dir string, extra ...string) *agentProc {
	t.Helper()
	return startAgentOpts(t, bin, collector, dir, agentOpts{}, extra...)
}

// agentOpts start the agent in a changed environment.
type agentOpts struct {
	env  []string // added to the environment (STRATA_* settings)
	wrap []string // command the agent runs under, e.g. prlimit
}

// startAgentOpts is startAgentIn with o.
func startAgentOpts(t testing.TB, bin, collector, dir string, o agentOpts, extra ...string) *agentProc {
	t.Helper()
	a := &agentProc{socket: filepath.Join(dir, "hook.sock"), http: freePort(t), token: "e2e-token-0123456789abcdef"}
	tokens := filepath.Join(dir, "http-tokens")
	if err := os.WriteFile(tokens, []byte(a.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, o.wrap...), filepath.Join(bin, "strata-agent"),
		"--node-name", "e2e-node", "--hook-socket", a.socket, "--collector", collector,
		"--spool-dir", filepath.Join(dir, "spool"), "--http", a.http, "--http-token-file", tokens, "--flush-interval", "50ms")
	a.proc = startProcEnv(t, "agent", nil, o.env, append(args, extra...)...)
	waitFor(t, "agent metrics endpoint", 30*time.Second, func() bool {
		_, err := a.metric("strata_hook_sessions_total")
		return err == nil
	})
	return a
}

// metric reads one counter from the agent's /metrics.
func (a *agentProc) metric(name string) (float64, error) {
	req, err := http.NewRequest("GET", "http://"+a.http+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runCLI runs the strata CLI and returns its stdout.
func runCLI(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := runCLIErr(bin, args...)
	if err != nil && strings.Contains(err.Error(), "no traces of application ") {
		return "" // the collector holds no record of the app (yet): the tests poll
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runCLIErr runs the strata CLI; the error carries its stderr.
func runCLIErr(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "strata"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("strata %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), nil
}

// pagemapEntry reads the raw pagemap entry of addr in pid, one pread per
// call: the test's own reading, independent of agent/procmem.
func pagemapEntry(t *testing.T, f *os.File, addr uint64) uint64 {
	t.Helper()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(addr/4096*8)); err != nil {
		t.Fatalf("read pagemap at %#x: %v", addr, err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

func kpageflags(t *testing.T, f *os.File, pfn uint64) uint64 {
	t.Helper()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(pfn*8)); err != nil {
		t.Fatalf("read kpageflags of pfn %#x: %v", pfn, err)
	}
	return binary.LittleEndian.Uint64(b[:])
}
