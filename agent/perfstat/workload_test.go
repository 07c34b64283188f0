package perfstat

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/test/testenv"
	"golang.org/x/sys/unix"
)

// fault touches pages fresh anonymous pages n times over, dropping them in
// between, so each round is exactly pages minor faults of this thread.
func fault(t *testing.T, pages, rounds int) {
	t.Helper()
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for range rounds {
		for p := 0; p < pages; p++ {
			mem[p*ps] = 1
		}
		if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkloadCounters counts this test process with software events and
// checks that hardware fields stay empty, with a reason, where the PMU is
// missing.
func TestWorkloadCounters(t *testing.T) {
	testenv.RequireRoot(t)
	runtime.LockOSThread() // the faulting thread exists at Open
	defer runtime.UnlockOSThread()
	pid := uint32(os.Getpid())
	pmu, err := DetectPMU(procmem.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this node: pmu_status %q", pmu.Status())
	w, err := Open(pid, Options{PMU: pmu})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fault(t, 256, 4)
	got, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got.PID != pid || got.MinorFaults < 4*256 || got.TaskClockNs == 0 || !got.End.After(got.Start) {
		t.Errorf("software counters: %+v", got)
	}
	if !pmu.Available() {
		if got.Cycles != nil || got.Instructions != nil || got.DTLBMisses != nil || got.WalkCyclesLoad != nil {
			t.Errorf("hardware counts without a PMU: %+v", got)
		}
		if got.PMUStatus != "unavailable: no hardware PMU" {
			t.Errorf("pmu status %q", got.PMUStatus)
		}
		// A PMU that sysfs claims but the kernel cannot open is reported,
		// not invented.
		fake := PMUInfo{Core: []PMU{{"cpu", unix.PERF_TYPE_RAW}}}
		wk, _ := SelectWalkEvents(procmem.CPUModel{Vendor: "GenuineIntel", Family: 6, Model: 0x55})
		w2, err := Open(pid, Options{PMU: fake, Walk: &wk})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close()
		got2, err := w2.Read()
		if err != nil {
			t.Fatal(err)
		}
		if got2.Cycles != nil || !strings.HasPrefix(got2.PMUStatus, "unavailable: ") {
			t.Errorf("claimed PMU: cycles %v status %q", got2.Cycles, got2.PMUStatus)
		}
		t.Logf("claimed but absent PMU: %q", got2.PMUStatus)
	}
	// Counting plumbing end to end: software events stand in for the walk
	// events, opened with the "core PMU" type as raw walk events would be.
	standIn := PMUInfo{Core: []PMU{{"cpu", unix.PERF_TYPE_SOFTWARE}}}
	walk := &WalkEvents{Arch: "stand-in",
		LoadWalk:  &RawEvent{"minor-faults as load walks", unix.PERF_COUNT_SW_PAGE_FAULTS_MIN},
		StoreWalk: &RawEvent{"task-clock as store walks", unix.PERF_COUNT_SW_TASK_CLOCK}}
	w3, err := Open(pid, Options{PMU: standIn, Walk: walk})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	fault(t, 256, 2)
	got3, err := w3.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got3.WalkCyclesLoad == nil || got3.WalkCyclesStore == nil {
		t.Fatalf("stand-in walk counters missing: %+v", got3)
	}
	if *got3.WalkCyclesLoad < 2*256 || *got3.WalkCyclesStore == 0 {
		t.Errorf("stand-in load walks %d, minor faults %d, store walks %d",
			*got3.WalkCyclesLoad, got3.MinorFaults, *got3.WalkCyclesStore)
	}
}

// TestOpenListsThreadsUnderFS: the threads come from Options.FS (the
// agent's --proc), not from the running system's /proc.
func TestOpenListsThreadsUnderFS(t *testing.T) {
	pid := os.Getpid()
	empty := procmem.FS{Proc: t.TempDir(), Sys: "/sys"}
	_, err := Open(uint32(pid), Options{FS: empty})
	if !errors.Is(err, procmem.ErrProcessGone) || !strings.Contains(err.Error(), empty.Proc) {
		t.Fatalf("pid absent from the fixture /proc: %v, want ErrProcessGone naming %s", err, empty.Proc)
	}

	testenv.RequireRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(tid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Open(uint32(pid), Options{FS: procmem.FS{Proc: root, Sys: "/sys"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range w.counters {
		if len(c.fds) != 1 {
			t.Fatalf("%s: %d perf events, want 1 (the one thread the fixture lists)", c.name, len(c.fds))
		}
	}
	fault(t, 64, 1)
	got, err := w.Read()
	if err != nil || got.MinorFaults < 64 {
		t.Fatalf("faults of the listed thread: %+v, %v", got, err)
	}
	// The fixture has no sched files (a kernel without CONFIG_SCHED_DEBUG):
	// procfs counting falls back to perf events rather than report no switches.
	w2, err := Open(uint32(pid), Options{FS: procmem.FS{Proc: root, Sys: "/sys"}, Software: SoftwareProcfs})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if w2.Software() != SoftwarePerf || len(w2.counters) == 0 {
		t.Errorf("without sched files: source %v, %d perf counters; want perf", w2.Software(), len(w2.counters))
	}
}

// TestWorkloadCountersProcfs: the software counts read from /proc, which
// cost the counted process nothing: faults and task clock of the whole
// process since Open, context switches of its threads, and a thread that
// exits keeps the counts it was last read at.
func TestWorkloadCountersProcfs(t *testing.T) {
	pid := uint32(os.Getpid())
	w, err := Open(pid, Options{Software: SoftwareProcfs})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.counters) != 0 {
		t.Fatalf("%d perf counters opened without a PMU, want none", len(w.counters))
	}
	fault(t, 256, 4)
	spinCPU(t, 100*time.Millisecond) // at least a few 10 ms ticks
	// A thread that sleeps 50 times, then exits: a goroutine that ends
	// locked to its thread ends the thread, unless it is the main thread.
	tid, exit := make(chan int), make(chan struct{})
	var sleeper func()
	sleeper = func() {
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			go sleeper() // on another thread while this one holds the main one
			<-exit
			runtime.UnlockOSThread()
			return
		}
		for i := 0; i < 50; i++ {
			time.Sleep(time.Millisecond)
		}
		tid <- unix.Gettid()
		<-exit // never unlocked
	}
	go sleeper()
	task := "/proc/self/task/" + strconv.Itoa(<-tid)
	got, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got.MinorFaults < 4*256 || got.TaskClockNs < 50e6 || got.ContextSwitches < 50 || !got.End.After(got.Start) {
		t.Errorf("procfs counters: %+v", got)
	}
	close(exit)
	if err := testenv.WaitFor(task+" gone", 10*time.Second, nil, func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, os.ErrNotExist)
	}); err != nil {
		t.Fatal(err)
	}
	again, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if again.ContextSwitches < got.ContextSwitches || again.CPUMigrations < got.CPUMigrations ||
		again.MinorFaults < got.MinorFaults || again.TaskClockNs < got.TaskClockNs {
		t.Errorf("counts went down after a thread exited: %+v then %+v", got, again)
	}
}

// spinCPU burns d of this process's CPU time (not wall time: on a loaded
// machine a wall-clock spin may get a fraction of it).
func spinCPU(t *testing.T, d time.Duration) {
	t.Helper()
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, deadline := cpu(), time.Now().Add(30*time.Second)
	for cpu()-start < d && time.Now().Before(deadline) {
	}
}
