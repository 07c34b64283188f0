package heuristics

import (
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"

	"github.com/stratatrace/strata/collector/job"
)

// TraceSummary is what the collector knows from Strata's own traces about
// one application: enough for the cross-layer heuristics, small enough to
// build by hand in a test. The collector fills it from its store for the
// job's application id; a zero field means "not measured", never "zero
// observed" — each heuristic says which fields it needs and skips itself
// when they are absent.
type TraceSummary struct {
	// AppID is the application the traces belong to; it must equal the
	// job's AppID for the cross-layer heuristics to run.
	AppID string
	// PageSize is the base page size in bytes of the traced machines; 0
	// when unknown (or they differ), and then sizes are shown in pages.
	PageSize int64
	// NUMANodes is the number of NUMA nodes of the traced machines; 0 when
	// unknown (then the nodes seen in RDDs count).
	NUMANodes int
	// RDDs are the cached RDDs seen in the traces.
	RDDs []RDDPages
	// Faults counts page faults in cached blocks by where the page lived
	// relative to the faulting CPU; nil when fault tracing was off.
	Faults *FaultShare
	// Workloads are the perf-stat style counters of the traced executors.
	Workloads []*stratav1.WorkloadCounters
	// Blocks are the cached RDD blocks with how they were used: gets,
	// frees, pages per node, major and sampled faults, DAMON heat (the
	// collector's store.CachedBlocks); nil when not read.
	Blocks []job.CachedBlock
}

// RDDPages describes the pages of one cached RDD at the last observation.
type RDDPages struct {
	RDDID int32
	Name  string // optional, for details
	// PagesByNode counts present base pages per NUMA node (node id → pages).
	PagesByNode map[int32]int64
	// TotalPages is every base page of the RDD's blocks: present, swapped
	// and not yet touched.
	TotalPages int64
	// SwappedPages are base pages swapped out.
	SwappedPages int64
	// THPPages are base pages backed by transparent huge pages.
	THPPages int64
}

// size formats a number of base pages as bytes, or as pages when the page
// size is unknown.
func (ts *TraceSummary) size(pages int64) string {
	if ts.PageSize <= 0 {
		return itoa(pages) + " pages"
	}
	return BytesToString(pages * ts.PageSize)
}

// ResidentPages returns the sum of PagesByNode.
func (r *RDDPages) ResidentPages() int64 {
	var n int64
	for _, p := range r.PagesByNode {
		n += p
	}
	return n
}

// FaultShare counts faults by page locality.
type FaultShare struct {
	Local  uint64 // faults on pages of the faulting CPU's node
	Remote uint64 // faults on pages of another node
}

// TraceHeuristic is a cross-layer heuristic: a pure function of a job and
// Strata's trace summary of the same application.
type TraceHeuristic interface {
	ApplyTrace(*job.Job, *TraceSummary) Result
}
