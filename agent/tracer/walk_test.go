package tracer

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
	"golang.org/x/sys/unix"
)

// TestWalkSamplingPlumbing stands a software event (every page fault, with
// its address) in for PEBS/IBS samples: the walk_sample program must count
// exactly the samples whose address lies in a registered block.
func TestWalkSamplingPlumbing(t *testing.T) {
	const R, K = 12, 7
	exits := make(chan ExitReport, 1)
	tr := loadTracer(t, Config{DisableEvents: true, NoMajorFaults: true, OnExit: func(r ExitReport) { exits <- r }})
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
	// The hardware events themselves are refused where no core PMU is
	// listed (this VM), and say so.
	srcs, _ := procmem.Default().EventSources()
	if !slices.ContainsFunc(srcs, func(s procmem.EventSource) bool { return s.Name == "cpu" || s.Name == "cpu_core" }) {
		err := tr.SampleWalks(SampleEvent{Type: unix.PERF_TYPE_RAW, Config: 0x11d0, Period: 1000, Precise: 2})
		if err == nil {
			t.Error("raw PEBS event opened without a PMU")
		} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			t.Logf("raw event without PMU: %v", err)
		}
	}
	// The exit report keeps the process's samples: the tracer forgets them
	// with the process.
	c.quit()
	select {
	case rep := <-exits:
		if rep.TGID != c.pid || rep.WalkSamplesMatched != matched || rep.WalkSamples < total {
			t.Errorf("exit report: pid %d, %d of %d samples matched; want pid %d, %d of >= %d",
				rep.TGID, rep.WalkSamplesMatched, rep.WalkSamples, c.pid, matched, total)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit report")
	}
}
