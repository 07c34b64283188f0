package main

import (
	"strings"
	"testing"
)

// The table's per-workload interval and its verdict line: a workload whose
// every pair costs 8-10 % lies wholly above 1.05×; one whose pairs straddle
// 1.0 does not. The FIXED and WORK columns split the cost into time outside
// the work and a ratio on the work.
func TestWriteTableIntervals(t *testing.T) {
	rows := []*row{
		{Workload: "Slow", Without: []float64{10, 10, 10, 10}, With: []float64{10.9, 10.8, 11, 10.9},
			Ratio: 1.09, PairRatios: []float64{1.09, 1.08, 1.10, 1.09}, CPURatio: 1.09, PageWalk: "unavailable: no hardware PMU",
			OutsideWithout: []float64{2, 2.2, 2, 2}, OutsideWith: []float64{2.9, 2.8, 3, 2.9},
			WorkWithout: []float64{8, 8, 8, 8}, WorkWith: []float64{8, 8, 8, 8}},
		{Workload: "Even", Without: []float64{10, 10, 10, 10}, With: []float64{9.8, 10.2, 10.1, 9.9},
			Ratio: 1.0, PairRatios: []float64{0.98, 1.02, 1.01, 0.99}, CPURatio: 1.0, PageWalk: "unavailable: no hardware PMU",
			OutsideWithout: []float64{2, 2, 2, 2}, OutsideWith: []float64{2.1, 2.1, 2.1, 2.1},
			WorkWithout: []float64{8, 8, 8, 8}, WorkWith: []float64{8.16, 8.16, 8.16, 8.16}},
	}
	var b strings.Builder
	writeTable(&b, "3.5.9", config{size: "small", pairs: 4}, rows)
	out := b.String()
	for _, want := range []string{
		"1.090× (1.08–1.10)",
		"1.000× (0.98–1.01)", // bootstrap with a fixed seed: the same pairs, the same interval
		"workloads whose pairs' 95% interval lies wholly above 1.05×: Slow\n",
		"all 8 pairs pooled",
		"median 1.045× across workloads (target ≤ 1.02×), worst 1.090× (target ≤ 1.05×)\n",
		// Slow pays 0.9 s outside its work and nothing on it; Even 0.1 s
		// and 2 % on it.
		"1.090× (1.08–1.10)  +0.90 s  1.000×",
		"0.98–1.01)  +0.10 s  1.020×",
		"what a traced run pays: +0.50 s outside the work (median across workloads) and 1.010× on the work itself (all pairs pooled, 95% interval 1.002×–1.017×)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	rows = rows[1:]
	b.Reset()
	writeTable(&b, "3.5.9", config{size: "small", pairs: 4}, rows)
	if !strings.Contains(b.String(), "lies wholly above 1.05×: none\n") {
		t.Errorf("one even workload:\n%s", b.String())
	}
}
