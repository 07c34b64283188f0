package store

import (
	"context"
	"fmt"
	"time"
)

// Retention bounds what a store keeps of agents' traces (records, runs,
// workloads, process memory and heat samples and the batches' keys). Analysed jobs and machines' NodeInfo
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

// traceDays is what a backend gives retain: its traces by day of receipt.
type traceDays interface {
	// traceBytes is the store's size on disk.
	traceBytes(ctx context.Context) (int64, error)
	// dropBefore drops the traces received before cutoff (ClickHouse: the
	// days wholly before it) and returns how many it dropped (DuckDB:
	// batches; ClickHouse: days).
	dropBefore(ctx context.Context, cutoff time.Time) (int, error)
	// dropOldestDay drops the oldest day of traces unless it is the only
	// one; held is how many days there were (0: none, 1: only the newest,
	// which it kept).
	dropOldestDay(ctx context.Context) (dropped, held int, err error)
}

// retain applies r to d, the one policy of both backends: the traces
// received before now-MaxAge go, then the oldest day at a time while the
// store is over MaxBytes, never the newest day.
func retain(ctx context.Context, d traceDays, r Retention, now time.Time) (RetainResult, error) {
	var res RetainResult
	size, err := d.traceBytes(ctx)
	if err != nil {
		return res, fmt.Errorf("retain: %w", err)
	}
	res.BytesBefore = size
	if r.MaxAge > 0 {
		n, err := d.dropBefore(ctx, now.Add(-r.MaxAge))
		res.Dropped += n
		if err != nil {
			return res, fmt.Errorf("retain: %w", err)
		}
		if n > 0 {
			if size, err = d.traceBytes(ctx); err != nil {
				return res, fmt.Errorf("retain: %w", err)
			}
		}
	}
	for r.MaxBytes > 0 && size > r.MaxBytes {
		n, held, err := d.dropOldestDay(ctx)
		if err != nil {
			return res, fmt.Errorf("retain: %w", err)
		}
		if held <= 1 {
			res.KeptOverSize = held == 1
			break
		}
		res.Dropped += n
		if size, err = d.traceBytes(ctx); err != nil {
			return res, fmt.Errorf("retain: %w", err)
		}
	}
	res.BytesAfter = size
	return res, nil
}
