package store

import (
	"context"
	"errors"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Sentinel errors. Callers check them with errors.Is; the ingest and query
// edges map them to gRPC codes.
var (
	// ErrInvalidBatch wraps every reason a batch is refused as malformed.
	ErrInvalidBatch = errors.New("invalid batch")
	// ErrClosed is returned by every method once Close has begun.
	ErrClosed = errors.New("store closed")
	// ErrNotFound is answer.ErrNotFound: an unknown job id.
	ErrNotFound = answer.ErrNotFound
	// ErrInvalidQuery is answer.ErrInvalidQuery: it wraps every reason a
	// query is refused (e.g. no app id).
	ErrInvalidQuery = answer.ErrInvalidQuery
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

// BatchAppender stores agents' batches.
type BatchAppender interface {
	// Append stores b once: it returns only after the batch is durable, and
	// a batch whose (node_name, boot_id, seq) is already stored is reported
	// Duplicate and not written again.
	Append(ctx context.Context, b *stratav1.Batch) (AppendResult, error)
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
	answer.TraceReader
	SummaryReader
	JobStore
	answer.UIReader
	Retainer
	Close() error
}
