package store

import (
	"context"
	"time"
)

// Retention bounds what a store keeps of agents' traces (records, runs,
// workloads, process memory samples and the batches' keys). Analysed jobs and machines' NodeInfo
// are small and kept. Time is the collector's time of receipt, not the
// agents' clocks, so an agent with a wrong clock neither loses its data
// nor pins it forever.
type Retention struct {
	// MaxAge drops traces received longer ago than this; 0 keeps them.
	// DuckDB drops per batch; ClickHouse drops whole days (partitions by
	// the day of receipt in the server's time zone), so it keeps a trace
	// up to a day longer than MaxAge.
	MaxAge time.Duration
	// MaxBytes drops the oldest day of traces at a time while the store
	// takes more than this on disk, but never the newest day it holds;
	// 0 sets no bound. DuckDB's size is its used blocks (the file keeps
	// its largest size and reuses freed blocks); ClickHouse's is the
	// active parts of the database's tables.
	MaxBytes int64
}

// RetainResult says what one Retain did.
type RetainResult struct {
	// BytesBefore and BytesAfter are the store's size on disk.
	BytesBefore, BytesAfter int64
	// Dropped counts the days (ClickHouse partitions) or batches
	// (DuckDB) dropped.
	Dropped int
	// KeptOverSize: the newest day alone is over MaxBytes and was kept.
	KeptOverSize bool
}

// Retainer applies a retention policy; the collector calls it on a timer
// (collector/server). Several collectors may run it on one ClickHouse at
// once: dropping what another already dropped is a no-op.
type Retainer interface {
	Retain(ctx context.Context, r Retention) (RetainResult, error)
}

// day is the start of t's day in UTC.
func day(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}
