package heuristics

import "testing"

func TestCachedSwap(t *testing.T) {
	h := &CachedSwap{share: cachedSwap.of(defaults(t)).SwappedShareSeverity, minPages: 256}
	mk := func(total, swapped int64) *TraceSummary {
		return &TraceSummary{RDDs: []RDDPages{{RDDID: 3, TotalPages: total, SwappedPages: swapped}}}
	}
	for _, tc := range []struct {
		name  string
		ts    *TraceSummary
		sev   Severity
		score int64
		skip  bool
	}{
		{"none swapped", mk(10_000, 0), None, 0, false},
		{"0.1 %", mk(10_000, 10), Low, 0, false},
		{"2 %", mk(10_000, 200), Moderate, 2, false},
		{"20 %", mk(10_000, 2_000), Critical, 4, false},
		{"too small", mk(100, 100), None, 0, true},
		{"no RDDs", &TraceSummary{}, None, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, tc.ts)
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != tc.score)) {
				t.Fatalf("got %+v, want %v score %d skip %v", r, tc.sev, tc.score, tc.skip)
			}
		})
	}
	ts := mk(10_000, 2_000)
	if v, _ := findDetail(h.ApplyTrace(nil, ts), "Swapped cached data"); v != "2000 pages" {
		t.Errorf("swapped data detail %q with the page size unknown, want pages", v)
	}
	ts.PageSize = 4096
	if v, _ := findDetail(h.ApplyTrace(nil, ts), "Swapped cached data"); v != "7.81 MB" {
		t.Errorf("swapped data detail %q with 4 KiB pages", v)
	}
}
