package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// reportCollector holds the report scenario (storetest.App, analysed as a
// job named "LogisticRegression") and the storetest sample renamed to app
// "app-pmu", whose second executor measured page walks.
func reportCollector(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, reportBatches(), []*stratav1.JobResult{reportJob()}).Addr
}

// reportBatches are the report scenario and the storetest sample as app
// "app-pmu".
func reportBatches() []*stratav1.Batch {
	sample := storetest.Sample(10)
	for _, r := range sample.Records {
		r.Block.AppId = "app-pmu"
	}
	for _, w := range sample.Workloads {
		w.AppId = "app-pmu"
	}
	return append(storetest.ReportBatches(), sample)
}

// reportJob is the analysis of the report scenario's application.
func reportJob() *stratav1.JobResult {
	return &stratav1.JobResult{JobId: storetest.App, AppId: storetest.App, Type: "spark", Name: "LogisticRegression",
		Severity: stratav1.Severity_SEVERITY_MODERATE, FinishUnixMs: 9000}
}

func TestReport(t *testing.T) {
	addr := reportCollector(t)
	got := jsonLines[appReport](t, strata(t, "report", "--collector", addr, "--app", storetest.App, "-o", "json"))
	if len(got) != 1 {
		t.Fatalf("report: %d objects", len(got))
	}
	r := got[0]
	if r.App != storetest.App || r.Name != "LogisticRegression" || r.Severity != "moderate" || len(r.RDDs) != 2 {
		t.Fatalf("report = %+v", r)
	}
	x := r.RDDs[0]
	if x.RDD != 7 || x.Blocks != 2 || x.Bytes != 9*storetest.PageSize || x.Present != 6 || x.THP != 2 || x.THPShare != 2.0/6 ||
		len(x.Nodes) != 2 || x.Nodes[1] != (nodePage{Node: 1, Pages: 2}) || x.Reads != 2 || x.Writes != 3 || x.Evicted != 1 ||
		x.Faults != (faultKinds{Read: 6, Write: 7}) || x.SampledFaults != 1 || x.ObjectGraph || x.Moves != 1 || x.LiveBlocks != 0 {
		t.Errorf("RDD 7 = %+v", x)
	}
	if !r.RDDs[1].ObjectGraph {
		t.Errorf("RDD 9 = %+v: deserialized", r.RDDs[1])
	}
	// One executor with RDD blocks (peak 9 pages of a 120 KiB peak RSS),
	// the driver with samples only; the node counted once.
	o := r.Occupation
	if o.PeakRDDBytes != 9*storetest.PageSize || o.PeakRSSBytes != 120<<10+2<<20 || o.MemTotalBytes != storetest.ReportMemTotal ||
		o.OfRSS == nil || *o.OfRSS != float64(9*storetest.PageSize)/float64(120<<10+2<<20) || o.OfNode == nil {
		t.Errorf("occupation = %+v", o)
	}
	if len(r.Executors) != 2 || r.Executors[0].PeakTime != "2023-11-14T22:13:25Z" || r.Executors[0].RSSAtPeakBytes != 80<<10 {
		t.Errorf("executors = %+v", r.Executors)
	}
	if len(r.PageWalk) != 0 {
		t.Errorf("page walk rows without workload counters: %+v", r.PageWalk)
	}

	table := strata(t, "report", "--collector", addr, "--app", storetest.App)
	for _, want := range []string{"(LogisticRegression; job analysis: moderate)", "0:4 1:2", "6/7/0/0",
		"not reported by the agent", "page-walk share of cycles: unavailable: no workload counters", "30.0%"} {
		if !strings.Contains(table, want) {
			t.Errorf("report table lacks %q:\n%s", want, table)
		}
	}

	// Several apps: one row each; the PMU app's walk share beside the
	// other's unavailability.
	pmu := jsonLines[appReport](t, strata(t, "report", "--collector", addr, "--app", "app-pmu", "-o", "json"))[0]
	if len(pmu.PageWalk) != 2 || pmu.PageWalk[0].WalkPct != nil || pmu.PageWalk[0].PMUStatus != "unavailable: no hardware PMU" ||
		pmu.PageWalk[1].WalkPct == nil || *pmu.PageWalk[1].WalkPct != 7.5 || pmu.PageWalk[0].RDDFaultPct == nil {
		t.Errorf("page walk of app-pmu = %+v", pmu.PageWalk)
	}
	sum := strata(t, "report", "--collector", addr, "--app", storetest.App, "--app", "app-pmu")
	if strings.Count(sum, "\n") != 3 || !strings.Contains(sum, "executor 2: 7.50% (read 5.00%, write 2.50%, rdd 1.00%)") {
		t.Errorf("summary:\n%s", sum)
	}
}

// The chart is a real SVG or PNG holding the figures' labels.
func TestReportChart(t *testing.T) {
	addr := reportCollector(t)
	dir := t.TempDir()
	svg := filepath.Join(dir, "one.svg")
	strata(t, "report", "--collector", addr, "--app", storetest.App, "--chart", svg)
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "RDD 7", "RDD 9", "Page-walk share of cycles: unavailable", "RDD memory occupation", "LogisticRegression"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("chart lacks %q", want)
		}
	}
	two := filepath.Join(dir, "two.svg")
	strata(t, "report", "--collector", addr, "--app", storetest.App, "--app", "app-pmu", "--chart", two, "--title", "SMTT")
	if b, err = os.ReadFile(two); err != nil || !bytes.Contains(b, []byte("app-pmu")) || !bytes.Contains(b, []byte("SMTT")) ||
		!bytes.Contains(b, []byte("dTLB load walks")) {
		t.Errorf("comparison chart: %v", err)
	}
	png := filepath.Join(dir, "one.png")
	strata(t, "report", "--collector", addr, "--app", storetest.App, "--chart", png)
	if b, err = os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("png chart: %v (%d bytes)", err, len(b))
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"report", "--collector", addr, "--app", "x", "--chart", "c.pdf"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "want a .svg or .png") {
		t.Errorf("pdf chart: %v", err)
	}
}

// heatCollector is a collector that ingested storetest.HeatBatches over
// gRPC, as an agent sends them: RDD 7 from an own kdamond (rdd_7_3 and
// rdd_7_1), RDD 8 from a shared one's scheme.
func heatCollector(t *testing.T) string {
	t.Helper()
	c := servertest.Start(t, nil, nil)
	stream, err := stratav1.NewIngestServiceClient(c.Dial(t)).Push(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// application_0_0: records without heat samples.
	other := storetest.Sample(1 << 20)
	for _, r := range other.GetRecords() {
		r.GetBlock().AppId = "application_0_0"
	}
	for _, b := range append(storetest.HeatBatches(), other) {
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
		if ack, err := stream.Recv(); err != nil || ack.GetSeq() != b.GetSeq() || ack.GetDuplicate() {
			t.Fatalf("push batch %d: %v, %v", b.GetSeq(), ack, err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return c.Addr
}

// The report's HEAT column says each RDD's heat over its blocks' latest
// samples, cold for --cold-for, and "unavailable" for an app without
// samples; the summary of several apps says each app's.
func TestReportHeat(t *testing.T) {
	addr := heatCollector(t)
	app := storetest.App
	shared := strings.Replace(storetest.HeatShared, "shared: ", "shared ", 1)
	// RDD 7: rdd_7_3's latest (2 GiB at 1.25, 1 GiB cold for 70 s) and
	// rdd_7_1 (3 GiB at 4): (2×1.25 + 3×4) / 5 = 2.9 acc/s/GiB, 1 of 5 GiB
	// cold for at least a minute.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"2.9 acc/s/GiB, 20.0% cold >= 1m0s", "partial: " + shared + ": 0.0% cold >= 1m0s", "HEAT: DAMON's"}},
		{[]string{"--cold-for", "75s"}, []string{"2.9 acc/s/GiB, 0.0% cold >= 1m15s"}},
		{[]string{"--cold-for", "0s"}, []string{"partial: " + shared + ": 100.0% cold >= 0s"}},
	} {
		table := strata(t, append([]string{"report", "--collector", addr, "--app", app}, tc.args...)...)
		for _, w := range tc.want {
			if !strings.Contains(table, w) {
				t.Errorf("report %v lacks %q:\n%s", tc.args, w, table)
			}
		}
	}
	// -o json: each RDD's words and figures, and the cold-for.
	rep := jsonLines[appReport](t, strata(t, "report", "--collector", addr, "--app", app, "--cold-for", "75s", "-o", "json"))[0]
	if rep.HeatColdFor == nil || *rep.HeatColdFor != 75 || len(rep.RDDs) != 2 {
		t.Fatalf("report -o json: cold-for %v, %d RDDs", rep.HeatColdFor, len(rep.RDDs))
	}
	if x := rep.RDDs[0]; x.RDD != 7 || x.HeatSays != "2.9 acc/s/GiB, 0.0% cold >= 1m15s" || x.HeatLatest == nil ||
		x.HeatLatest.AccessesPerSecGiB == nil || *x.HeatLatest.AccessesPerSecGiB != 2.9 || x.HeatLatest.MonitoredBytes != 5<<30 {
		t.Errorf("RDD 7 heat = %q %+v", x.HeatSays, x.HeatLatest)
	}
	none := strata(t, "report", "--collector", reportCollector(t), "--app", "app-pmu")
	if !strings.Contains(none, jsonform.NoHeat) {
		t.Errorf("report of an app without heat samples lacks %q:\n%s", jsonform.NoHeat, none)
	}
	// Both apps' RDD blocks: rdd_7_3, rdd_7_1 and the partial rdd_8_0.
	sum := strata(t, "report", "--collector", addr, "--app", app, "--app", "application_0_0")
	if !strings.Contains(sum, "partial: ") || !strings.Contains(sum, jsonform.NoHeat) {
		t.Errorf("summary lacks the apps' heat:\n%s", sum)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"report", "--collector", addr, "--app", app, "--cold-for", "-1s"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "want 0 or more") {
		t.Errorf("negative --cold-for: %v", err)
	}
}

// TestReportFillFaults: the RDD table has FILL R/W/MAJ when a put of any
// block was measured — an RDD's puts summed, "-" for an RDD none of whose
// puts was — and -o json the same as fill_faults; without fills there is
// no such column.
func TestReportFillFaults(t *testing.T) {
	addr := servertest.Start(t, append(reportBatches(), storetest.FillBatch(990)), []*stratav1.JobResult{reportJob()}).Addr
	r := jsonLines[appReport](t, strata(t, "report", "--collector", addr, "--app", storetest.App, "-o", "json"))[0]
	fill := map[int32]*faultKinds{}
	for _, x := range r.RDDs {
		fill[x.RDD] = x.FillFaults
	}
	want := storetest.FillRDD7()
	if f := fill[7]; f == nil || f.Read != want.Read || f.Write != want.Write || f.Major != want.Major || fill[9] != nil {
		t.Fatalf("fill faults: RDD 7 %+v, RDD 9 %+v; want %v and none", fill[7], fill[9], want)
	}
	table := strata(t, "report", "--collector", addr, "--app", storetest.App)
	lines := strings.Split(table, "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "RDD  BLOCKS") })
	col := strings.Index(lines[max(header, 0)], "FILL R/W/MAJ")
	if header < 0 || col < 0 || !strings.Contains(table, "\nFILL R/W/MAJ: ") {
		t.Fatalf("no FILL R/W/MAJ column or note:\n%s", table)
	}
	cells := map[string]string{}
	for _, l := range lines[header+1:] {
		f := strings.Fields(l)
		if len(f) == 0 || !unicode.IsDigit(rune(l[0])) {
			break // the rows end where the notes begin
		}
		if len(l) > col {
			if g := strings.Fields(l[col:]); len(g) > 0 {
				cells[f[0]] = g[0]
			}
		}
	}
	if cells["7"] != "1/266/2" || cells["9"] != "-" {
		t.Errorf("FILL R/W/MAJ: RDD 7 %q, RDD 9 %q; want 1/266/2 and -:\n%s", cells["7"], cells["9"], table)
	}
	if without := strata(t, "report", "--collector", reportCollector(t), "--app", storetest.App); strings.Contains(without, "FILL") {
		t.Errorf("a report without fills has a FILL column:\n%s", without)
	}
}
