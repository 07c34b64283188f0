package jsonform

import (
	"github.com/stratatrace/strata/collector/query"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// RDD is what an application's RDD holds, each block buffer as last
// resolved while it was live: an element of a Report's rdds and of
// /api/v1/apps/{app}/rdds.
type RDD struct {
	RDD        int32  `json:"rdd"`
	Blocks     uint64 `json:"blocks"`
	LiveBlocks uint64 `json:"live_blocks"` // not freed now
	Partitions uint64 `json:"partitions"`
	// Bytes: of the blocks' data as Strata resolved it (buffers, walked
	// objects, arrays of references not walked); SparkBytes: Spark's own
	// size of the blocks (0 unknown); Resolved says what Bytes hold
	// against it (docs/objectgraph.md).
	Bytes         uint64   `json:"bytes"`
	SparkBytes    uint64   `json:"spark_bytes"`
	SizedBlocks   uint64   `json:"sized_blocks"`   // blocks whose Spark size is known
	ResolvedBytes uint64   `json:"resolved_bytes"` // buffers, walked and cut-walk bytes
	SharedBytes   uint64   `json:"shared_bytes"`   // objects another block's walk holds
	ResolvedShare *float64 `json:"resolved_share"` // resolved_bytes / spark_bytes; null unknown
	Resolved      string   `json:"resolved"`       // in words: "walked 97.2 %", "references only: walk pending"
	Parts         []Part   `json:"parts"`
	// ObjectGraph: some blocks are deserialized (arrays of references to
	// objects the JVM hook walks); Parts say how far they were walked.
	ObjectGraph   bool        `json:"object_graph"`
	PageSize      uint32      `json:"page_size"`
	Pages         uint64      `json:"pages"` // of the blocks' ranges, holes excluded
	Present       uint64      `json:"present"`
	Swapped       uint64      `json:"swapped"`
	THP           uint64      `json:"thp"`
	THPShare      float64     `json:"thp_share"` // of present pages
	Nodes         []NodePages `json:"numa"`      // present pages per NUMA node
	Reads         uint64      `json:"reads"`
	Writes        uint64      `json:"writes"`
	Moves         uint64      `json:"moves"` // a GC relocated a block's buffer
	Evicted       uint64      `json:"evicted"`
	Faults        FaultCounts `json:"faults"`
	SampledFaults uint64      `json:"sampled_faults"`
	// FillFaults are the faults of filling the blocks, absent when no put
	// of them was measured.
	FillFaults *FaultCounts `json:"fill_faults,omitempty"`
	// HeatSays and HeatLatest are the RDD's DAMON access heat, in words
	// and as figures (Report.AddHeat); absent from a report made without.
	HeatSays   string       `json:"heat,omitempty"`
	HeatLatest *HeatFigures `json:"heat_latest,omitempty"`
}

// Part is what buffers of one resolution hold (RddReport's and a block's
// parts).
type Part struct {
	Resolution    string   `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Blocks        uint64   `json:"blocks"`
	Buffers       uint64   `json:"buffers"`
	Bytes         uint64   `json:"bytes"`
	Objects       uint64   `json:"objects"`
	SharedObjects uint64   `json:"shared_objects"`
	SharedBytes   uint64   `json:"shared_bytes"`
	OpaqueObjects uint64   `json:"opaque_objects"`
	Details       []string `json:"details"`
}

// NodePages counts present pages on one NUMA node (-1: PFN hidden).
type NodePages struct {
	Node  int32  `json:"node"`
	Pages uint64 `json:"pages"`
}

// newParts is ps's form.
func newParts(ps []*stratav1.ResolvedPart) []Part {
	out := []Part{}
	for _, p := range ps {
		out = append(out, Part{Resolution: Resolution(p.GetResolution()), Blocks: p.GetBlocks(), Buffers: p.GetBuffers(),
			Bytes: p.GetBytes(), Objects: p.GetObjects(), SharedObjects: p.GetSharedObjects(), SharedBytes: p.GetSharedBytes(),
			OpaqueObjects: p.GetOpaqueObjects(), Details: append([]string{}, p.GetDetails()...)})
	}
	return out
}

// resolvedWords says parts in words against sparkBytes when share is
// known (every block's Spark size known), without shares otherwise.
func resolvedWords(parts []*stratav1.ResolvedPart, sparkBytes uint64, share *float64) string {
	if share == nil {
		sparkBytes = 0
	}
	return query.ResolvedWords(parts, sparkBytes)
}

// NewRDD is x's form.
func NewRDD(x *stratav1.RddReport) RDD {
	r := RDD{
		RDD: x.GetRddId(), Blocks: x.GetBlocks(), LiveBlocks: x.GetLiveBlocks(), Partitions: x.GetPartitions(),
		Bytes: x.GetBytes(), SparkBytes: x.GetSparkBytes(), SizedBlocks: x.GetSizedBlocks(), ResolvedBytes: x.GetResolvedBytes(),
		SharedBytes: x.GetSharedBytes(), ResolvedShare: x.ResolvedShare,
		Resolved: resolvedWords(x.GetParts(), x.GetSparkBytes(), x.ResolvedShare), Parts: newParts(x.GetParts()),
		ObjectGraph: x.GetObjectGraph(), PageSize: x.GetPageSize(), Pages: x.GetPages(), Present: x.GetPresent(),
		Swapped: x.GetSwapped(), THP: x.GetThp(), Nodes: []NodePages{}, Reads: x.GetReads(), Writes: x.GetWrites(),
		Moves: x.GetMoves(), Evicted: x.GetEvicted(), Faults: NewFaultCounts(x.GetFaults()), SampledFaults: x.GetSampledFaults(),
		FillFaults: newFill(x.GetFillFaults()),
	}
	if r.Present > 0 {
		r.THPShare = float64(r.THP) / float64(r.Present)
	}
	for _, n := range x.GetNodes() {
		r.Nodes = append(r.Nodes, NodePages{Node: n.GetNumaNode(), Pages: n.GetPages()})
	}
	return r
}

// NewRDDs is rdds' form.
func NewRDDs(rdds []*stratav1.RddReport) []RDD { return List(rdds, NewRDD) }

// Overhead is one process's workload counters with its fault rate and
// page-walk share: a line of `strata overhead -o json` and an element of
// /api/v1/apps/{app}/overhead. The walk shares (percent of cycles) are
// absent unless the PMU measured them; pmu_status then says why.
type Overhead struct {
	ExecutorID      string      `json:"executor_id"`
	PID             uint32      `json:"pid"`
	Start           string      `json:"start"`
	End             string      `json:"end"`
	Seconds         float64     `json:"seconds"`
	TaskClockNs     uint64      `json:"task_clock_ns"`
	ContextSwitches uint64      `json:"context_switches"`
	CPUMigrations   uint64      `json:"cpu_migrations"`
	MinorFaults     uint64      `json:"minor_faults"`
	MajorFaults     uint64      `json:"major_faults"`
	FaultRatePerSec float64     `json:"fault_rate_per_sec"`
	RDDFaults       FaultCounts `json:"rdd_faults"` // inside the process's RDD blocks
	Cycles          *uint64     `json:"cycles,omitempty"`
	Instructions    *uint64     `json:"instructions,omitempty"`
	DTLBMisses      *uint64     `json:"dtlb_misses,omitempty"`
	WalkPct         *float64    `json:"walk_pct,omitempty"`
	WalkPctRead     *float64    `json:"walk_pct_read,omitempty"`
	WalkPctWrite    *float64    `json:"walk_pct_write,omitempty"`
	WalkPctRDD      *float64    `json:"walk_pct_rdd,omitempty"`
	PMUStatus       string      `json:"pmu_status"`
}

// NewOverhead is r's form.
func NewOverhead(r *stratav1.OverheadRow) Overhead {
	w := r.GetCounters()
	return Overhead{
		ExecutorID: w.GetExecutorId(), PID: w.GetPid(), Start: Time(w.GetStartUnixNano()), End: Time(w.GetEndUnixNano()),
		Seconds:     float64(w.GetEndUnixNano()-w.GetStartUnixNano()) / 1e9,
		TaskClockNs: w.GetTaskClockNs(), ContextSwitches: w.GetContextSwitches(), CPUMigrations: w.GetCpuMigrations(),
		MinorFaults: w.GetMinorFaults(), MajorFaults: w.GetMajorFaults(), FaultRatePerSec: r.GetFaultRatePerSec(),
		RDDFaults: NewFaultCounts(r.GetRddFaults()), Cycles: w.Cycles, Instructions: w.Instructions, DTLBMisses: w.DtlbMisses,
		WalkPct: r.WalkPct, WalkPctRead: r.WalkPctRead, WalkPctWrite: r.WalkPctWrite, WalkPctRDD: r.WalkPctRdd,
		PMUStatus: w.GetPmuStatus(),
	}
}

// Report is what `strata report -o json` says of one application, and
// /api/v1/apps/{app}/report: its RDDs, its RDD memory occupation and each
// process's page-walk share.
type Report struct {
	App      string `json:"app"`
	Name     string `json:"name,omitempty"`     // from the collector's job analysis, when it has one
	Severity string `json:"severity,omitempty"` // the analysis's overall severity
	// Occupation is the application's RDD memory occupation: the sum over
	// its executors of each one's peak RDD bytes, over the sum of their
	// peak resident sets and over their nodes' memory (each node once).
	Occupation Occupation `json:"occupation"`
	RDDs       []RDD      `json:"rdds"`
	Executors  []Executor `json:"executors"`
	PageWalk   []PageWalk `json:"page_walk"`
	// HeatColdFor is the cold-for of the RDDs' heat, in seconds, when
	// the report has it (AddHeat).
	HeatColdFor *float64 `json:"heat_cold_for_seconds,omitempty"`
}

// Occupation is an application's RDD memory occupation. OfRSS is absent
// without resident-memory samples, OfNode when a node's memory is
// unknown.
type Occupation struct {
	PeakRDDBytes  uint64   `json:"peak_rdd_bytes"`
	PeakRSSBytes  uint64   `json:"peak_rss_bytes"`
	MemTotalBytes uint64   `json:"mem_total_bytes"`
	OfRSS         *float64 `json:"of_rss,omitempty"`
	OfNode        *float64 `json:"of_node,omitempty"`
}

// Executor is one process's RDD memory occupation at its peak.
type Executor struct {
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

// PageWalk is one process's page-walk share of cycles, when a PMU
// measured it, and always the fault figures beside it.
type PageWalk struct {
	ExecutorID   string   `json:"executor_id"`
	PID          uint32   `json:"pid"`
	PMUStatus    string   `json:"pmu_status"`
	WalkPct      *float64 `json:"walk_pct,omitempty"`
	WalkPctRead  *float64 `json:"walk_pct_read,omitempty"`
	WalkPctWrite *float64 `json:"walk_pct_write,omitempty"`
	WalkPctRDD   *float64 `json:"walk_pct_rdd,omitempty"`
	MinorFaults  uint64   `json:"minor_faults"`
	MajorFaults  uint64   `json:"major_faults"`
	RDDFaults    uint64   `json:"rdd_faults"`    // minor faults inside the process's RDD blocks
	RDDFaultPct  *float64 `json:"rdd_fault_pct"` // of all its faults; null without faults
	FaultsPerSec float64  `json:"faults_per_sec"`
}

// NewReport is the report of app from the query service's Report and
// Overhead answers and, when the collector analysed the application as a
// job, that job (nil: none).
func NewReport(app string, rep *stratav1.ReportResponse, over *stratav1.OverheadResponse, job *stratav1.JobResult) Report {
	r := Report{App: app, RDDs: NewRDDs(rep.GetRdds()), Executors: []Executor{}, PageWalk: []PageWalk{}}
	if job != nil {
		r.Name, r.Severity = job.GetName(), Severity(job.GetSeverity())
	}
	nodes := map[string]uint64{}
	for _, o := range rep.GetOccupation() {
		e := Executor{ExecutorID: o.GetExecutorId(), PID: o.GetPid(), Node: o.GetNodeName(), PeakRDDBytes: o.GetPeakRddBytes(),
			PeakRSSBytes: o.GetPeakRssBytes(), RSSAtPeakBytes: o.GetRssAtPeakBytes(), MemTotalBytes: o.GetMemTotalBytes(),
			OfRSS: o.OfRss, OfNode: o.OfNode, RSSSamples: o.GetRssSamples()}
		if o.GetPeakTimeUnixNano() > 0 {
			e.PeakTime = Time(o.GetPeakTimeUnixNano())
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
	for _, row := range over.GetRows() {
		w, f := row.GetCounters(), row.GetRddFaults()
		pw := PageWalk{ExecutorID: w.GetExecutorId(), PID: w.GetPid(), PMUStatus: w.GetPmuStatus(),
			WalkPct: row.WalkPct, WalkPctRead: row.WalkPctRead, WalkPctWrite: row.WalkPctWrite, WalkPctRDD: row.WalkPctRdd,
			MinorFaults: w.GetMinorFaults(), MajorFaults: w.GetMajorFaults(),
			RDDFaults:    f.GetRead() + f.GetWrite() + f.GetExec() + f.GetUnclassified(),
			FaultsPerSec: row.GetFaultRatePerSec()}
		if all := pw.MinorFaults + pw.MajorFaults; all > 0 {
			v := 100 * float64(min(pw.RDDFaults, all)) / float64(all)
			pw.RDDFaultPct = &v
		}
		r.PageWalk = append(r.PageWalk, pw)
	}
	return r
}

// share is a/b, nil when b is 0.
func share(a, b uint64) *float64 {
	if b == 0 {
		return nil
	}
	v := float64(a) / float64(b)
	return &v
}
