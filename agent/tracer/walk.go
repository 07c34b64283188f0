package tracer

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SampleEvent is a sampling perf event whose samples carry a data address:
// PEBS MEM_INST_RETIRED.STLB_MISS_* (Type = the core PMU's type, Precise 2),
// AMD ibs_op, or in tests a software event standing in for them.
type SampleEvent struct {
	Type    uint32
	Config  uint64
	Period  uint64 // one sample every Period events
	Precise uint8  // perf_event_attr.precise_ip
}

// SampleWalks opens ev on every CPU for all processes and runs the
// walk_sample program on each sample: samples of traced processes are
// counted per process (WalkSampleCounts) and per block
// (Counters.WalkSamples). perf_event_open's error is returned wrapped, so
// the caller can report why sampling is unavailable (ENOENT without a PMU).
func (t *Tracer) SampleWalks(ev SampleEvent) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("sample walks: %w", ErrClosed)
	}
	if t.walk == nil {
		prog, err := t.loadProgram(strataProgWalkSample)
		if err != nil {
			return fmt.Errorf("sample walks: %w", err)
		}
		t.walk = prog
	}
	attr := unix.PerfEventAttr{
		Type:        ev.Type,
		Config:      ev.Config,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample:      max(ev.Period, 1),
		Sample_type: unix.PERF_SAMPLE_ADDR,
		Bits:        uint64(ev.Precise&3) << 15, // precise_ip is bits 15-16
	}
	if err := t.attachPerCPU(t.walk, &attr, "walk-sample event"); err != nil {
		return fmt.Errorf("sample walks: %w", err)
	}
	return nil
}
