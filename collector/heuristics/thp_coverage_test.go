package heuristics

import (
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestTHPCoverage(t *testing.T) {
	h := &THPCoverage{share: thpCoverage.of(defaults(t)).THPShareSeverity, minPages: 2048}
	mk := func(resident, thp int64) *TraceSummary {
		return &TraceSummary{RDDs: []RDDPages{{RDDID: 1, PagesByNode: map[int32]int64{0: resident}, TotalPages: resident, THPPages: thp}}}
	}
	for _, tc := range []struct {
		name string
		ts   *TraceSummary
		sev  Severity
		skip bool
	}{
		{"fully covered", mk(10_240, 10_240), None, false},
		{"60 %", mk(10_000, 6_000), None, false},
		{"40 %", mk(10_000, 4_000), Low, false},
		{"20 %", mk(10_000, 2_000), Moderate, false},
		{"none", mk(10_000, 0), Critical, false},
		{"small cache", mk(1_000, 0), None, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, tc.ts)
			if r.Skip != tc.skip || (!tc.skip && r.Severity != tc.sev) {
				t.Fatalf("got %+v, want %v skip %v", r, tc.sev, tc.skip)
			}
		})
	}
}

// The engine runs cross-layer heuristics only for traces of the same
// application.
func TestEngineWithTrace(t *testing.T) {
	e := newTestEngine(t)
	if got := e.Heuristics(""); len(got) != 7 {
		t.Fatalf("cross-layer heuristics %v", got)
	}
	j := sparkJob(nil, nil)
	ts := &TraceSummary{AppID: j.AppID, NUMANodes: 2, Faults: &FaultShare{Local: 1000, Remote: 1000},
		RDDs: []RDDPages{{RDDID: 1, PagesByNode: map[int32]int64{0: 10_000}, TotalPages: 10_000, THPPages: 10_000}}}
	res := e.AnalyzeWithTrace(j, ts)
	names := map[string]stratav1.Severity{}
	for _, h := range res.Heuristics {
		names[h.Name] = h.Severity
	}
	if names["NUMA Balance of Cached RDDs"] != stratav1.Severity_SEVERITY_CRITICAL ||
		names["Remote-Node Faults"] != stratav1.Severity_SEVERITY_CRITICAL {
		t.Fatalf("cross-layer results %v", names)
	}
	if _, ok := names["Fault and Page-Walk Overhead"]; ok {
		t.Fatal("fault overhead reported without workload counters")
	}
	if res.Severity != stratav1.Severity_SEVERITY_CRITICAL {
		t.Fatalf("job severity %v", res.Severity)
	}
	other := *ts
	other.AppID = "application_9_9999"
	if res := e.AnalyzeWithTrace(j, &other); len(res.Heuristics) != 5 {
		t.Fatalf("traces of another app were used: %d results", len(res.Heuristics))
	}
}
