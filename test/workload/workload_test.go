package workload

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// events is a hooksrv.Handler that keeps what it gets.
type events struct {
	mu  sync.Mutex
	evs []hooksrv.Event
}

func (e *events) HandleEvent(_ context.Context, ev hooksrv.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) count(kind hooksrv.EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (e *events) all() []hooksrv.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]hooksrv.Event(nil), e.evs...)
}

func serve(t *testing.T) (*hooksrv.Server, *events) {
	t.Helper()
	ev := &events{}
	srv, err := hooksrv.Listen(hooksrv.Config{Path: filepath.Join(t.TempDir(), "hook.sock")}, ev,
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, ev
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRegions runs the workload against a real hooksrv: its regions arrive
// as exact register events, its foreign claims are rejected, and its memory
// holds the documented pattern.
func TestRegions(t *testing.T) {
	bin := Build(t)
	srv, ev := serve(t)
	p := Start(t, bin, Options{Socket: srv.Path(), AppID: "app-regions", ExecutorID: "3", RDD: 11,
		ForeignPID: os.Getpid()})

	wantRegions := []struct {
		length, touched uint64
		touch           string
		thp             bool
	}{{8 << 20, 2048, "all", false}, {8 << 20, 1024, "even", false}, {4 << 20, 1024, "all", true}}
	if len(p.Regions) != len(wantRegions) {
		t.Fatalf("workload printed %d regions, want %d", len(p.Regions), len(wantRegions))
	}
	for i, r := range p.Regions {
		w := wantRegions[i]
		if r.Block != "rdd_11_"+string(rune('0'+i)) || r.RDD != 11 || r.Partition != int32(i) ||
			r.HookBlockID != uint64(i+1) || r.PID != p.PID || r.Length != w.length ||
			r.TouchedPages != w.touched || r.Touch != w.touch || r.THP != w.thp || r.PageSize != 4096 {
			t.Errorf("region %d = %+v, want %+v", i, r, w)
		}
		if r.THP && r.Vaddr%(2<<20) != 0 {
			t.Errorf("THP region at %#x is not 2 MiB aligned", r.Vaddr)
		}
	}
	if p.Foreign == nil || p.Foreign.ClaimedPID != os.Getpid() {
		t.Errorf("foreign line = %+v, want claimed pid %d", p.Foreign, os.Getpid())
	}

	waitFor(t, "registers and accesses", func() bool {
		return ev.count(hooksrv.EventRegister) == 3 && ev.count(hooksrv.EventAccess) == 6 &&
			srv.Stats().Rejected == 2
	})
	for _, e := range ev.all() {
		if e.Session.PID != uint32(p.PID) || e.Session.AppID != "app-regions" || e.Session.ExecutorID != "3" {
			t.Errorf("event from session %+v, want the workload's", *e.Session)
		}
		if e.Kind != hooksrv.EventRegister {
			continue
		}
		r := p.Regions[e.Block.HookID-1]
		want := hooksrv.Block{HookID: r.HookBlockID, RDDID: 11, Partition: r.Partition, Name: r.Block,
			Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP,
			Kind: hooksrv.KindRDD, Chunks: 1, StageID: -1, StageAttempt: -1, TaskAttemptID: -1, Column: -1, SparkBytes: r.Length}
		if e.Block != want || e.Vaddr != r.Vaddr || e.Length != r.Length || e.TID != uint32(p.PID) {
			t.Errorf("register %+v at %#x+%d tid %d, want %+v at %#x+%d tid %d",
				e.Block, e.Vaddr, e.Length, e.TID, want, r.Vaddr, r.Length, p.PID)
		}
	}
	if ev.count(hooksrv.EventMove) != 0 {
		t.Errorf("the foreign MOVE was delivered")
	}

	// Every touched page starts with its own address; untouched pages are zero.
	for _, r := range p.Regions {
		for i := uint64(0); i < r.Pages; i++ {
			addr := r.Vaddr + i*r.PageSize
			got, err := p.ReadWord(addr)
			if err != nil {
				t.Fatalf("%s: %v", r.Block, err)
			}
			want := uint64(0)
			if r.Touched(i) {
				want = addr
			}
			if got != want {
				t.Fatalf("%s page %d at %#x holds %#x, want %#x", r.Block, i, addr, got, want)
			}
		}
	}
	logTHP(t, p.PID, p.Regions[2])

	done, err := p.Stop()
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// HELLO, 3 REGISTER, 6 ACCESS, 2 foreign, 3 FREE, DROPPED.
	if done.Sent != 16 || done.Dropped != 0 {
		t.Errorf("workload counters %+v, want 16 sent, 0 dropped", done)
	}
	waitFor(t, "frees and session end", func() bool {
		return ev.count(hooksrv.EventFree) == 3 && ev.count(hooksrv.EventSessionEnd) == 1
	})
	if st := srv.Stats(); st.Malformed != 0 || st.Unknown != 0 || st.DroppedByPeer != 0 || st.Frames != 14 {
		t.Errorf("server stats %+v, want 14 frames and no errors", st)
	}
}

// logTHP reports whether the kernel backed the MADV_HUGEPAGE region with
// huge pages; that depends on free memory, so it is logged, not checked.
func logTHP(t *testing.T, pid int, r Region) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Logf("smaps: %v", err)
		return
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(l, fmt.Sprintf("%x-", r.Vaddr))
		}
		if in && strings.HasPrefix(l, "AnonHugePages:") {
			t.Logf("%s at %#x: %s", r.Block, r.Vaddr, strings.Join(strings.Fields(l), " "))
		}
	}
}

// TestDurationAndSignal runs the loop mode and ends it with SIGTERM: the
// workload keeps sending accesses, then frees its blocks and exits 0.
func TestDurationAndSignal(t *testing.T) {
	bin := Build(t)
	srv, ev := serve(t)
	p := Start(t, bin, Options{Socket: srv.Path(), AppID: "app-loop", ExecutorID: "1", Duration: time.Minute})
	waitFor(t, "repeated accesses", func() bool { return ev.count(hooksrv.EventAccess) >= 12 })
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitFor(t, "frees", func() bool { return ev.count(hooksrv.EventFree) == 3 })
}

func TestNoAgent(t *testing.T) {
	bin := Build(t)
	_, err := start(bin, Options{Socket: filepath.Join(t.TempDir(), "absent.sock"), AppID: "a", ExecutorID: "1"})
	if err == nil || !strings.Contains(err.Error(), "connect hook socket") {
		t.Errorf("start without an agent: %v, want a connect error", err)
	}
}

// TestPIDNamespace runs the workload in its own pid namespace, where it
// reports getpid() == 1: the agent accepts that as the peer's own pid (the
// last NSpid entry) and attributes everything to the host pid.
func TestPIDNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	bin := Build(t)
	srv, ev := serve(t)
	p := Start(t, bin, Options{Socket: srv.Path(), AppID: "app-ns", ExecutorID: "1",
		Wrap: []string{unshare, "--pid", "--fork", "--kill-child"}})
	if p.Regions[0].PID != 1 {
		t.Fatalf("workload sees pid %d, want 1 inside its namespace", p.Regions[0].PID)
	}
	waitFor(t, "registers", func() bool { return ev.count(hooksrv.EventRegister) == 3 })
	s := ev.all()[0].Session
	if s.HookPID != 1 || s.PID == 1 || s.PID == uint32(p.PID) {
		t.Errorf("session pid %d hook pid %d, want the workload's host pid (not 1, not unshare's %d)", s.PID, s.HookPID, p.PID)
	}
	if st := srv.Stats(); st.Rejected != 0 {
		t.Errorf("stats %+v, want no rejection", st)
	}
	if _, err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
