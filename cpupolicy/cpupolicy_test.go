package cpupolicy

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/test/testenv"
)

// lockedThread runs a goroutine on an OS thread of its own until the test
// ends; policy, if not SCHED_NORMAL, is set on that thread first. It
// returns the thread's id. At cleanup the thread ends and is waited for:
// a listing of /proc/self/task can skip live threads while others exit,
// so no thread of this test may still be exiting when a later test or
// -count run lists the threads.
func lockedThread(t *testing.T, policy uint32) int {
	t.Helper()
	tids, stop := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // exits with the goroutine: the thread ends
		if policy != unix.SCHED_NORMAL {
			if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy}, 0); err != nil {
				t.Error(err)
			}
		}
		tids <- unix.Gettid()
		<-stop
	}()
	tid := <-tids
	t.Cleanup(func() {
		close(stop)
		if tid == os.Getpid() {
			return // the main thread, which Go parks for good instead
		}
		if err := testenv.WaitFor(fmt.Sprintf("thread %d to end", tid), 10*time.Second, nil, func() bool {
			_, err := unix.SchedGetAttr(tid, 0)
			return errors.Is(err, unix.ESRCH)
		}); err != nil {
			t.Error(err)
		}
	})
	return tid
}

func threadPolicy(t *testing.T, tid int) (policy uint32, nice int32, alive bool) {
	t.Helper()
	a, err := unix.SchedGetAttr(tid, 0)
	if errors.Is(err, unix.ESRCH) {
		return 0, 0, false // the thread exited after /proc/self/task listed it
	}
	if err != nil {
		t.Fatalf("thread %d: %v", tid, err)
	}
	return a.Policy, a.Nice, true
}

// TestBatch: every thread of the process that ran under
// SCHED_NORMAL runs under SCHED_BATCH at nice 12 or its own higher nice, a
// thread started under another policy keeps it, and threads started
// afterwards inherit SCHED_BATCH and nice 12 (above the nice the package's other tests set).
func TestBatch(t *testing.T) {
	idle := lockedThread(t, unix.SCHED_IDLE)
	// niced's policy is set along with its nice: its goroutine may have
	// been given a thread an earlier -count run left under SCHED_BATCH.
	niced := lockedThread(t, unix.SCHED_NORMAL)
	if err := unix.SchedSetAttr(niced, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: 15}, 0); err != nil {
		t.Fatal(err)
	}
	type attr struct {
		policy uint32
		nice   int32
	}
	before := map[int]attr{}
	for _, tid := range tids(t) {
		if p, nice, alive := threadPolicy(t, tid); alive {
			before[tid] = attr{p, nice}
		}
	}
	t.Cleanup(func() {
		for _, tid := range tids(t) {
			setThreadBack(tid)
		}
	})

	if err := Set(true, 12); err != nil {
		t.Fatal(err)
	}
	if b := before[idle]; b.policy != unix.SCHED_IDLE {
		t.Fatalf("thread %d listed as %+v, want SCHED_IDLE", idle, b)
	}
	if b := before[niced]; b.policy != unix.SCHED_NORMAL || b.nice != 15 {
		t.Fatalf("thread %d listed as %+v, want SCHED_NORMAL at nice 15", niced, b)
	}
	// What each thread should run under now: a thread of another policy
	// keeps it and its nice; a SCHED_NORMAL one goes to SCHED_BATCH at nice
	// 12 or its own higher nice (niced's 15; the main thread, which keeps
	// the nice of an earlier -count run's niced that Go parked on it); a
	// thread started after the listing, at 12.
	for _, tid := range tids(t) {
		p, nice, alive := threadPolicy(t, tid)
		if !alive {
			continue
		}
		want, listed := before[tid]
		switch {
		case !listed:
			want = attr{unix.SCHED_BATCH, 12}
		case want.policy == unix.SCHED_NORMAL || want.policy == unix.SCHED_BATCH:
			want = attr{unix.SCHED_BATCH, max(12, want.nice)}
		}
		if got := (attr{p, nice}); got != want {
			t.Errorf("thread %d (listed before: %v, as %+v): %+v after, want %+v", tid, listed, before[tid], got, want)
		}
	}
	for i := range 3 {
		tid := lockedThread(t, unix.SCHED_NORMAL)
		if p, nice, _ := threadPolicy(t, tid); p != unix.SCHED_BATCH || nice != 12 {
			t.Errorf("thread %d started after (%d): policy %d nice %d, want SCHED_BATCH at 12", tid, i, p, nice)
		}
	}
}

// TestNormal: without batch and at nice 0 no thread changes.
func TestNormal(t *testing.T) {
	before := map[int]uint32{}
	for _, tid := range tids(t) {
		if p, _, alive := threadPolicy(t, tid); alive {
			before[tid] = p
		}
	}
	if err := Set(false, 0); err != nil {
		t.Fatal(err)
	}
	for tid, want := range before {
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != want {
			t.Errorf("thread %d: policy %d after normal, was %d", tid, a.Policy, want)
		}
	}
}

func tids(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out
}

// setThreadBack returns a SCHED_BATCH thread to SCHED_NORMAL (the other
// tests of the package run in this process).
func setThreadBack(tid int) {
	if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_BATCH {
		_ = unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: a.Nice}, 0)
	}
}
