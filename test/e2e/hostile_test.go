package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// The regressions of the hardening issue's agent defects, each reproduced
// with real processes: peer.c's hostile or oversize hook peers against the
// real strata-agent binary, a well-behaved workload (test/workload's
// regions) beside them, and a real collector. Bounds are set through
// STRATA_* variables, which an agent without them ignores: run against the
// agent before the fix ($STRATA_BIN), each test fails on the defect itself.

// nobody is the uid and gid hostile peers run as: another user than the
// well-behaved workload (root), as on a shared node.
const nobody = 65534

// peerProc is a running peer.c.
type peerProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan map[string]any
	err   *testenv.Output
}

// startPeer runs peer.c with args, as uid when uid >= 0, and waits for its
// "ready" line. It is stopped (stdin closed, then killed) when the test ends.
func startPeer(t testing.TB, bin string, uid int, args ...string) *peerProc {
	t.Helper()
	p := &peerProc{cmd: exec.Command(bin, args...), lines: make(chan map[string]any, 64), err: &testenv.Output{}}
	if uid >= 0 {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	p.cmd.Stderr = p.err
	p.in, _ = p.cmd.StdinPipe()
	out, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start peer %v: %v", args, err)
	}
	t.Cleanup(func() {
		p.in.Close()
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			}
		}
		close(p.lines)
	}()
	if _, ok := p.next(t, "ready", 5*time.Minute); !ok {
		t.Fatalf("peer %v exited before it was ready: %s", args, p.err.String())
	}
	return p
}

// next returns the peer's next line carrying key, false when it exited.
func (p *peerProc) next(t testing.TB, key string, d time.Duration) (map[string]any, bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				return nil, false
			}
			if _, has := m[key]; has {
				return m, true
			}
		case <-timeout:
			t.Fatalf("peer printed no %q line in %v", key, d)
		}
	}
}

// buildPeer compiles peer.c where every user can run it.
func buildPeer(t testing.TB) string {
	t.Helper()
	bin := workload.Compile(t, "peer", "test/e2e/peer.c")
	openToAll(t, filepath.Dir(bin))
	return bin
}

// openToAll makes dir and the test's temporary directories above it
// searchable by every user, so peers of another uid reach the socket and
// the binaries in them.
func openToAll(t testing.TB, dir string) {
	t.Helper()
	for d := dir; strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// hardened starts a collector and an agent whose socket every user can
// reach, with env set, and returns them with the collector's address.
func hardened(t testing.TB, bin string, o agentOpts, extra ...string) (*agentProc, string) {
	t.Helper()
	_, addr := startCollector(t, bin)
	dir := t.TempDir()
	openToAll(t, dir)
	return startAgentOpts(t, bin, addr, dir, o, append([]string{"--faults", "off"}, extra...)...), addr
}

// goodPeerDelivered starts the well-behaved workload and waits until the
// collector holds every page of its records (ALLOC, WRITE, READ per block).
func goodPeerDelivered(t *testing.T, bin, addr string, ag *agentProc, wbin, app string, within time.Duration) *workload.Process {
	t.Helper()
	w := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: app, ExecutorID: "1", RDD: 7})
	var pages uint64
	for _, r := range w.Regions {
		pages += r.Pages
	}
	want := int(3 * pages)
	got := 0
	deadline := time.Now().Add(within)
	for got < want {
		if time.Now().After(deadline) {
			t.Fatalf("the well-behaved peer's pages: %d of %d at the collector after %v", got, want, within)
		}
		time.Sleep(250 * time.Millisecond)
		got = len(trace(t, bin, addr, app))
	}
	return w
}

func metricAtLeast(t *testing.T, ag *agentProc, name string, min float64) float64 {
	t.Helper()
	v, err := ag.metric(name)
	if err != nil || v < min {
		t.Fatalf("%s = %v (%v), want at least %v", name, v, err, min)
	}
	return v
}

// TestHostileSessionsCannotExhaustAgent: a user opening thousands of hook
// sessions exhausted the agent's file descriptors and stopped delivery for
// the node. With the agent's limit at 2048 descriptors, another user's
// processes open 3000 sessions; the per-uid cap turns most away at accept,
// and a well-behaved workload still gets its blocks to the collector.
func TestHostileSessionsCannotExhaustAgent(t *testing.T) {
	testenv.RequireRoot(t)
	bin, wbin, pbin := bins(t), workload.Build(t), buildPeer(t)
	ag, addr := hardened(t, bin, agentOpts{
		wrap: []string{"prlimit", "--nofile=2048:2048", "--"},
		// Let each hostile process hold many sessions: the uid's cap is
		// what must stop them.
		env: []string{"STRATA_HOOK_MAX_SESSIONS_PER_PID=100000"},
	})
	for range 3 {
		startPeer(t, pbin, nobody, ag.socket, "sessions", "1000")
	}
	goodPeerDelivered(t, bin, addr, ag, wbin, "app-good-sessions", 60*time.Second)
	metricAtLeast(t, ag, `strata_hook_sessions_refused_total{cap="uid"}`, 3000-256)
	if v, _ := ag.metric("strata_hook_sessions_active"); v > 256+1 {
		t.Fatalf("%v sessions open, want at most the uid's 256 and the good peer", v)
	}
}

// TestIdleHookSessionsClosed: sessions that say HELLO and then nothing are
// closed after the idle timeout; a workload idle as long but sending the
// hook's keepalive stays connected.
func TestIdleHookSessionsClosed(t *testing.T) {
	testenv.RequireRoot(t)
	bin, wbin, pbin := bins(t), workload.Build(t), buildPeer(t)
	ag, _ := hardened(t, bin, agentOpts{env: []string{"STRATA_HOOK_IDLE_TIMEOUT=2s"}})
	hostile := startPeer(t, pbin, nobody, ag.socket, "sessions", "3")
	good := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: "app-good-idle", ExecutorID: "1", Keepalive: 300 * time.Millisecond})
	for {
		m, ok := hostile.next(t, "closed", 30*time.Second)
		if !ok {
			t.Fatal("hostile peer exited")
		}
		if m["closed"].(float64) == 3 {
			break
		}
	}
	time.Sleep(3 * time.Second) // the good peer idles past the timeout too
	if v, _ := ag.metric("strata_hook_sessions_active"); v != 1 {
		t.Fatalf("%v sessions open, want the keepalive workload's only", v)
	}
	metricAtLeast(t, ag, `strata_hook_sessions_closed_total{reason="idle"}`, 3)
	if _, err := good.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the good peer's FREE records", 30*time.Second, func() bool {
		v, _ := ag.metric("strata_records_total")
		return v == 12 // 3 blocks: ALLOC, WRITE, READ, FREE
	})
}

// TestHugeRangesDoNotStarveOthers: two peers registering the whole user
// address space kept both resolvers busy for minutes. Now such a range is
// refused, and a well-behaved workload arriving after them is delivered at
// once.
func TestHugeRangesDoNotStarveOthers(t *testing.T) {
	testenv.RequireRoot(t)
	bin, wbin, pbin := bins(t), workload.Build(t), buildPeer(t)
	ag, addr := hardened(t, bin, agentOpts{})
	for range 2 {
		startPeer(t, pbin, nobody, ag.socket, "range", strconv.FormatUint(0x7fffffff0000, 10), "0")
	}
	goodPeerDelivered(t, bin, addr, ag, wbin, "app-good-range", 30*time.Second)
	metricAtLeast(t, ag, `strata_hook_frames_refused_total{reason="range_length"}`, 2)
}

// TestBlockFloodBounded: one user's live blocks are capped (here at 20000
// through STRATA_HOOK_MAX_BLOCKS_PER_UID; the default is 131072), so a
// flood of REGISTERs cannot grow the agent without bound, and another
// user's workload still registers and is delivered.
func TestBlockFloodBounded(t *testing.T) {
	testenv.RequireRoot(t)
	bin, wbin, pbin := bins(t), workload.Build(t), buildPeer(t)
	const capUID, flood = 20000, 30000
	ag, addr := hardened(t, bin, agentOpts{env: []string{"STRATA_HOOK_MAX_BLOCKS_PER_UID=" + strconv.Itoa(capUID)}})
	startPeer(t, pbin, nobody, ag.socket, "blocks", strconv.Itoa(flood), "4", "1")
	waitFor(t, "the flood's frames handled", 120*time.Second, func() bool {
		f, _ := ag.metric("strata_hook_frames_total")
		r, _ := ag.metric(`strata_hook_frames_refused_total{reason="blocks_uid"}`)
		return f+r >= flood+1
	})
	goodPeerDelivered(t, bin, addr, ag, wbin, "app-good-blocks", 60*time.Second)
	if v, _ := ag.metric("strata_live_blocks"); v > capUID+3 {
		t.Fatalf("%v live blocks, want at most the uid's %d and the good peer's 3", v, capUID)
	}
	metricAtLeast(t, ag, `strata_hook_frames_refused_total{reason="blocks_uid"}`, flood-capUID)
}

// TestKernelTableFullLogsBounded: past the kernel fault tracer's 65536
// block slots every REGISTER failed to mirror and logged a line (992,214
// lines, 264 MB in the report). Now the line is rate limited and the
// failures are counted.
func TestKernelTableFullLogsBounded(t *testing.T) {
	testenv.RequireRoot(t)
	bin, pbin := bins(t), buildPeer(t)
	const blocks = 70000 // over the tracer's default 65536 slots
	ag, _ := hardened(t, bin, agentOpts{}, "--faults", "on")
	// 64 KiB apart: one block per granule of the kernel's address index.
	startPeer(t, pbin, nobody, ag.socket, "blocks", strconv.Itoa(blocks), "64", "2")
	waitFor(t, "every block registered", 180*time.Second, func() bool {
		v, _ := ag.metric("strata_live_blocks")
		return v >= blocks
	})
	var lines int
	for _, l := range strings.Split(ag.out.String(), "\n") {
		if strings.Contains(l, "mirror") && strings.Contains(l, "kernel") {
			lines++
		}
	}
	if lines > 20 {
		t.Fatalf("%d log lines about blocks not mirrored in the kernel, want a rate-limited few", lines)
	}
	metricAtLeast(t, ag, "strata_kernel_mirror_errors_total", blocks-65536)
}

// TestBigBlockDoesNotTakeNeighboursDown: an untouched 2 GiB block is one
// run of 524288 pages as resolved, over the collector's 262144; its batch
// was refused and its two neighbours' records were lost with it. Now every
// page of all three blocks is stored.
func TestBigBlockDoesNotTakeNeighboursDown(t *testing.T) {
	testenv.RequireRoot(t)
	bin, pbin := bins(t), buildPeer(t)
	ag, addr := hardened(t, bin, agentOpts{})
	app := fmt.Sprintf("app-bigblock-%d", os.Getpid())
	startPeer(t, pbin, -1, ag.socket, "bigblock", app)
	want := []numaRow{{RDD: 1, NumaNode: -1, Pages: 524288}, {RDD: 2, NumaNode: 0, Pages: 2048}}
	var got []numaRow
	waitFor(t, "the collector to hold all three blocks", 60*time.Second, func() bool {
		got = numa(t, bin, addr, app)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	if v, _ := ag.metric("strata_stream_records_dropped_total"); v != 0 {
		t.Fatalf("%v records dropped", v)
	}
}

// TestLargeBlockAccessesFitBatches: a block of scattered pages read 512
// times made one 100 MB batch, over the 64 MiB message limit, which the
// agent resent forever. Now batches are cut by size and every record is
// stored.
func TestLargeBlockAccessesFitBatches(t *testing.T) {
	testenv.RequireRoot(t)
	bin, pbin := bins(t), buildPeer(t)
	ag, _ := hardened(t, bin, agentOpts{})
	const accesses = 512
	startPeer(t, pbin, -1, ag.socket, "scatter", fmt.Sprintf("app-scatter-%d", os.Getpid()), "256", strconv.Itoa(accesses))
	waitFor(t, "every record acknowledged by the collector", 120*time.Second, func() bool {
		v, _ := ag.metric("strata_stream_records_acked_total")
		return v >= 1+accesses
	})
	if v, _ := ag.metric("strata_stream_records_dropped_total"); v != 0 {
		t.Fatalf("%v records dropped", v)
	}
}

// numaRow is one line of `strata numa -o json`.
type numaRow struct {
	RDD      int32  `json:"rdd"`
	NumaNode int32  `json:"numa_node"`
	Pages    uint64 `json:"pages"`
}

func numa(t *testing.T, bin, collector, app string) []numaRow {
	t.Helper()
	var rows []numaRow
	for _, l := range strings.Split(strings.TrimSpace(runCLI(t, bin, "numa", "--collector", collector, "--app", app, "-o", "json")), "\n") {
		if l == "" {
			continue
		}
		var r numaRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("numa line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	return rows
}
