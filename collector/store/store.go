package store

import (
	"context"
	"errors"
	"fmt"

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
}

// BatchAppender stores agents' batches.
type BatchAppender interface {
	// Append stores b once: it returns only after the batch is durable, and
	// a batch whose (node_name, boot_id, seq) is already stored is reported
	// Duplicate and not written again.
	Append(ctx context.Context, b *stratav1.Batch) (AppendResult, error)
}

// TraceReader answers the trace questions.
type TraceReader interface {
	// Trace calls fn for each page of each matching record, in time order,
	// runs expanded; it stops at q.Limit pages or at fn's first error.
	Trace(ctx context.Context, q TraceQuery, fn func(*stratav1.TracePage) error) error
	// Numa counts an app's distinct resident pages per RDD per NUMA node.
	Numa(ctx context.Context, appID string) ([]*stratav1.NumaRow, error)
	// Faults returns an app's page-fault counters per block.
	Faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error)
	// Overhead returns an app's workload counters per (executor, pid).
	Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error)
	// Hot ranks an app's pages by sampled faults.
	Hot(ctx context.Context, q HotQuery) ([]*stratav1.HotPage, error)
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
	Close() error
}

// maxNUMANodes is Linux's largest node count (CONFIG_NODES_SHIFT at most
// 10); a NodeInfo claiming more is corrupt.
const maxNUMANodes = 1 << 10

// ValidateBatch reports why b cannot be stored, wrapped in ErrInvalidBatch,
// or nil. It checks what the store relies on: the batch key, a block with an
// app id on every record and workload, a sane NodeInfo, and runs that
// expand to sane pages (at most stratav1.MaxRunPages each, the limit the
// agent cuts runs to).
func ValidateBatch(b *stratav1.Batch) error {
	if b == nil {
		return fmt.Errorf("%w: nil batch", ErrInvalidBatch)
	}
	if b.GetNodeName() == "" {
		return fmt.Errorf("%w: missing node_name (seq %d)", ErrInvalidBatch, b.GetSeq())
	}
	if b.GetBootId() == "" {
		return fmt.Errorf("%w: missing boot_id (node %q seq %d)", ErrInvalidBatch, b.GetNodeName(), b.GetSeq())
	}
	for i, r := range b.GetRecords() {
		if r.GetBlock().GetAppId() == "" {
			return fmt.Errorf("%w: record %d: missing block app_id", ErrInvalidBatch, i)
		}
		if len(r.GetRuns()) > 0 && r.GetPageSize() == 0 {
			return fmt.Errorf("%w: record %d: runs without page_size", ErrInvalidBatch, i)
		}
		if ps := r.GetPageSize(); ps&(ps-1) != 0 {
			return fmt.Errorf("%w: record %d: page_size %d is not a power of two", ErrInvalidBatch, i, ps)
		}
		for j, run := range r.GetRuns() {
			if run.GetCount() == 0 || run.GetCount() > stratav1.MaxRunPages {
				return fmt.Errorf("%w: record %d run %d: count %d outside 1..%d", ErrInvalidBatch, i, j, run.GetCount(), stratav1.MaxRunPages)
			}
			end := run.GetVaddr() + uint64(run.GetCount())*uint64(r.GetPageSize())
			if end < run.GetVaddr() {
				return fmt.Errorf("%w: record %d run %d: range wraps the address space", ErrInvalidBatch, i, j)
			}
		}
	}
	if n := b.GetNode(); n != nil {
		if ps := n.GetPageSize(); ps&(ps-1) != 0 {
			return fmt.Errorf("%w: node info: page_size %d is not a power of two", ErrInvalidBatch, ps)
		}
		if n.GetNumaNodes() > maxNUMANodes {
			return fmt.Errorf("%w: node info: %d NUMA nodes, more than Linux supports (%d)", ErrInvalidBatch, n.GetNumaNodes(), maxNUMANodes)
		}
	}
	for i, w := range b.GetWorkloads() {
		if w.GetAppId() == "" {
			return fmt.Errorf("%w: workload %d: missing app_id", ErrInvalidBatch, i)
		}
	}
	return nil
}
