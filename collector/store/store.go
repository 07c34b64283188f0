package store

import (
	"context"
	"errors"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Sentinel errors. Callers check them with errors.Is; the ingest and query
// edges map them to gRPC codes.
var (
	// ErrInvalidBatch wraps every reason a batch is refused as malformed.
	ErrInvalidBatch = errors.New("invalid batch")
	// ErrClosed is returned by every method once Close has begun.
	ErrClosed = errors.New("store closed")
	// ErrNotFound is returned when a job id is unknown.
	ErrNotFound = errors.New("not found")
	// ErrInvalidQuery wraps every reason a query is refused (e.g. no app id).
	ErrInvalidQuery = errors.New("invalid query")
)

// AppendResult says what Append did with a batch.
type AppendResult struct {
	// Duplicate is true when (node_name, boot_id, seq) was stored before;
	// nothing was written this time.
	Duplicate bool
	// Records is the number of records the batch stored (or stored the first
	// time, for a duplicate).
	Records uint32
}

// TraceQuery selects the pages Trace returns.
type TraceQuery struct {
	AppID     string
	RDD       *int32 // nil = every RDD
	Partition *int32 // nil = every partition
	Limit     uint32 // pages; 0 = no limit
	// At, when not 0, is a moment (unix nanoseconds, see Moment): only
	// the records the blocks live then hold at it, each buffer's latest
	// record that holds by then.
	At int64
}

// BatchAppender stores agents' batches.
type BatchAppender interface {
	// Append stores b once: it returns only after the batch is durable, and
	// a batch whose (node_name, boot_id, seq) is already stored is reported
	// Duplicate and not written again.
	Append(ctx context.Context, b *stratav1.Batch) (AppendResult, error)
}

// RecordsQuery selects the records Records returns.
type RecordsQuery struct {
	AppID     string
	RDD       *int32                // nil = every RDD
	Partition *int32                // nil = every partition
	BlockID   string                // "" = every block
	Access    []stratav1.AccessKind // empty = every kind
	Limit     uint32                // records; 0 = no limit
}

// TraceReader answers the trace questions.
type TraceReader interface {
	// Trace calls fn for each page of each matching record, in time order,
	// runs expanded; it stops at q.Limit pages or at fn's first error.
	Trace(ctx context.Context, q TraceQuery, fn func(*stratav1.TracePage) error) error
	// Records calls fn for each matching record, without pages, in time
	// order; it stops at q.Limit records or at fn's first error.
	Records(ctx context.Context, q RecordsQuery, fn func(*stratav1.RecordRow) error) error
	// Numa counts an app's distinct resident pages per RDD per NUMA node.
	Numa(ctx context.Context, appID string) ([]*stratav1.NumaRow, error)
	// Faults returns an app's page-fault counters per block.
	Faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error)
	// Overhead returns an app's workload counters per (executor, pid).
	Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error)
	// Hot ranks an app's pages by sampled faults.
	Hot(ctx context.Context, q HotQuery) ([]*stratav1.HotPage, error)
	// RDDs summarises an app's cached RDDs, each block buffer as last
	// resolved while it was live (see stratav1.RddReport), ordered by RDD:
	// `strata report` and the web UI's RDD table both show this answer.
	RDDs(ctx context.Context, appID string) ([]*stratav1.RddReport, error)
	// Occupation returns, per process of an app, the peak resident bytes
	// of its cached RDD blocks against its peak resident set (the agent's
	// ProcessMemory samples) and its node's memory (NodeInfo), ordered by
	// (executor, pid); shares are set with SetOccupationShares. The held
	// bytes are counted as UIReader.Occupancy counts them per RDD over
	// time: Occupation is their peak per process.
	Occupation(ctx context.Context, appID string) ([]*stratav1.OccupationRow, error)
	// Heat returns an app's DAMON access heat per RDD: every stored
	// sample of its RDD blocks and the figures heat.go defines.
	Heat(ctx context.Context, q HeatQuery) (*Heat, error)
}

// SummaryReader answers what the cross-layer job heuristics ask of one
// application's traces (collector/server builds their TraceSummary from
// it).
type SummaryReader interface {
	// Cached returns the app's cached pages per RDD per NUMA node.
	Cached(ctx context.Context, appID string) ([]CachedPages, error)
	// FaultNodes counts sampled faults in the app's cached blocks on the
	// faulting CPU's own node (local) and on another (remote).
	FaultNodes(ctx context.Context, appID string) (local, remote uint64, err error)
	// Machines lists the machines holding the app's records, with what
	// their agents reported of them (NodeInfo).
	Machines(ctx context.Context, appID string) ([]Machine, error)
	// Overhead returns the app's workload counters per (executor, pid).
	Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error)
}

// JobStore keeps analysed jobs; the job-history poller writes, queries read.
type JobStore interface {
	// PutJob stores r, replacing an earlier result with the same job id.
	PutJob(ctx context.Context, r *stratav1.JobResult) error
	// HasJob reports whether a result for id is stored.
	HasJob(ctx context.Context, id string) (bool, error)
	// Jobs lists results at or above min, newest finish first; limit 0 = all.
	Jobs(ctx context.Context, min stratav1.Severity, limit uint32) ([]*stratav1.JobResult, error)
	// Job returns one result, or ErrNotFound.
	Job(ctx context.Context, id string) (*stratav1.JobResult, error)
}

// Store is everything the collector keeps and every question it asks of
// it; a backend must satisfy all of it. Close flushes and checkpoints.
type Store interface {
	BatchAppender
	TraceReader
	SummaryReader
	JobStore
	UIReader
	Retainer
	Close() error
}
