package heuristics

import "testing"

func TestNUMABalance(t *testing.T) {
	h := &NUMABalance{imbalance: numaBalance.of(defaults(t)).ImbalanceSeverity, minPages: 100}
	rdd := func(id int32, nodes ...int64) RDDPages {
		r := RDDPages{RDDID: id, PagesByNode: map[int32]int64{}}
		for i, p := range nodes {
			r.PagesByNode[int32(i)] = p
			r.TotalPages += p
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		ts    TraceSummary
		sev   Severity
		score int64
		skip  bool
	}{
		{"even", TraceSummary{NUMANodes: 2, RDDs: []RDDPages{rdd(1, 500, 500)}}, None, 0, false},
		{"all on one of two", TraceSummary{NUMANodes: 2, RDDs: []RDDPages{rdd(1, 1000, 0)}}, Critical, 4, false},
		{"60/40", TraceSummary{NUMANodes: 2, RDDs: []RDDPages{rdd(1, 600, 400)}}, None, 0, false},
		{"75/25", TraceSummary{NUMANodes: 2, RDDs: []RDDPages{rdd(1, 750, 250)}}, Moderate, 2, false},
		{"worst RDD wins", TraceSummary{NUMANodes: 4, RDDs: []RDDPages{rdd(1, 100, 100, 100, 100), rdd(2, 700, 100, 100, 100)}}, Critical, 4, false},
		{"small RDD ignored", TraceSummary{NUMANodes: 2, RDDs: []RDDPages{rdd(1, 50, 0)}}, None, 0, true},
		{"single node", TraceSummary{NUMANodes: 1, RDDs: []RDDPages{rdd(1, 1000)}}, None, 0, true},
		{"nodes from data", TraceSummary{RDDs: []RDDPages{rdd(1, 1000, 0)}}, Critical, 4, false},
		{"nothing cached", TraceSummary{NUMANodes: 2}, None, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, &tc.ts)
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != tc.score)) {
				t.Fatalf("got %+v, want %v score %d skip %v", r, tc.sev, tc.score, tc.skip)
			}
		})
	}
}
