package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retain drops traces received before now-MaxAge, then the oldest day of
// them at a time while the database's used blocks exceed MaxBytes (never
// the newest day), each step in one transaction followed by a CHECKPOINT,
// which frees the deleted rows' blocks for reuse. It runs on the writer,
// between batches.
func (s *DuckDB) Retain(ctx context.Context, r Retention) (RetainResult, error) {
	var res RetainResult
	err := s.submit(ctx, func(w *writer) error {
		var err error
		res, err = w.retain(r, s.now())
		return err
	})
	if err != nil {
		return res, fmt.Errorf("retain: %w", err)
	}
	return res, nil
}

func (w *writer) retain(r Retention, now time.Time) (RetainResult, error) {
	var res RetainResult
	var err error
	// What the WAL holds is not in the used blocks until a checkpoint.
	if _, err := w.exec.ExecContext(writeCtx, "CHECKPOINT", nil); err != nil {
		return res, fmt.Errorf("checkpoint: %w", err)
	}
	if res.BytesBefore, err = w.usedBytes(); err != nil {
		return res, err
	}
	if r.MaxAge > 0 {
		n, err := w.dropBefore(now.Add(-r.MaxAge))
		if err != nil {
			return res, err
		}
		res.Dropped += n
	}
	size, err := w.usedBytes()
	if err != nil {
		return res, err
	}
	for r.MaxBytes > 0 && size > r.MaxBytes {
		var oldest, newest sql.NullInt64
		if err := w.scanOne(writeCtx, "SELECT min(received_ns), max(received_ns) FROM batches", nil, &oldest, &newest); err != nil {
			return res, fmt.Errorf("read batch times: %w", err)
		}
		if !oldest.Valid {
			break
		}
		first := day(time.Unix(0, oldest.Int64))
		if first.Equal(day(time.Unix(0, newest.Int64))) {
			res.KeptOverSize = true
			break
		}
		n, err := w.dropBefore(first.Add(24 * time.Hour))
		if err != nil {
			return res, err
		}
		res.Dropped += n
		if size, err = w.usedBytes(); err != nil {
			return res, err
		}
	}
	res.BytesAfter = size
	return res, nil
}

// dropBefore deletes, in one transaction, the batches received before
// cutoff with their records, runs, workloads and process memory samples,
// then checkpoints. It
// returns the batches dropped.
func (w *writer) dropBefore(cutoff time.Time) (n int, err error) {
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
	for _, t := range []string{"records", "runs", "workloads", "process_memory"} {
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
