package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Fault Overhead (cross-layer,
// docs/heuristics.md#fault-and-page-walk-overhead): per traced executor
// process, the share of cycles spent in dTLB page walks (walk_cycles_load +
// walk_cycles_store over cycles) and the major page faults per CPU second
// (task clock). A number is only computed from counters that were
// measured: without a PMU the walk share is reported as not measured,
// never estimated. Workloads with less than min_task_clock_sec of CPU are
// ignored. Severity = the worst workload's; score = severity × workloads at
// SEVERE or above.

// FaultOverheadParams are the parameters of Fault and Page-Walk Overhead.
type FaultOverheadParams struct {
	Common                       `yaml:",inline"`
	WalkCyclesShareSeverity      Thresholds `yaml:"walk_cycles_share_severity" check:"asc" help:"dTLB page-walk cycles / cycles"`
	MajorFaultsPerCPUSecSeverity Thresholds `yaml:"major_faults_per_cpu_sec_severity" check:"asc" help:"major faults per second of task clock"`
	MinTaskClockSec              float64    `yaml:"min_task_clock_sec" help:"workloads with less CPU time are not rated"`
}

var faultOverhead = register(def[FaultOverheadParams]{Key: "fault_overhead", Name: "Fault and Page-Walk Overhead", Order: 304,
	Defaults: FaultOverheadParams{
		WalkCyclesShareSeverity:      Thresholds{0.05, 0.1, 0.2, 0.3},
		MajorFaultsPerCPUSecSeverity: Thresholds{1, 10, 100, 1000},
		MinTaskClockSec:              1,
	},
	BuildTrace: func(p FaultOverheadParams) TraceHeuristic {
		return &FaultOverhead{walk: p.WalkCyclesShareSeverity, major: p.MajorFaultsPerCPUSecSeverity, minClockSec: p.MinTaskClockSec}
	}})

// FaultOverhead is the fault and page-walk overhead heuristic.
type FaultOverhead struct {
	walk, major Thresholds
	minClockSec float64
}

// ApplyTrace implements TraceHeuristic.
func (h *FaultOverhead) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	sev := None
	var looked, bad int
	var d []Detail
	for _, w := range ts.Workloads {
		if w == nil {
			continue
		}
		cpuSec := float64(w.GetTaskClockNs()) / 1e9
		if w.GetTaskClockNs() == 0 || cpuSec < h.minClockSec {
			continue
		}
		looked++
		who := "executor " + w.GetExecutorId() + " (pid " + strconv.FormatUint(uint64(w.GetPid()), 10) + ")"
		perSec := float64(w.GetMajorFaults()) / cpuSec
		s := h.major.Ascending(perSec)
		msg := "major faults/CPU s " + strconv.FormatFloat(perSec, 'f', 2, 64)
		if w.Cycles != nil && w.GetCycles() > 0 && (w.WalkCyclesLoad != nil || w.WalkCyclesStore != nil) {
			share := float64(w.GetWalkCyclesLoad()+w.GetWalkCyclesStore()) / float64(w.GetCycles())
			s = max(s, h.walk.Ascending(share))
			msg += ", page-walk cycles " + strconv.FormatFloat(share*100, 'f', 2, 64) + " %"
		} else {
			status := w.GetPmuStatus()
			if status == "" {
				status = "no walk-cycle counters"
			}
			msg += ", page-walk cycles not measured (" + status + ")"
		}
		sev = max(sev, s)
		if s >= Severe {
			bad++
		}
		d = append(d, detail(who, msg))
	}
	if looked == 0 {
		return skip
	}
	return Result{Severity: sev, Score: Score(sev, bad), Details: d}
}
