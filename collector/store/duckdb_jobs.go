package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// backfillJobs fills the columns SearchJobs filters on (user, queue,
// type, score) for jobs stored by a collector that did not write them,
// from each job's stored result. It runs once per such store, at Open.
func (w *writer) backfillJobs(ctx context.Context) error {
	rows, err := w.query.QueryContext(ctx, "SELECT job_id, result FROM jobs WHERE job_type IS NULL", nil)
	if err != nil {
		return fmt.Errorf("backfill jobs: %w", err)
	}
	var jobs []*stratav1.JobResult
	vals := make([]driver.Value, 2)
	for {
		if err := rows.Next(vals); err != nil {
			rows.Close()
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("backfill jobs: %w", err)
		}
		var r stratav1.JobResult
		blob, _ := vals[1].([]byte)
		if err := proto.Unmarshal(blob, &r); err != nil {
			rows.Close()
			return fmt.Errorf("backfill job %v: %w", vals[0], err)
		}
		r.JobId, _ = vals[0].(string)
		jobs = append(jobs, &r)
	}
	for _, r := range jobs {
		args := []driver.NamedValue{{Ordinal: 1, Value: r.GetJobId()}, {Ordinal: 2, Value: r.GetUser()},
			{Ordinal: 3, Value: r.GetQueue()}, {Ordinal: 4, Value: r.GetType()}, {Ordinal: 5, Value: r.GetScore()}}
		if _, err := w.exec.ExecContext(ctx, `UPDATE jobs SET user_name = $2, queue = $3, job_type = $4, score = $5
			WHERE job_id = $1`, args); err != nil {
			return fmt.Errorf("backfill job %s: %w", r.GetJobId(), err)
		}
	}
	return nil
}
