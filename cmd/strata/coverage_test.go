package main

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// coverageCollector holds the coverage scenario (storetest's coverage.go):
// RDDs held as buffers, column buffers of a cached batch, walked and cut
// walks, and a block never walked, all freed at the session's end.
func coverageCollector(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, storetest.CoverageBatches(), nil).Addr
}

// The report says, per RDD, Spark's bytes and what Strata resolved of
// them in words, in the table and in JSON.
func TestReportCoverage(t *testing.T) {
	addr := coverageCollector(t)
	got := jsonLines[appReport](t, strata(t, "report", "--collector", addr, "--app", storetest.CoverageApp, "-o", "json"))
	if len(got) != 1 || len(got[0].RDDs) != 4 {
		t.Fatalf("report = %+v", got)
	}
	want := []struct {
		rdd                   int32
		spark, bytes, resolve uint64
		words                 string
		parts                 int
	}{
		{2, storetest.CoverRDD2Spark, storetest.CoverRDD2Spark, storetest.CoverRDD2Spark, "buffers 100 %", 1},
		{3, storetest.CoverRDD3Spark, 11264, 11264, "buffers 93.8 %", 1},
		{4, storetest.CoverRDD40Spark + storetest.CoverRDD41Spark, 16400, 16400,
			"walked 49.5 % (1 block); walk cut 28.5 % (1 block)", 2},
		{5, storetest.CoverRDD5Spark, 8192, 0, "references only: walking off", 1},
	}
	for i, w := range want {
		x := got[0].RDDs[i]
		if x.RDD != w.rdd || x.SparkBytes != w.spark || x.Bytes != w.bytes || x.ResolvedBytes != w.resolve || x.Resolved != w.words ||
			len(x.Parts) != w.parts || x.ResolvedShare == nil || *x.ResolvedShare != float64(w.resolve)/float64(w.spark) {
			t.Errorf("RDD %d = %+v, want %+v", x.RDD, x, w)
		}
	}
	walked := got[0].RDDs[2].Parts[0]
	if walked.Resolution != "walked" || walked.Objects != 210 || walked.SharedBytes != 400 || walked.OpaqueObjects != 1 ||
		got[0].RDDs[2].SharedBytes != 400 {
		t.Errorf("RDD 4's walked part %+v", walked)
	}
	if p := got[0].RDDs[3].Parts[0]; p.Resolution != "references" || len(p.Details) != 1 || p.Details[0] != "walking off" {
		t.Errorf("RDD 5's part %+v", p)
	}

	table := strata(t, "report", "--collector", addr, "--app", storetest.CoverageApp)
	lines := map[string]string{}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	for rdd, cells := range map[string][]string{
		"2": {"0.0", "buffers 100 %"}, // Spark's 14,288 bytes: 0.0 MiB
		"3": {"buffers 93.8 %"},
		"4": {"walked 49.5 % (1 block); walk cut 28.5 % (1 block)"},
		"5": {"references only: walking off"},
	} {
		for _, c := range cells {
			if !strings.Contains(lines[rdd], c) {
				t.Errorf("RDD %s's line lacks %q:\n%s", rdd, c, table)
			}
		}
	}
	if !strings.Contains(table, "RESOLVED (OF SPARK'S BYTES)") || !strings.Contains(table, "docs/objectgraph.md") {
		t.Errorf("table without its RESOLVED column or note:\n%s", table)
	}
	svg := filepath.Join(t.TempDir(), "coverage.svg")
	strata(t, "report", "--collector", addr, "--app", storetest.CoverageApp, "--chart", svg)
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"What Strata resolved of Spark", "walked objects", "references only: walking off", "buffers 93.8 %"} {
		if !bytes.Contains(b, []byte(want)) && !bytes.Contains(b, []byte(html.EscapeString(want))) {
			t.Errorf("chart lacks %q", want)
		}
	}
	sum := strata(t, "report", "--collector", addr, "--app", storetest.CoverageApp, "--app", storetest.CoverageApp)
	// 14,288 + 11,264 + 16,400 of 14,288 + 12,000 + 21,000 + 50,000: 43.1 %.
	if !strings.Contains(sum, " 43.1 % ") {
		t.Errorf("summary without the application's resolved share:\n%s", sum)
	}
}

// Records say what each record holds: its resolution, bytes and shared
// bytes, why a block is references only, a column buffer's column.
func TestRecordsCoverage(t *testing.T) {
	addr := coverageCollector(t)
	got := jsonLines[map[string]any](t, strata(t, "records", "--collector", addr, "--app", storetest.CoverageApp, "--block", "rdd_4_0",
		"-o", "json"))
	if len(got) != 7 { // alloc, walk, stale, the walk's two pieces, read, free
		t.Fatalf("%d records of rdd_4_0, want 7", len(got))
	}
	cov, _ := got[1]["coverage"].(map[string]any)
	if cov["resolution"] != "walked" || cov["bytes"] != 10000.0 || cov["objects"] != 200.0 || cov["shared_bytes"] != 400.0 ||
		cov["gc_epoch"] != 1.0 || cov["extents"] != 2.0 || got[1]["spark_bytes"] != 12000.0 || got[1]["object_graph"] != true {
		t.Errorf("the walk's record %v", got[1])
	}
	if _, ok := got[6]["coverage"]; ok {
		t.Errorf("the free carries coverage: %v", got[6])
	}

	table := strata(t, "records", "--collector", addr, "--app", storetest.CoverageApp, "--rdd", "4")
	for _, want := range []string{
		"references  4016   -       walk pending",
		"walked      10000  400     -",
		"walk cut    6000   -       -",
		"references  4016   -       stale: objects moved by GC 2, walk pending",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("records of RDD 4 lack %q:\n%s", want, table)
		}
	}
	cols := strata(t, "records", "--collector", addr, "--app", storetest.CoverageApp, "--rdd", "3", "--access", "alloc")
	lines := strings.Split(strings.TrimSpace(cols), "\n")
	if len(lines) != 3 {
		t.Fatalf("records of RDD 3:\n%s", cols)
	}
	for i, want := range []string{"0 id", "1 name"} {
		if f := strings.Fields(lines[i+1]); len(f) < 8 || f[5] != fmt.Sprintf("%d/2", i) || strings.Join(f[6:8], " ") != want ||
			!strings.Contains(lines[i+1], "buffers") {
			t.Errorf("column buffer %d: %q, want column %q", i, lines[i+1], want)
		}
	}
}

// Trace says, beside each page, what its record holds of the block.
func TestTraceCoverage(t *testing.T) {
	addr := coverageCollector(t)
	table := strata(t, "trace", "--collector", addr, "--app", storetest.CoverageApp, "--rdd", "4", "--partition", "1")
	var holds []string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		_, rest, _ := strings.Cut(l, "rdd_4_1")
		holds = append(holds, strings.TrimSpace(rest[:strings.Index(rest, "  100  ")]))
	}
	want := []string{"references only: walk pending", "walk cut: its objects", "walk cut: its objects",
		"references only: stale: objects moved by GC 3, walk pending"}
	if strings.Join(holds, "|") != strings.Join(want, "|") {
		t.Errorf("HOLDS of rdd_4_1's pages %q, want %q\n%s", holds, want, table)
	}
	pages := jsonLines[map[string]any](t, strata(t, "trace", "--collector", addr, "--app", storetest.CoverageApp, "--rdd", "3", "-o", "json"))
	if len(pages) != 6 {
		t.Fatalf("%d pages of RDD 3", len(pages))
	}
	for i, p := range pages {
		cov, _ := p["coverage"].(map[string]any)
		col, _ := p["column"].(float64)
		if p["cached_batch"] != true || p["chunk"] != col || p["column_name"] != []string{"id", "name"}[int(col)] ||
			cov["resolution"] != "buffers" || p["spark_bytes"] != float64(storetest.CoverRDD3Spark) {
			t.Errorf("page %d of rdd_3_0: %v", i, p)
		}
	}
}
