package main

import (
	"strings"
	"testing"
)

// The table's per-workload interval and its verdict line: a workload whose
// every pair costs 8-10 % lies wholly above 1.05×; one whose pairs straddle
// 1.0 does not.
func TestWriteTableIntervals(t *testing.T) {
	rows := []*row{
		{Workload: "Slow", Without: []float64{10, 10, 10, 10}, With: []float64{10.9, 10.8, 11, 10.9},
			Ratio: 1.09, PairRatios: []float64{1.09, 1.08, 1.10, 1.09}, CPURatio: 1.09, PageWalk: "unavailable: no hardware PMU"},
		{Workload: "Even", Without: []float64{10, 10, 10, 10}, With: []float64{9.8, 10.2, 10.1, 9.9},
			Ratio: 1.0, PairRatios: []float64{0.98, 1.02, 1.01, 0.99}, CPURatio: 1.0, PageWalk: "unavailable: no hardware PMU"},
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
