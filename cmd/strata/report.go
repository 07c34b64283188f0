package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/query"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "report", summary: "an app's RDDs, their memory occupation and page-walk share (table, JSON, chart)", run: runReport})
}

// appReport is what `strata report` says of one application; one JSON line.
type appReport struct {
	App      string `json:"app"`
	Name     string `json:"name,omitempty"`     // from the collector's job analysis, when it has one
	Severity string `json:"severity,omitempty"` // the analysis's overall severity
	// Occupation is the application's RDD memory occupation: the sum over
	// its executors of each one's peak RDD bytes, over the sum of their
	// peak resident sets and over their nodes' memory (each node once).
	Occupation occupationShare `json:"occupation"`
	RDDs       []rddReport     `json:"rdds"`
	Executors  []execOccupancy `json:"executors"`
	PageWalk   []pageWalk      `json:"page_walk"`
}

type occupationShare struct {
	PeakRDDBytes  uint64   `json:"peak_rdd_bytes"`
	PeakRSSBytes  uint64   `json:"peak_rss_bytes"`
	MemTotalBytes uint64   `json:"mem_total_bytes"`
	OfRSS         *float64 `json:"of_rss,omitempty"`  // absent: no resident-memory samples
	OfNode        *float64 `json:"of_node,omitempty"` // absent: node memory unknown
}

type rddReport struct {
	RDD        int32  `json:"rdd"`
	Blocks     uint64 `json:"blocks"`
	Partitions uint64 `json:"partitions"`
	// Bytes: of the blocks' data as Strata resolved it (buffers, walked
	// objects, arrays of references not walked); SparkBytes: Spark's own
	// size of the blocks (0 unknown); Resolved says what Bytes hold against
	// it (docs/objectgraph.md).
	Bytes         uint64     `json:"bytes"`
	SparkBytes    uint64     `json:"spark_bytes"`
	SizedBlocks   uint64     `json:"sized_blocks"`   // blocks whose Spark size is known
	ResolvedBytes uint64     `json:"resolved_bytes"` // buffers, walked and cut-walk bytes
	SharedBytes   uint64     `json:"shared_bytes"`   // objects another block's walk holds
	ResolvedShare *float64   `json:"resolved_share"` // resolved_bytes / spark_bytes; absent unknown
	Resolved      string     `json:"resolved"`       // in words: "walked 97.2 %", "references only: walk pending"
	Parts         []rddPart  `json:"parts"`
	PageSize      uint32     `json:"page_size"`
	Pages         uint64     `json:"pages"`
	Present       uint64     `json:"present"`
	Swapped       uint64     `json:"swapped"`
	THP           uint64     `json:"thp"`
	THPShare      float64    `json:"thp_share"` // of present pages
	Nodes         []nodePage `json:"numa"`
	Reads         uint64     `json:"reads"`
	Writes        uint64     `json:"writes"`
	Evicted       uint64     `json:"evicted"`
	LiveBlocks    uint64     `json:"live_blocks"` // not freed now
	Moves         uint64     `json:"moves"`       // a GC relocated a block's buffer
	Faults        faultKinds `json:"faults"`
	SampledFaults uint64     `json:"sampled_faults"`
	// ObjectGraph: some blocks are deserialized (arrays of references to
	// objects the JVM hook walks); Parts say how far they were walked.
	ObjectGraph bool `json:"object_graph,omitempty"`
}

// rddPart is what an RDD's buffers of one resolution hold (RddReport's
// parts).
type rddPart struct {
	Resolution    string   `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Blocks        uint64   `json:"blocks"`
	Buffers       uint64   `json:"buffers"`
	Bytes         uint64   `json:"bytes"`
	Objects       uint64   `json:"objects,omitempty"`
	SharedObjects uint64   `json:"shared_objects,omitempty"`
	SharedBytes   uint64   `json:"shared_bytes,omitempty"`
	OpaqueObjects uint64   `json:"opaque_objects,omitempty"`
	Details       []string `json:"details,omitempty"`
}

type nodePage struct {
	Node  int32  `json:"node"` // -1: PFN hidden
	Pages uint64 `json:"pages"`
}

type faultKinds struct {
	Read         uint64 `json:"read"`
	Write        uint64 `json:"write"`
	Exec         uint64 `json:"exec"`
	Major        uint64 `json:"major"`
	Unclassified uint64 `json:"unclassified"`
}

func (f faultKinds) total() uint64 { return f.Read + f.Write + f.Exec + f.Major + f.Unclassified }

type execOccupancy struct {
	ExecutorID     string   `json:"executor_id"`
	PID            uint32   `json:"pid"`
	Node           string   `json:"node"`
	PeakRDDBytes   uint64   `json:"peak_rdd_bytes"`
	PeakTime       string   `json:"peak_time,omitempty"`
	PeakRSSBytes   uint64   `json:"peak_rss_bytes"`
	RSSAtPeakBytes uint64   `json:"rss_at_peak_bytes"`
	MemTotalBytes  uint64   `json:"mem_total_bytes"`
	OfRSS          *float64 `json:"of_rss,omitempty"`
	OfNode         *float64 `json:"of_node,omitempty"`
	RSSSamples     uint32   `json:"rss_samples"`
}

// pageWalk is one executor's page-walk share of cycles, when a PMU
// measured it, and always the fault-based figures beside it.
type pageWalk struct {
	ExecutorID   string   `json:"executor_id"`
	PID          uint32   `json:"pid"`
	PMUStatus    string   `json:"pmu_status"`
	WalkPct      *float64 `json:"walk_pct,omitempty"`
	WalkPctRead  *float64 `json:"walk_pct_read,omitempty"`
	WalkPctWrite *float64 `json:"walk_pct_write,omitempty"`
	WalkPctRDD   *float64 `json:"walk_pct_rdd,omitempty"`
	MinorFaults  uint64   `json:"minor_faults"`
	MajorFaults  uint64   `json:"major_faults"`
	RDDFaults    uint64   `json:"rdd_faults"`    // faults inside the executor's registered blocks
	RDDFaultPct  *float64 `json:"rdd_fault_pct"` // of all its faults; absent without faults
	FaultsPerSec float64  `json:"faults_per_sec"`
}

// appList is the repeatable --app flag.
type appList []string

func (a *appList) String() string     { return strings.Join(*a, ",") }
func (a *appList) Set(v string) error { *a = append(*a, v); return nil }

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata report", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	var apps appList
	var chart, title string
	fs.Var(&apps, "app", "Spark application id (required; repeat for several: one summary row and one chart group each)")
	fs.StringVar(&chart, "chart", "", "also draw a bar chart into this file: .svg or .png")
	fs.StringVar(&title, "title", "", "the chart's title (default: the application, or \"Strata report\")")
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := cf.check(); err != nil {
		return err
	}
	if len(apps) == 0 {
		return errors.New("report: --app is required")
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
	for _, app := range apps {
		r, err := fetchReport(ctx, q, app)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	switch {
	case cf.output == "json":
		out := newOutput(stdout, "json")
		for _, r := range reports {
			if err := out.row(r); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		}
	case len(reports) == 1:
		if err := writeAppReport(stdout, reports[0]); err != nil {
			return err
		}
	default:
		if err := writeSummary(stdout, reports); err != nil {
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

// fetchReport asks the collector everything one application's report shows.
func fetchReport(ctx context.Context, q stratav1.QueryServiceClient, app string) (appReport, error) {
	r := appReport{App: app, RDDs: []rddReport{}, Executors: []execOccupancy{}, PageWalk: []pageWalk{}}
	rep, err := q.Report(ctx, &stratav1.ReportRequest{AppId: app})
	if err != nil {
		return r, rpcError("report "+app, err)
	}
	ov, err := q.Overhead(ctx, &stratav1.OverheadRequest{AppId: app})
	if err != nil {
		return r, rpcError("overhead "+app, err)
	}
	// The job analysis of the same application, when the history poller
	// made one; its absence is no error.
	if j, err := q.Job(ctx, &stratav1.JobRequest{JobId: app}); err == nil {
		r.Name, r.Severity = j.GetName(), severityName(j.GetSeverity())
	} else if status.Code(err) != codes.NotFound {
		return r, rpcError("job "+app, err)
	}
	for _, x := range rep.GetRdds() {
		r.RDDs = append(r.RDDs, newRDDReport(x))
	}
	nodes := map[string]uint64{}
	for _, o := range rep.GetOccupation() {
		e := execOccupancy{
			ExecutorID: o.GetExecutorId(), PID: o.GetPid(), Node: o.GetNodeName(), PeakRDDBytes: o.GetPeakRddBytes(),
			PeakRSSBytes: o.GetPeakRssBytes(), RSSAtPeakBytes: o.GetRssAtPeakBytes(), MemTotalBytes: o.GetMemTotalBytes(),
			OfRSS: o.OfRss, OfNode: o.OfNode, RSSSamples: o.GetRssSamples(),
		}
		if o.GetPeakTimeUnixNano() > 0 {
			e.PeakTime = nsTime(o.GetPeakTimeUnixNano())
		}
		r.Executors = append(r.Executors, e)
		r.Occupation.PeakRDDBytes += e.PeakRDDBytes
		r.Occupation.PeakRSSBytes += e.PeakRSSBytes
		nodes[e.Node] = max(nodes[e.Node], e.MemTotalBytes)
	}
	known := true
	for _, m := range nodes {
		r.Occupation.MemTotalBytes += m
		known = known && m > 0
	}
	r.Occupation.OfRSS = share(r.Occupation.PeakRDDBytes, r.Occupation.PeakRSSBytes)
	if known {
		r.Occupation.OfNode = share(r.Occupation.PeakRDDBytes, r.Occupation.MemTotalBytes)
	}
	for _, row := range ov.GetRows() {
		w, f := row.GetCounters(), row.GetRddFaults()
		pw := pageWalk{
			ExecutorID: w.GetExecutorId(), PID: w.GetPid(), PMUStatus: w.GetPmuStatus(),
			WalkPct: row.WalkPct, WalkPctRead: row.WalkPctRead, WalkPctWrite: row.WalkPctWrite, WalkPctRDD: row.WalkPctRdd,
			MinorFaults: w.GetMinorFaults(), MajorFaults: w.GetMajorFaults(),
			RDDFaults:    f.GetRead() + f.GetWrite() + f.GetExec() + f.GetUnclassified(),
			FaultsPerSec: row.GetFaultRatePerSec(),
		}
		if all := pw.MinorFaults + pw.MajorFaults; all > 0 {
			v := 100 * float64(min(pw.RDDFaults, all)) / float64(all)
			pw.RDDFaultPct = &v
		}
		r.PageWalk = append(r.PageWalk, pw)
	}
	return r, nil
}

func newRDDReport(x *stratav1.RddReport) rddReport {
	f := x.GetFaults()
	r := rddReport{
		RDD: x.GetRddId(), Blocks: x.GetBlocks(), Partitions: x.GetPartitions(), Bytes: x.GetBytes(),
		Pages: x.GetPages(), Present: x.GetPresent(), Swapped: x.GetSwapped(), THP: x.GetThp(),
		Reads: x.GetReads(), Writes: x.GetWrites(), Evicted: x.GetEvicted(), SampledFaults: x.GetSampledFaults(),
		LiveBlocks: x.GetLiveBlocks(), Moves: x.GetMoves(),
		Faults:      faultKinds{f.GetRead(), f.GetWrite(), f.GetExec(), f.GetMajor(), f.GetUnclassified()},
		ObjectGraph: x.GetObjectGraph(), Nodes: []nodePage{},
		SparkBytes: x.GetSparkBytes(), SizedBlocks: x.GetSizedBlocks(), ResolvedBytes: x.GetResolvedBytes(),
		SharedBytes: x.GetSharedBytes(), ResolvedShare: x.ResolvedShare, Parts: []rddPart{}, PageSize: x.GetPageSize(),
	}
	spark := uint64(0) // shares only when every block's Spark size is known
	if x.ResolvedShare != nil {
		spark = x.GetSparkBytes()
	}
	r.Resolved = query.ResolvedWords(x.GetParts(), spark)
	for _, p := range x.GetParts() {
		r.Parts = append(r.Parts, rddPart{Resolution: enumName(p.GetResolution().String(), "RESOLUTION_"), Blocks: p.GetBlocks(),
			Buffers: p.GetBuffers(), Bytes: p.GetBytes(), Objects: p.GetObjects(), SharedObjects: p.GetSharedObjects(),
			SharedBytes: p.GetSharedBytes(), OpaqueObjects: p.GetOpaqueObjects(), Details: p.GetDetails()})
	}
	if r.Present > 0 {
		r.THPShare = float64(r.THP) / float64(r.Present)
	}
	for _, n := range x.GetNodes() {
		r.Nodes = append(r.Nodes, nodePage{n.GetNumaNode(), n.GetPages()})
	}
	return r
}

// share is a/b, absent when b is 0.
func share(a, b uint64) *float64 {
	if b == 0 {
		return nil
	}
	v := float64(a) / float64(b)
	return &v
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
			measured = append(measured, fmt.Sprintf("executor %s: %s", w.ExecutorID,
				walkCell(overheadRow{WalkPct: w.WalkPct, WalkPctRead: w.WalkPctRead, WalkPctWrite: w.WalkPctWrite, WalkPctRDD: w.WalkPctRDD})))
		}
	}
	if len(measured) > 0 {
		return strings.Join(measured, "; ")
	}
	for _, w := range pws {
		return walkCell(overheadRow{PMUStatus: w.PMUStatus})
	}
	return "unavailable: no workload counters (the agent's probes were not loaded)"
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

func writeAppReport(w io.Writer, r appReport) error {
	head := "application " + r.App
	if r.Name != "" {
		head += fmt.Sprintf(" (%s; job analysis: %s)", r.Name, r.Severity)
	}
	fmt.Fprintln(w, head)
	fmt.Fprintf(w, "RDD memory occupation: %s of executors' peak resident memory, %s of node memory (peak RDD %s MiB, peak RSS %s MiB, node %s MiB)\n",
		pct(r.Occupation.OfRSS, "unknown (no resident-memory samples)"), pct(r.Occupation.OfNode, "unknown"),
		mib(r.Occupation.PeakRDDBytes), mib(r.Occupation.PeakRSSBytes), mib(r.Occupation.MemTotalBytes))
	fmt.Fprintf(w, "page-walk share of cycles: %s\n\n", walkSummary(r.PageWalk))
	out := newOutput(w, "table", "RDD", "BLOCKS", "PARTS", "SPARK MiB", "MiB", "PAGES", "PRESENT", "SWAPPED", "THP", "NUMA", "READS",
		"WRITES", "EVICTED", "FAULTS R/W/X/MAJ", "SAMPLED", "RESOLVED (OF SPARK'S BYTES)")
	for _, x := range r.RDDs {
		spark := "-"
		if x.SizedBlocks > 0 {
			spark = mib(x.SparkBytes)
		}
		if err := out.row(nil, x.RDD, x.Blocks, x.Partitions, spark, mib(x.Bytes), x.Pages, x.Present, x.Swapped,
			fmt.Sprintf("%.0f%%", 100*x.THPShare), numaCell(x.Nodes), x.Reads, x.Writes, x.Evicted,
			fmt.Sprintf("%d/%d/%d/%d", x.Faults.Read, x.Faults.Write, x.Faults.Exec, x.Faults.Major), x.SampledFaults,
			x.Resolved); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, resolvedNote)
	fmt.Fprintln(w)
	out = newOutput(w, "table", "EXECUTOR", "PID", "NODE", "PEAK RDD MiB", "AT", "PEAK RSS MiB", "RSS AT PEAK MiB", "OF RSS", "OF NODE")
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
	out = newOutput(w, "table", "EXECUTOR", "PID", "PAGE WALK", "FAULTS", "IN RDD BLOCKS", "FAULTS/S")
	for _, p := range r.PageWalk {
		cell := walkCell(overheadRow{WalkPct: p.WalkPct, WalkPctRead: p.WalkPctRead, WalkPctWrite: p.WalkPctWrite,
			WalkPctRDD: p.WalkPctRDD, PMUStatus: p.PMUStatus})
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
walked, and why). See docs/objectgraph.md.`

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeSummary writes one row per application.
func writeSummary(w io.Writer, rs []appReport) error {
	out := newOutput(w, "table", "APP", "NAME", "RDDS", "BLOCKS", "MiB", "RESOLVED", "PRESENT", "SWAPPED", "THP", "NUMA NODES", "READS",
		"WRITES", "RDD FAULTS R/W", "OF RSS", "OF NODE", "PAGE WALK")
	for _, r := range rs {
		t := totals(r)
		resolved := "-"
		if t.sized {
			resolved = query.ShareWords(t.resolved, t.spark)
		}
		if err := out.row(nil, r.App, orDash(r.Name), len(r.RDDs), t.blocks, mib(t.bytes), resolved, t.present, t.swapped,
			fmt.Sprintf("%.0f%%", 100*t.thpShare()), t.nodes, t.reads, t.writes, fmt.Sprintf("%d/%d", t.faults.Read, t.faults.Write),
			pct(r.Occupation.OfRSS, "unknown"), pct(r.Occupation.OfNode, "unknown"), walkSummary(r.PageWalk)); err != nil {
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

// nsTime formats a time in nanoseconds since the epoch, UTC, to the
// millisecond.
func nsTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
