package answer

import (
	"context"
	"errors"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Sentinel errors of every reader. Callers check them with errors.Is; the
// query edges map them to gRPC codes and HTTP statuses.
var (
	// ErrNotFound is returned when a job id is unknown.
	ErrNotFound = errors.New("not found")
	// ErrInvalidQuery wraps every reason a query is refused (e.g. no app id).
	ErrInvalidQuery = errors.New("invalid query")
)

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
	// (executor, pid); shares are set with store.SetOccupationShares. The held
	// bytes are counted as UIReader.Occupancy counts them per RDD over
	// time: Occupation is their peak per process.
	Occupation(ctx context.Context, appID string) ([]*stratav1.OccupationRow, error)
	// Heat returns an app's DAMON access heat per RDD: every stored
	// sample of its RDD blocks and the figures heat.go defines.
	Heat(ctx context.Context, q HeatQuery) (*Heat, error)
}

// HotQuery selects the pages Hot ranks.
type HotQuery struct {
	AppID string
	RDD   *int32
	Limit uint32 // 0 = every page
}
