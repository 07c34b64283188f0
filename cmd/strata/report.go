package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "report", args: "--app ID [--app ID...] [--cold-for DURATION] [--chart FILE] [--title TITLE] [flags]",
		summary: "an app's RDDs, their memory occupation, page-walk share and access heat (table, JSON, chart)", run: runReport,
		help: `Per application: each cached RDD's blocks, bytes, pages (present, swapped, THP, per NUMA node),
accesses, faults, DAMON access heat and how much of Spark's size Strata resolved; the executors'
peak RDD memory against their resident memory; the page-walk share of cycles; and the job analysis
when the collector analysed the application. Several --app print one summary row each.

example:
  strata report --app application_1700000000000_0001 --chart report.svg`})
}

// The report's objects are jsonform's: `strata report -o json` prints a
// jsonform.Report per application, as /api/v1/apps/{app}/report answers.
type (
	appReport  = jsonform.Report
	rddReport  = jsonform.RDD
	pageWalk   = jsonform.PageWalk
	nodePage   = jsonform.NodePages
	faultKinds = jsonform.FaultCounts
)

// appList is the repeatable --app flag.
type appList []string

func (a *appList) String() string     { return strings.Join(*a, ",") }
func (a *appList) Set(v string) error { *a = append(*a, v); return nil }

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata report", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	var apps appList
	var chart, title string
	fs.Var(&apps, "app", "Spark application `ID` (required; repeat for several: one summary row and one chart group each)")
	fs.StringVar(&chart, "chart", "", "also draw a bar chart into `FILE`: .svg or .png")
	fs.StringVar(&title, "title", "", "the chart's `TITLE` (default: the application, or \"Strata report\")")
	coldFor := query.DefaultColdFor
	fs.DurationVar(&coldFor, "cold-for", coldFor, coldForUsage)
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	if len(apps) == 0 {
		return badUsage("report", "--app is required")
	}
	if coldFor < 0 {
		return badUsage("report", "--cold-for %v: want 0 or more", coldFor)
	}
	if chart != "" {
		if err := checkChartPath(chart); err != nil {
			return err
		}
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	var reports []appReport
	var heats []*answer.Heat
	for _, app := range apps {
		r, err := fetchReport(ctx, q, app)
		if err != nil {
			return err
		}
		h, err := fetchHeat(ctx, q, app, coldFor)
		if err != nil {
			return err
		}
		r.AddHeat(h)
		reports, heats = append(reports, r), append(heats, h)
	}
	switch {
	case cf.output.json():
		out := newOutput(stdout, jsonRows())
		for _, r := range reports {
			if err := out.row(r); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		}
	case len(reports) == 1:
		if err := writeAppReport(stdout, cf.output, reports[0]); err != nil {
			return err
		}
	default:
		if err := writeSummary(stdout, cf.output, reports, heats); err != nil {
			return err
		}
	}
	if chart != "" {
		if err := drawReportChart(chart, title, reports); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "chart written to %s\n", chart)
	}
	return nil
}

// fetchReport asks the collector everything one application's report
// shows: its report and overhead and, when the history poller analysed
// the application as a job, that job (its absence is no error). An
// application the collector holds no traces of is reported by its job
// alone, and is an error without one.
func fetchReport(ctx context.Context, q stratav1.QueryServiceClient, app string) (appReport, error) {
	rep, err := q.Report(ctx, &stratav1.ReportRequest{AppId: app})
	traced := status.Code(err) != codes.NotFound
	if err != nil && traced {
		return appReport{}, appError("report", app, err)
	}
	var ov *stratav1.OverheadResponse
	if traced {
		if ov, err = q.Overhead(ctx, &stratav1.OverheadRequest{AppId: app}); err != nil {
			return appReport{}, appError("report", app, err)
		}
	}
	j, jerr := q.Job(ctx, &stratav1.JobRequest{JobId: app})
	switch {
	case status.Code(jerr) == codes.NotFound && !traced:
		return appReport{}, appError("report", app, err)
	case status.Code(jerr) == codes.NotFound:
		j = nil
	case jerr != nil:
		return appReport{}, rpcError("job "+app, jerr)
	}
	return jsonform.NewReport(app, rep, ov, j), nil
}

// fetchHeat asks the collector an application's DAMON access heat per RDD
// with pages counted cold after coldFor; an application known only as an
// analysed job (no traces) has none.
func fetchHeat(ctx context.Context, q stratav1.QueryServiceClient, app string, coldFor time.Duration) (*answer.Heat, error) {
	secs := coldFor.Seconds()
	resp, err := q.Heat(ctx, &stratav1.HeatRequest{AppId: app, ColdForSeconds: &secs})
	if status.Code(err) == codes.NotFound {
		return &answer.Heat{ColdFor: coldFor}, nil
	}
	if err != nil {
		return nil, rpcError("heat "+app, err)
	}
	return query.HeatFromProto(resp), nil
}

// appHeat says an application's heat over each of its RDD blocks' latest
// sample, in the words of the RDD table's HEAT column.
func appHeat(h *answer.Heat) string {
	var latest []*stratav1.HeatSample
	for _, r := range h.RDDs {
		for _, b := range r.Blocks {
			latest = append(latest, b.Latest())
		}
	}
	return jsonform.HeatWords(answer.HeatFiguresOf(latest, h.ColdFor), h.ColdFor)
}

// pct formats a share as a percentage, or what makes it unknown.
func pct(v *float64, unknown string) string {
	if v == nil {
		return unknown
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

// mib formats bytes in MiB.
func mib(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// numaCell is "node:pages ..." ascending, "-" when nothing is present.
func numaCell(ns []nodePage) string {
	if len(ns) == 0 {
		return "-"
	}
	parts := make([]string, len(ns))
	for i, n := range ns {
		node := fmt.Sprint(n.Node)
		if n.Node < 0 {
			node = "?"
		}
		parts[i] = fmt.Sprintf("%s:%d", node, n.Pages)
	}
	return strings.Join(parts, " ")
}

// walkSummary says the application's page-walk share, or why it has none.
// Executors that measured it are listed; otherwise the first status.
func walkSummary(pws []pageWalk) string {
	var measured []string
	for _, w := range pws {
		if w.WalkPct != nil {
			measured = append(measured, fmt.Sprintf("executor %s: %s", w.ExecutorID, walkCell(walkSharesOf(w))))
		}
	}
	if len(measured) > 0 {
		return strings.Join(measured, "; ")
	}
	for _, w := range pws {
		return walkCell(walkShares{PMUStatus: w.PMUStatus})
	}
	return "unavailable: no workload counters (the agent's probes were not loaded)"
}

// walkSharesOf is a process's walk shares and PMU status in the report.
func walkSharesOf(p pageWalk) walkShares {
	return walkShares{p.WalkPct, p.WalkPctRead, p.WalkPctWrite, p.WalkPctRDD, p.PMUStatus}
}

// appWalkPct is the application's page-walk share split read/write: the
// executors' shares weighted by nothing but presence (their mean), nil
// when none measured it.
func appWalkPct(pws []pageWalk) (read, write *float64) {
	var r, w float64
	n := 0
	for _, p := range pws {
		if p.WalkPctRead != nil && p.WalkPctWrite != nil {
			r += *p.WalkPctRead
			w += *p.WalkPctWrite
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	r, w = r/float64(n), w/float64(n)
	return &r, &w
}

// writeAppReport writes one application's report in tables of format f.
func writeAppReport(w io.Writer, f outputFormat, r appReport) error {
	head := "application " + r.App
	if r.Name != "" {
		head += fmt.Sprintf(" (%s; job analysis: %s)", r.Name, r.Severity)
	}
	fmt.Fprintln(w, head)
	fmt.Fprintf(w, "RDD memory occupation: %s of executors' peak resident memory, %s of node memory (peak RDD %s MiB, peak RSS %s MiB, node %s MiB)\n",
		pct(r.Occupation.OfRSS, "unknown (no resident-memory samples)"), pct(r.Occupation.OfNode, "unknown"),
		mib(r.Occupation.PeakRDDBytes), mib(r.Occupation.PeakRSSBytes), mib(r.Occupation.MemTotalBytes))
	fmt.Fprintf(w, "page-walk share of cycles: %s\n\n", walkSummary(r.PageWalk))
	// FILL R/W/MAJ when a put of any block was measured, as in strata
	// faults: "-" for an RDD none of whose puts was.
	fills := slices.ContainsFunc(r.RDDs, func(x rddReport) bool { return x.FillFaults != nil })
	header := []string{"RDD", "BLOCKS", "PARTS", "SPARK MiB", "MiB", "PAGES", "PRESENT", "SWAPPED", "THP", "NUMA", "READS",
		"WRITES", "EVICTED", "FAULTS R/W/X/MAJ"}
	if fills {
		header = append(header, "FILL R/W/MAJ")
	}
	out := newOutput(w, f, append(header, "SAMPLED", "HEAT", "RESOLVED (OF SPARK'S BYTES)")...)
	for _, x := range r.RDDs {
		spark := "-"
		if x.SizedBlocks > 0 {
			spark = mib(x.SparkBytes)
		}
		cells := []any{x.RDD, x.Blocks, x.Partitions, spark, mib(x.Bytes), x.Pages, x.Present, x.Swapped,
			fmt.Sprintf("%.0f%%", 100*x.THPShare), numaCell(x.Nodes), x.Reads, x.Writes, x.Evicted,
			fmt.Sprintf("%d/%d/%d/%d", x.Faults.Read, x.Faults.Write, x.Faults.Exec, x.Faults.Major)}
		if fills {
			cells = append(cells, fillCell(x.FillFaults))
		}
		if err := out.row(nil, append(cells, x.SampledFaults, x.HeatSays, x.Resolved)...); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	f.comment(w, resolvedNote)
	if fills {
		f.comment(w, fillNote)
	}
	fmt.Fprintln(w)
	out = newOutput(w, f, "EXECUTOR", "PID", "NODE", "PEAK RDD MiB", "AT", "PEAK RSS MiB", "RSS AT PEAK MiB", "OF RSS", "OF NODE")
	for _, e := range r.Executors {
		if err := out.row(nil, e.ExecutorID, e.PID, e.Node, mib(e.PeakRDDBytes), orDash(e.PeakTime), mib(e.PeakRSSBytes),
			mib(e.RSSAtPeakBytes), pct(e.OfRSS, "unknown"), pct(e.OfNode, "unknown")); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	out = newOutput(w, f, "EXECUTOR", "PID", "PAGE WALK", "FAULTS", "IN RDD BLOCKS", "FAULTS/S")
	for _, p := range r.PageWalk {
		cell := walkCell(walkSharesOf(p))
		in := fmt.Sprint(p.RDDFaults)
		if p.RDDFaultPct != nil {
			in += fmt.Sprintf(" (%.1f%%)", *p.RDDFaultPct)
		}
		if err := out.row(nil, p.ExecutorID, p.PID, cell, p.MinorFaults+p.MajorFaults, in, fmt.Sprintf("%.1f", p.FaultsPerSec)); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return out.flush()
}

// resolvedNote says, under the RDD table, what its last columns mean.
const resolvedNote = `MiB: the blocks' data as Strata resolved it, each buffer as last resolved while live.
RESOLVED: how, as a share of Spark's own size of the blocks: buffers (serialized bytes, column buffers,
primitive arrays), walked (every object a deserialized block reaches), walk cut (the objects a walk counted
before its budget ran out), references only (a deserialized block's array of references: its objects not
walked, and why). See docs/objectgraph.md.
HEAT: DAMON's access heat over each block's latest sample: accesses per second per GiB and the share of
monitored pages cold for at least --cold-for, or why there is none. See docs/damon.md.`

// fillNote says, under the RDD table, what FILL R/W/MAJ means.
const fillNote = `FILL R/W/MAJ: the page faults the putting threads took while Spark filled the RDD's blocks (read, write,
major); - when no put of its blocks was measured. strata faults has them per block.`

// fillCell is an RDD's fill faults "read/write/major", "-" when none of
// its puts was measured.
func fillCell(f *faultKinds) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d/%d", f.Read, f.Write, f.Major)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeSummary writes one row per application in a table of format f;
// heats are theirs.
func writeSummary(w io.Writer, f outputFormat, rs []appReport, heats []*answer.Heat) error {
	out := newOutput(w, f, "APP", "NAME", "RDDS", "BLOCKS", "MiB", "RESOLVED", "PRESENT", "SWAPPED", "THP", "NUMA NODES", "READS",
		"WRITES", "RDD FAULTS R/W", "OF RSS", "OF NODE", "PAGE WALK", "HEAT")
	for i, r := range rs {
		t := totals(r)
		resolved := "-"
		if t.sized {
			resolved = query.ShareWords(t.resolved, t.spark)
		}
		if err := out.row(nil, r.App, orDash(r.Name), len(r.RDDs), t.blocks, mib(t.bytes), resolved, t.present, t.swapped,
			fmt.Sprintf("%.0f%%", 100*t.thpShare()), t.nodes, t.reads, t.writes, fmt.Sprintf("%d/%d", t.faults.Read, t.faults.Write),
			pct(r.Occupation.OfRSS, "unknown"), pct(r.Occupation.OfNode, "unknown"), walkSummary(r.PageWalk), appHeat(heats[i])); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return out.flush()
}

// appTotals sums an application's RDDs.
type appTotals struct {
	blocks, bytes, present, swapped, thp, reads, writes uint64
	resolved, spark                                     uint64
	sized                                               bool // every RDD's resolved share is known
	nodes                                               int
	faults                                              faultKinds
}

func (t appTotals) thpShare() float64 {
	if t.present == 0 {
		return 0
	}
	return float64(t.thp) / float64(t.present)
}

func totals(r appReport) appTotals {
	t := appTotals{sized: len(r.RDDs) > 0}
	nodes := map[int32]bool{}
	for _, x := range r.RDDs {
		t.resolved += x.ResolvedBytes
		t.spark += x.SparkBytes
		t.sized = t.sized && x.ResolvedShare != nil
		t.blocks += x.Blocks
		t.bytes += x.Bytes
		t.present += x.Present
		t.swapped += x.Swapped
		t.thp += x.THP
		t.reads += x.Reads
		t.writes += x.Writes
		t.faults.Read += x.Faults.Read
		t.faults.Write += x.Faults.Write
		t.faults.Exec += x.Faults.Exec
		t.faults.Major += x.Faults.Major
		t.faults.Unclassified += x.Faults.Unclassified
		for _, n := range x.Nodes {
			if n.Node >= 0 {
				nodes[n.Node] = true
			}
		}
	}
	t.nodes = len(nodes)
	return t
}

// sortedRDDs is r's RDDs by bytes, largest first (for charts).
func sortedRDDs(r appReport) []rddReport {
	out := append([]rddReport(nil), r.RDDs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}
