package tracer_test

import (
	"fmt"
	"log/slog"

	"github.com/stratatrace/strata/agent/tracer"
)

// The annotator's side: one Tracer per agent, blocks registered as the JVM
// hook reports them, counters read per block, sampled events drained.
func Example() {
	t, err := tracer.Load(tracer.Config{
		Logger: slog.Default(),
		OnExit: func(r tracer.ExitReport) { fmt.Println("exited", r.TGID, len(r.Blocks)) },
	})
	if err != nil {
		fmt.Println(err) // tracer.ErrUnsupported, or the verifier's log in the error chain
		return
	}
	defer t.Close()
	const pid, block = 4242, 7
	if err := t.Track(pid); err != nil {
		return
	}
	_ = t.RegisterBlock(pid, block, 0x7f0000000000, 0x7f0000800000)
	go func() {
		for ev := range t.Events() {
			_ = ev // ev.Kind, ev.Addr, ev.BlockID -> a FAULT record
		}
	}()
	c, _ := t.BlockCounters(pid, block) // -> FaultCounts{read, write, exec, major}
	fmt.Println(c.Read, c.Write, c.Exec, c.Major)
}

// Per-workload counters and the page-walk figure's availability.
func ExampleOpenWorkload() {
	pmu, _ := tracer.DetectPMU("/sys")
	opts := tracer.WorkloadOptions{PMU: pmu}
	if m, err := tracer.ReadCPUModel("/proc"); err == nil {
		if wk, err := tracer.SelectWalkEvents(m); err == nil {
			opts.Walk = &wk
		}
	}
	w, err := tracer.OpenWorkload(4242, opts)
	if err != nil {
		return
	}
	defer w.Close()
	c, _ := w.Read()
	// c.Cycles == nil and c.PMUStatus == "unavailable: no hardware PMU" on a
	// VM without a PMU: report the reason, never a percentage.
	fmt.Println(c.MinorFaults, c.PMUStatus)
}
