package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

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

// jobWhere is the WHERE clause and arguments that select q's jobs.
func jobWhere(q JobQuery) (string, []any, error) {
	if _, ok := stratav1.Severity_name[int32(q.MinSeverity)]; !ok {
		return "", nil, fmt.Errorf("%w: unknown severity %d", ErrInvalidQuery, q.MinSeverity)
	}
	if q.FinishedTo != 0 && q.FinishedTo <= q.FinishedFrom {
		return "", nil, fmt.Errorf("%w: finished to %d is not after from %d", ErrInvalidQuery, q.FinishedTo, q.FinishedFrom)
	}
	conds, args := []string{"severity >= $1"}, []any{int32(q.MinSeverity)}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	for _, f := range []struct {
		col, v string
	}{{"user_name", q.User}, {"queue", q.Queue}, {"job_type", q.Type}, {"app_id", q.AppID}} {
		if f.v != "" {
			add(f.col+" = $%d", f.v)
		}
	}
	if q.FinishedFrom != 0 {
		add("finish_ms >= $%d", q.FinishedFrom)
	}
	if q.FinishedTo != 0 {
		add("finish_ms < $%d", q.FinishedTo)
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// SearchJobs returns the page of jobs q selects and how many match.
func (s *DuckDB) SearchJobs(ctx context.Context, q JobQuery) (JobPage, error) {
	if s.closed() {
		return JobPage{}, fmt.Errorf("search jobs: %w", ErrClosed)
	}
	where, args, err := jobWhere(q)
	if err != nil {
		return JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	var page JobPage
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM jobs"+where, args...).Scan(&page.Total); err != nil {
		return JobPage{}, fmt.Errorf("count jobs: %w", err)
	}
	order := " ORDER BY finish_ms DESC, job_id"
	if q.Order == JobsWorst {
		order = " ORDER BY severity DESC, score DESC, finish_ms DESC, job_id"
	}
	limit := int64(q.Limit)
	if limit == 0 {
		limit = 1 << 62
	}
	args = append(args, limit, int64(q.Offset))
	sqlText := fmt.Sprintf("SELECT result FROM jobs%s%s LIMIT $%d OFFSET $%d", where, order, len(args)-1, len(args))
	rows, err := s.db.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	page.Jobs, err = collect(rows, func(sc func(...any) error) (*stratav1.JobResult, error) { return scanJob(sc) })
	if err != nil {
		return JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	return page, nil
}

// JobTimeline counts q's jobs by severity per bucketMs of finish time.
func (s *DuckDB) JobTimeline(ctx context.Context, q JobQuery, bucketMs int64) ([]SeverityBucket, error) {
	if s.closed() {
		return nil, fmt.Errorf("job timeline: %w", ErrClosed)
	}
	if bucketMs <= 0 {
		return nil, fmt.Errorf("job timeline: %w: bucket %d ms", ErrInvalidQuery, bucketMs)
	}
	where, args, err := jobWhere(q)
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	args = append(args, bucketMs)
	b := fmt.Sprintf("$%d", len(args))
	rows, err := s.db.QueryContext(ctx, "SELECT floor(finish_ms / "+b+")::BIGINT * "+b+", severity, count(*)::UBIGINT FROM jobs"+
		where+" GROUP BY 1, 2 ORDER BY 1, 2", args...)
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	type cell struct {
		start int64
		sev   int32
		n     uint64
	}
	cells, err := collect(rows, func(sc func(...any) error) (cell, error) {
		var c cell
		return c, sc(&c.start, &c.sev, &c.n)
	})
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	var out []SeverityBucket
	for _, c := range cells {
		if len(out) == 0 || out[len(out)-1].StartMs != c.start {
			out = append(out, SeverityBucket{StartMs: c.start})
		}
		if c.sev >= 0 && int(c.sev) < len(out[0].Counts) {
			out[len(out)-1].Counts[c.sev] += c.n
		}
	}
	return out, nil
}

// appsSQL lists the apps holding records; machine names are joined with
// a newline, which no node name holds.
const appsSQL = `
SELECT app_id, string_agg(DISTINCT node_name, chr(10) ORDER BY node_name), count(DISTINCT executor_id)::UINTEGER,
	count(*)::UBIGINT, min(time_ns), max(time_ns)
FROM records GROUP BY app_id ORDER BY max(time_ns) DESC, app_id`

// Apps lists the applications holding records, latest record first.
func (s *DuckDB) Apps(ctx context.Context) ([]AppSummary, error) {
	if s.closed() {
		return nil, fmt.Errorf("apps: %w", ErrClosed)
	}
	rows, err := s.db.QueryContext(ctx, appsSQL)
	if err != nil {
		return nil, fmt.Errorf("query apps: %w", err)
	}
	return collect(rows, func(sc func(...any) error) (AppSummary, error) {
		var a AppSummary
		var machines string
		err := sc(&a.AppID, &machines, &a.Executors, &a.Records, &a.FirstNs, &a.LastNs)
		a.Machines = strings.Split(machines, "\n")
		return a, err
	})
}

// occupancySQL: each RDD's running sum of heldStepsCTE's steps (what its
// cached blocks held, as Occupation takes them per process), in time order
// with ties together; the last value in each of $8 time buckets between the
// first and last lifecycle record of the app's cached blocks is kept. The
// bucket number is computed in HUGEINT: a span of years in nanoseconds
// times the bucket count exceeds BIGINT.
var occupancySQL = withStates(heldStepsCTE + `, c AS (
	SELECT rdd_id, time_ns, sum(sum(d_pages)) OVER (PARTITION BY rdd_id ORDER BY time_ns) AS pages,
		sum(sum(d_bytes)) OVER (PARTITION BY rdd_id ORDER BY time_ns) AS bytes
	FROM step GROUP BY rdd_id, time_ns
), span AS (SELECT min(time_ns) AS t0, max(time_ns) AS t1 FROM rec)
SELECT rdd_id, ((time_ns - t0)::HUGEINT * $8 // (t1 - t0 + 1))::BIGINT AS b, any_value(t0), any_value(t1),
	greatest(arg_max(pages, time_ns), 0)::UBIGINT, greatest(arg_max(bytes, time_ns), 0)::UBIGINT
FROM c, span GROUP BY 1, 2 ORDER BY 2, 1`)

// Occupancy returns each RDD's resident memory per time bucket.
func (s *DuckDB) Occupancy(ctx context.Context, appID string, buckets uint32) ([]OccupancyPoint, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("occupancy: %w", err)
	}
	if buckets == 0 || buckets > 10000 {
		return nil, fmt.Errorf("occupancy: %w: %d buckets (1..10000)", ErrInvalidQuery, buckets)
	}
	rows, err := s.db.QueryContext(ctx, occupancySQL, appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove,
		int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION), int64(buckets))
	if err != nil {
		return nil, fmt.Errorf("query occupancy %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (OccupancyPoint, error) {
		var p OccupancyPoint
		var b, t0, t1 int64
		err := sc(&p.RDDID, &b, &t0, &t1, &p.Pages, &p.Bytes)
		p.TimeNs = bucketEnd(t0, t1, b, buckets)
		return p, err
	})
}

// bucketEnd is the last nanosecond of bucket b of n over [t0, t1]: bucket
// b holds the times t with (t - t0) * n / (t1 - t0 + 1) = b, so its last is
// t0 + ceil((b + 1) * (t1 - t0 + 1) / n) - 1 (the last bucket's is t1),
// computed in 128 bits.
func bucketEnd(t0, t1, b int64, n uint32) int64 {
	hi, lo := bits.Mul64(uint64(b+1), uint64(t1-t0+1))
	q, r := bits.Div64(hi, lo, uint64(n))
	if r > 0 {
		q++
	}
	return t0 + int64(q) - 1
}
