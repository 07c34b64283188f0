package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

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

// The cache under pressure: pages faulted back into cached blocks (their
// major faults) count with the swapped ones.
func TestCachedSwapRefaults(t *testing.T) {
	h := &CachedSwap{share: cachedSwap.of(defaults(t)).SwappedShareSeverity, minPages: 256}
	ts := &TraceSummary{PageSize: 4096, RDDs: []RDDPages{{RDDID: 3, TotalPages: 10_000, SwappedPages: 10}, {RDDID: 4, TotalPages: 10_000}},
		Blocks: []job.CachedBlock{{RDD: 3, MajorFaults: 90}, {RDD: 4, MajorFaults: 100}, {RDD: 4, MajorFaults: 800}}}
	r := h.ApplyTrace(nil, ts)
	// (10 + 90 + 900) / 20 000 = 5 %: severe, two RDDs under pressure.
	if r.Severity != Severe || r.Score != 6 {
		t.Fatalf("got %v score %d: %+v", r.Severity, r.Score, r.Details)
	}
	wantDetails(t, r, map[string]string{
		"Swapped and faulted-back share of cached pages": "0.0500",
		"Faulted back in (major faults)":                 "3.87 MB",
		"rdd 4":                                          "0 of 10000 pages swapped, 900 faulted back in",
	})
	// Refaults beyond every page: the share is at most 1.
	ts.Blocks[2].MajorFaults = 1 << 40
	if r := h.ApplyTrace(nil, ts); r.Severity != Critical {
		t.Errorf("all pages pressured: %v", r.Severity)
	}
}
