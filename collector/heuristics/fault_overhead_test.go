package heuristics

import (
	"strings"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestFaultOverhead(t *testing.T) {
	c := faultOverhead.of(defaults(t))
	h := &FaultOverhead{walk: c.WalkCyclesShareSeverity, major: c.MajorFaultsPerCPUSecSeverity, minClockSec: c.MinTaskClockSec}
	u := func(v uint64) *uint64 { return &v }
	const sec = uint64(1e9)
	pmu := func(cycles, walkLoad, walkStore uint64) *stratav1.WorkloadCounters {
		return &stratav1.WorkloadCounters{ExecutorId: "1", Pid: 42, TaskClockNs: 10 * sec,
			Cycles: u(cycles), WalkCyclesLoad: u(walkLoad), WalkCyclesStore: u(walkStore), PmuStatus: "available"}
	}
	noPMU := &stratav1.WorkloadCounters{ExecutorId: "2", Pid: 43, TaskClockNs: 10 * sec, MajorFaults: 50,
		PmuStatus: "unavailable: no PMU in this VM"}
	for _, tc := range []struct {
		name  string
		w     []*stratav1.WorkloadCounters
		sev   Severity
		score int64
		skip  bool
	}{
		{"walks 2 %", []*stratav1.WorkloadCounters{pmu(1000, 10, 10)}, None, 0, false},
		{"walks 12 %", []*stratav1.WorkloadCounters{pmu(1000, 100, 20)}, Moderate, 0, false},
		{"walks 35 %", []*stratav1.WorkloadCounters{pmu(1000, 300, 50)}, Critical, 4, false},
		{"no PMU: faults only", []*stratav1.WorkloadCounters{noPMU}, Low, 0, false},
		{"worst workload", []*stratav1.WorkloadCounters{noPMU, pmu(1000, 300, 50)}, Critical, 4, false},
		{"too little CPU", []*stratav1.WorkloadCounters{{TaskClockNs: sec / 10, MajorFaults: 1e6}}, None, 0, true},
		{"no workloads", nil, None, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, &TraceSummary{Workloads: tc.w})
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != tc.score)) {
				t.Fatalf("got %+v, want %v score %d skip %v", r, tc.sev, tc.score, tc.skip)
			}
		})
	}
	r := h.ApplyTrace(nil, &TraceSummary{Workloads: []*stratav1.WorkloadCounters{noPMU}})
	if len(r.Details) != 1 || !strings.Contains(r.Details[0].Value, "not measured (unavailable: no PMU in this VM)") {
		t.Errorf("unmeasured walk cycles must be reported as such: %v", r.Details)
	}
}
