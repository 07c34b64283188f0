package tracer

import (
	"errors"
	"strings"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
	"golang.org/x/sys/unix"
)

// TestWorkloadCounters counts a child with software events and checks that
// hardware fields stay empty, with a reason, where the PMU is missing.
func TestWorkloadCounters(t *testing.T) {
	testenv.RequireRoot(t)
	pmu, err := DetectPMU("/sys")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this node: pmu_status %q", pmu.Status())
	c := startChild(t, 256)
	w, err := OpenWorkload(c.pid, WorkloadOptions{PMU: pmu})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c.do("loop 4 0 256 w")
	got, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", got)
	if got.MinorFaults < 4*256 || got.TaskClockNs == 0 || got.ContextSwitches == 0 {
		t.Errorf("software counters too small: %+v", got)
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
		wk, _ := SelectWalkEvents(CPUModel{"GenuineIntel", 6, 0x55})
		w2, err := OpenWorkload(c.pid, WorkloadOptions{PMU: fake, Walk: &wk})
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
	w3, err := OpenWorkload(c.pid, WorkloadOptions{PMU: standIn, Walk: walk})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	c.do("loop 2 0 256 w")
	got3, err := w3.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got3.WalkCyclesLoad == nil || got3.WalkCyclesStore == nil {
		t.Fatalf("stand-in walk counters missing: %+v", got3)
	}
	if *got3.WalkCyclesLoad != got3.MinorFaults || *got3.WalkCyclesLoad < 2*256 || *got3.WalkCyclesStore == 0 {
		t.Errorf("stand-in load walks %d, minor faults %d, store walks %d",
			*got3.WalkCyclesLoad, got3.MinorFaults, *got3.WalkCyclesStore)
	}
	c.quit()
	if _, err := OpenWorkload(c.pid, WorkloadOptions{}); err == nil {
		t.Error("workload of an exited process opened")
	}
}

// TestWalkSamplingPlumbing stands a software event (every page fault, with
// its address) in for PEBS/IBS samples: the walk_sample program must count
// exactly the samples whose address lies in a registered block.
func TestWalkSamplingPlumbing(t *testing.T) {
	const R, K = 12, 7
	tr := loadTracer(t, Config{DisableEvents: true, NoMajorFaults: true})
	c := startChild(t, 32)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 9, c.page(0), c.page(16)); err != nil {
		t.Fatal(err)
	}
	err := tr.SampleWalks(SampleEvent{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_PAGE_FAULTS, Period: 1})
	if err != nil {
		t.Fatal(err)
	}
	total0, matched0, err := tr.WalkSampleCounts(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	c.do("w 0 %d", R)
	c.do("w 16 %d", 16+K)
	total, matched, err := tr.WalkSampleCounts(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	blk := counters(t, tr, c.pid, 9)
	if blk.WalkSamples != R || matched-matched0 != R || total-total0 < R+K {
		t.Errorf("block samples %d, matched %d, total %d; want %d, %d, >= %d",
			blk.WalkSamples, matched-matched0, total-total0, R, R, R+K)
	}
	if blk.Write != R {
		t.Errorf("fault counter %d, want %d (sampling must not disturb counting)", blk.Write, R)
	}
	// The hardware events themselves are refused here, and say so.
	pmu, _ := DetectPMU("/sys")
	if !pmu.Available() {
		err := tr.SampleWalks(SampleEvent{Type: unix.PERF_TYPE_RAW, Config: 0x11d0, Period: 1000, Precise: 2})
		if err == nil {
			t.Error("raw PEBS event opened without a PMU")
		} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			t.Logf("raw event without PMU: %v", err)
		}
	}
}
