package answer

import (
	"context"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// JobOrder is the order SearchJobs lists jobs in.
type JobOrder int

const (
	// JobsNewest: latest finish first, then job id.
	JobsNewest JobOrder = iota
	// JobsWorst: highest severity first, then highest score, then latest
	// finish, then job id.
	JobsWorst
)

// JobQuery selects, orders and pages the analysed jobs. Empty strings and
// zero times match everything.
type JobQuery struct {
	MinSeverity stratav1.Severity
	User        string // exact
	Queue       string // exact
	Type        string // JobResult.type: "mapreduce" or "spark"
	AppID       string // exact
	// FinishedFrom and FinishedTo bound the finish time, unix ms,
	// [from, to); 0 leaves that side open.
	FinishedFrom, FinishedTo int64
	Order                    JobOrder
	Offset                   uint32
	Limit                    uint32 // 0 = every job from Offset on
}

// JobPage is one page of SearchJobs: the jobs and how many match in all.
type JobPage struct {
	Jobs  []*stratav1.JobResult
	Total uint64
}

// SeverityBucket counts the jobs that finished in [StartMs, StartMs +
// bucket) by severity; Counts is indexed by the Severity number.
type SeverityBucket struct {
	StartMs int64
	Counts  [5]uint64
}

// AppSummary is one application holding records.
type AppSummary struct {
	AppID     string
	Machines  []string // node_name of every machine holding its records, sorted
	Executors uint32
	Records   uint64
	FirstNs   int64 // time of its first and last record
	LastNs    int64
	// LiveBlocks counts its cached RDD blocks live now, as RDDs counts
	// them per RDD.
	LiveBlocks uint64
	// Name is its latest analysed job's name (the event log's or the job
	// history's application name); "" when no analysed job names it.
	Name string
}

// OccupancyPoint is the resident memory of one RDD at the end of one time
// bucket: the present pages of its cached blocks, each buffer as its latest
// record that holds (the store's holdsSQL) up to then resolved it (nothing once
// freed), counted as Occupation counts them per process.
type OccupancyPoint struct {
	RDDID  int32
	TimeNs int64 // end of the bucket
	Pages  uint64
	Bytes  uint64
}

// PhysMapQuery asks for the physical memory map of one application on one
// machine, bucketed over a window of page frame numbers.
type PhysMapQuery struct {
	AppID   string
	Machine string // node_name; "" = the app's first machine
	// From and To bound the window [From, To) in PFNs; To 0 = the whole
	// machine (see PhysMap.Limit).
	From, To uint64
	// Buckets is at most how many buckets the window is cut into (1..4096);
	// 0 = 1024. A bucket is never narrower than one page.
	Buckets uint32
	// At is the moment whose live blocks the map shows, unix nanoseconds
	// (see Moment); 0 = now.
	At int64
}

// PhysMap is the physical memory map of PhysMapQuery: the pages the app's
// blocks live at its moment hold (each buffer as its latest record that
// holds by then saw it: a walked block's objects, not a STALE mark's
// array), by PFN.
type PhysMap struct {
	Machine  string   `json:"machine"`
	Machines []string `json:"machines"` // every machine holding the app's records
	PageSize uint32   `json:"page_size"`
	// Limit is the end of the machine's physical address space as far as
	// Strata knows it, in PFNs: past the highest PFN seen and past
	// MemTotal / page size.
	Limit uint64 `json:"limit"`
	// The window and the pages one bucket covers.
	From        uint64 `json:"from"`
	To          uint64 `json:"to"`
	BucketPages uint64 `json:"bucket_pages"`
	// Nodes: each NUMA node's lowest and highest PFN among the app's
	// pages, over the whole machine (the spans the pages show, not the
	// node's full range, which the agent does not report).
	Nodes []NodeSpan `json:"nodes"`
	// Buckets holds the non-empty buckets of the window, in PFN order.
	Buckets []PFNBucket `json:"buckets"`
	// RDDs lists the pages of each RDD on the machine: Present (with a
	// PFN, on the map) and Swapped (no frame, so not on the map).
	RDDs []RDDPages `json:"rdds"`
	// Pages and Runs count what was read to draw the map: present pages
	// with a PFN and stored runs. Hidden counts present pages whose PFN
	// the agent could not read (no CAP_SYS_ADMIN): they are not on the map.
	Pages  uint64 `json:"pages"`
	Runs   uint64 `json:"runs"`
	Hidden uint64 `json:"hidden"`
}

// NodeSpan is the PFN span of one NUMA node's pages.
type NodeSpan struct {
	Node     int32  `json:"node"`
	FirstPFN uint64 `json:"first_pfn"`
	LastPFN  uint64 `json:"last_pfn"`
	Pages    uint64 `json:"pages"`
}

// RDDPages counts pages of one RDD (-1: blocks that are not RDD blocks).
type RDDPages struct {
	RDDID   int32  `json:"rdd"`
	Present uint64 `json:"present"`
	Swapped uint64 `json:"swapped"`
}

// PFNBucket is one bucket of the map: [Start, End) in PFNs.
type PFNBucket struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
	// RDDs holds the bucket's pages per RDD, most pages first (ties: lower
	// RDD id first).
	RDDs []RDDCount `json:"rdds"`
	// THP counts the pages backed by a transparent huge page; Hot the
	// sampled page faults that landed on the bucket's pages.
	THP uint64 `json:"thp"`
	Hot uint64 `json:"hot"`
	// Nodes is the bitmask of NUMA nodes 0..62 of the bucket's pages (bit
	// 63: unknown node).
	Nodes uint64 `json:"nodes"`
	// Block names the bucket's block when exactly one block holds its
	// pages.
	Block *BlockRef `json:"block"`
	// Heat is the accesses per second per GiB of the DAMON samples of the
	// bucket's blocks (each block's latest at the map's moment, weighted
	// by its pages in the bucket); absent when none of them has a sample
	// that says it (no sample, a partial one, no rate).
	Heat *float64 `json:"heat,omitempty"`
}

// RDDCount is a page count of one RDD.
type RDDCount struct {
	RDDID int32  `json:"rdd"`
	Pages uint64 `json:"pages"`
}

// BlockRef names one Spark block.
type BlockRef struct {
	ExecutorID string `json:"executor_id"`
	BlockID    string `json:"block_id"`
	RDDID      int32  `json:"rdd"`
}

// UIReader answers what the web UI asks beyond the query service:
// searching and counting jobs, the applications, their RDDs' memory over
// time, and the physical memory map. The UI's RDD table is TraceReader.RDDs,
// the same answer `strata report` prints.
type UIReader interface {
	// SearchJobs returns the page of jobs q selects, and the total.
	SearchJobs(ctx context.Context, q JobQuery) (JobPage, error)
	// JobTimeline counts the jobs q selects (its order and paging are
	// ignored) by severity per bucketMs of finish time, oldest first;
	// buckets without a job are left out.
	JobTimeline(ctx context.Context, q JobQuery, bucketMs int64) ([]SeverityBucket, error)
	// Apps lists the applications holding records, latest record first.
	Apps(ctx context.Context) ([]AppSummary, error)
	// Occupancy returns each RDD's resident memory at the end of each of
	// up to buckets equal time buckets between the app's first and last
	// lifecycle record, oldest first; a bucket in which nothing changed is
	// left out (the value holds from the bucket before).
	Occupancy(ctx context.Context, appID string, buckets uint32) ([]OccupancyPoint, error)
	// PhysMap returns the app's physical memory map on one machine.
	PhysMap(ctx context.Context, q PhysMapQuery) (*PhysMap, error)
	// Blocks returns the Spark blocks of one RDD of an app and what Strata
	// resolved of each (BlockCoverage), ordered by partition, executor
	// and block.
	Blocks(ctx context.Context, appID string, rdd int32) ([]BlockCoverage, error)
	// BlocksAt is Blocks at one moment (unix nanoseconds, see Moment):
	// the blocks live then, each buffer as its latest record that holds
	// by then resolved it.
	BlocksAt(ctx context.Context, appID string, rdd int32, at int64) ([]BlockCoverage, error)
	// NumaAt is TraceReader.Numa at one moment (unix nanoseconds, see
	// Moment): the pages of the blocks live then.
	NumaAt(ctx context.Context, appID string, at int64) ([]*stratav1.NumaRow, error)
	// Moment resolves a moment of an application's life: the one asked
	// for, or its default (its peak once it has ended, else now), with
	// what its cached RDD blocks held then and at their peak.
	Moment(ctx context.Context, q MomentQuery) (Moment, error)
}
