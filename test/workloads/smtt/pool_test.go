package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two tables of two pairs each pool into one of four: the ratio of medians
// and the pairs' geometric mean are taken over all four pairs, the traced
// run's description is the later table's, and the pooled JSON pools again.
func TestPool(t *testing.T) {
	dir := t.TempDir()
	run := func(without, with float64, records uint64) *row {
		return &row{Workload: "PageRank", Without: []float64{without, without}, With: []float64{with, with},
			PairRatios: []float64{with / without, with / without}, CPUWithout: []float64{2 * without, 2 * without},
			CPUWith: []float64{2 * with, 2 * with}, OutsideWithout: []float64{1, 1}, OutsideWith: []float64{1, 1},
			WorkWithout: []float64{without - 1, without - 1}, WorkWith: []float64{with - 1, with - 1}, Records: records,
			PageWalk: "unavailable: no hardware PMU"}
	}
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	svm := run(10, 10, 3)
	svm.Workload = "SVM"
	writeJSON(t, a, table{Spark: "3.5.9", Size: "small", Storage: "each workload's own", Pairs: 2, Rows: []*row{run(10, 11, 5), svm},
		Strata: "b94ae82", Started: "2026-11-27T20:41:28Z"})
	writeJSON(t, b, table{Spark: "3.5.9", Size: "small", Storage: "each workload's own", Pairs: 2, Rows: []*row{run(20, 21, 7)}})

	var out strings.Builder
	if err := pool([]string{a, b}, config{out: dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// SVM is in one table only.
		"(local[2], size small, storage each workload's own, 2–4 paired runs from 2 tables, medians)",
		"SVM       10.0 s        10.0 s     1.000×",
		// Medians 15 s and 16 s; the pairs 1.1, 1.1, 1.05, 1.05.
		"PageRank  15.0 s        16.0 s     1.067×",
		"1.075× (",
		"all 6 pairs pooled",
		"1.067×        7  ", // CPU overhead, then the later table's records
		"Pooled from:\n  a.json (Strata b94ae82, started 2026-11-27T20:41:28Z)\n  b.json (Strata -, started -)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("pooled table lacks %q:\n%s", want, out.String())
		}
	}

	pooled := filepath.Join(dir, "smtt-3.5.9-pooled.json")
	out.Reset()
	if err := pool([]string{pooled, a}, config{out: t.TempDir()}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "4–6 paired runs from 2 tables, medians") {
		t.Errorf("the pooled table pooled again:\n%s", out.String())
	}
}

func TestPoolRefuses(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	r := &row{Workload: "SVM", Without: []float64{5}, With: []float64{5}, PairRatios: []float64{1}}
	writeJSON(t, ok, table{Spark: "3.5.9", Size: "small", Storage: "each workload's own", Pairs: 1, Rows: []*row{r}})
	other := filepath.Join(dir, "spark4.json")
	writeJSON(t, other, table{Spark: "4.3.0", Size: "small", Storage: "each workload's own", Pairs: 1, Rows: []*row{r}})
	walkOff := filepath.Join(dir, "walk-off.json")
	writeJSON(t, walkOff, table{Spark: "3.5.9", Size: "small", Storage: "each workload's own", HookOptions: "walk=off", Pairs: 1, Rows: []*row{r}})
	short := filepath.Join(dir, "short.json")
	writeJSON(t, short, table{Spark: "3.5.9", Size: "small", Storage: "each workload's own", Pairs: 1,
		Rows: []*row{{Workload: "SVM", Without: []float64{5, 5}, With: []float64{5}, PairRatios: []float64{1}}}})
	truncated := filepath.Join(dir, "truncated.json")
	if err := os.WriteFile(truncated, []byte(`{"spark": "3.5.9", "rows": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{nil, "-pool needs the JSON files"},
		{[]string{ok, other}, "is Spark 4.3.0"},
		{[]string{ok, walkOff}, `hook options "walk=off"`},
		{[]string{ok, short}, "SVM has 1 runs with tracing, 2 without and 1 pair ratios"},
		{[]string{ok, truncated}, "read table " + truncated},
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
	} {
		err := pool(tc.files, config{out: dir}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pool(%v) = %v, want an error with %q", tc.files, err, tc.want)
		}
	}
}
