package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retain applies r on the writer, between batches (see retain): each
// drop is one transaction followed by a CHECKPOINT, which frees the deleted
// rows' blocks for reuse; the size is the database's used blocks.
func (s *DuckDB) Retain(ctx context.Context, r Retention) (RetainResult, error) {
	var res RetainResult
	err := s.submit(ctx, func(w *writer) error {
		// What the WAL holds is not in the used blocks until a checkpoint.
		if _, err := w.exec.ExecContext(writeCtx, "CHECKPOINT", nil); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		var err error
		res, err = retain(writeCtx, w, r, s.now())
		return err
	})
	if err != nil {
		return res, fmt.Errorf("retain: %w", err)
	}
	return res, nil
}

func (w *writer) traceBytes(context.Context) (int64, error) { return w.usedBytes() }

// dropOldestDay drops the batches received on the oldest day of receipt.
func (w *writer) dropOldestDay(ctx context.Context) (dropped, held int, err error) {
	var oldest, newest sql.NullInt64
	if err := w.scanOne(writeCtx, "SELECT min(received_ns), max(received_ns) FROM batches", nil, &oldest, &newest); err != nil {
		return 0, 0, fmt.Errorf("read batch times: %w", err)
	}
	if !oldest.Valid {
		return 0, 0, nil
	}
	first := day(time.Unix(0, oldest.Int64))
	if first.Equal(day(time.Unix(0, newest.Int64))) {
		return 0, 1, nil
	}
	n, err := w.dropBefore(ctx, first.Add(24*time.Hour))
	return n, 2, err
}

// dropBefore deletes, in one transaction, the batches received before
// cutoff with their records, runs, workloads, process memory and heat
// samples,
// then checkpoints. It
// returns the batches dropped.
func (w *writer) dropBefore(_ context.Context, cutoff time.Time) (n int, err error) {
	ctx := writeCtx
	c := cutoff.UnixNano()
	var cnt sql.NullInt64
	if err := w.scanOne(ctx, fmt.Sprintf("SELECT count(*) FROM batches WHERE received_ns < %d", c), nil, &cnt); err != nil {
		return 0, fmt.Errorf("count old batches: %w", err)
	}
	if cnt.Int64 == 0 {
		return 0, nil
	}
	if _, err := w.exec.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	old := fmt.Sprintf("(SELECT batch_id FROM batches WHERE received_ns < %d)", c)
	for _, t := range []string{"records", "runs", "workloads", "process_memory", "heat"} {
		if _, err := w.exec.ExecContext(ctx, "DELETE FROM "+t+" WHERE batch_id IN "+old, nil); err != nil {
			return 0, fmt.Errorf("delete old %s: %w", t, err)
		}
	}
	if _, err := w.exec.ExecContext(ctx, fmt.Sprintf("DELETE FROM batches WHERE received_ns < %d", c), nil); err != nil {
		return 0, fmt.Errorf("delete old batches: %w", err)
	}
	if _, err := w.exec.ExecContext(ctx, "COMMIT", nil); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	for range 2 {
		if _, err := w.exec.ExecContext(ctx, "FORCE CHECKPOINT", nil); err != nil {
			return int(cnt.Int64), fmt.Errorf("checkpoint: %w", err)
		}
	}
	return int(cnt.Int64), nil
}

// usedBytes is the database's used blocks times the block size.
func (w *writer) usedBytes() (int64, error) {
	var bs, used sql.NullInt64
	if err := w.scanOne(writeCtx, "SELECT block_size, used_blocks FROM pragma_database_size()", nil, &bs, &used); err != nil {
		return 0, fmt.Errorf("read database size: %w", err)
	}
	return bs.Int64 * used.Int64, nil
}
