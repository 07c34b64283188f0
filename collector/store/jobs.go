package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The analysed jobs as read (JobStore's reads, SearchJobs, JobTimeline):
// each job as its latest result (dialect.jobs), with user, queue, type
// and score kept beside it so that filters, order and paging run in SQL.

// jobWhere is the WHERE clause over dialect.jobs' columns that selects
// q's jobs.
func jobWhere(d dialect, q answer.JobQuery) (string, error) {
	if _, ok := stratav1.Severity_name[int32(q.MinSeverity)]; !ok {
		return "", fmt.Errorf("%w: unknown severity %d", ErrInvalidQuery, q.MinSeverity)
	}
	if q.FinishedTo != 0 && q.FinishedTo <= q.FinishedFrom {
		return "", fmt.Errorf("%w: finished to %d is not after from %d", ErrInvalidQuery, q.FinishedTo, q.FinishedFrom)
	}
	conds := []string{"sev >= " + itoa(int32(q.MinSeverity))}
	for _, f := range []struct{ col, v string }{{"usr", q.User}, {"que", q.Queue}, {"typ", q.Type}, {"app", q.AppID}} {
		if f.v != "" {
			conds = append(conds, f.col+" = "+d.lit(f.v))
		}
	}
	if q.FinishedFrom != 0 {
		conds = append(conds, "fin >= "+strconv.FormatInt(q.FinishedFrom, 10))
	}
	if q.FinishedTo != 0 {
		conds = append(conds, "fin < "+strconv.FormatInt(q.FinishedTo, 10))
	}
	return " WHERE " + strings.Join(conds, " AND "), nil
}

// results runs sel, whose one column is a stored result, and decodes the
// results.
func (q *querier) results(ctx context.Context, sel string) ([]*stratav1.JobResult, error) {
	var (
		out  []*stratav1.JobResult
		derr error
	)
	err := q.each(ctx, sel, func(r row) {
		blob := r.blob()
		if r.Err() != nil || derr != nil {
			return
		}
		var j stratav1.JobResult
		if derr = proto.Unmarshal(blob, &j); derr == nil {
			out = append(out, &j)
		}
	})
	if err == nil && derr != nil {
		err = fmt.Errorf("decode job: %w", derr)
	}
	return out, err
}

// HasJob reports whether a result for id is stored.
func (q *querier) HasJob(ctx context.Context, id string) (bool, error) {
	if q.src.closed() {
		return false, fmt.Errorf("has job: %w", ErrClosed)
	}
	d := q.src
	var n uint64
	err := q.each(ctx, d.sel("count(*)")+" FROM "+d.jobs()+" WHERE job_id = "+d.lit(id), func(r row) { n = r.u64() })
	if err != nil {
		return false, fmt.Errorf("look up job %s: %w", id, err)
	}
	return n > 0, nil
}

// Jobs lists results at or above min, newest finish first; limit 0 = all.
func (q *querier) Jobs(ctx context.Context, min stratav1.Severity, limit uint32) ([]*stratav1.JobResult, error) {
	if q.src.closed() {
		return nil, fmt.Errorf("jobs: %w", ErrClosed)
	}
	d := q.src
	sel := d.sel("res") + " FROM " + d.jobs() + " WHERE sev >= " + itoa(int32(min)) + " ORDER BY fin DESC, job_id"
	if limit > 0 {
		sel += " LIMIT " + strconv.FormatUint(uint64(limit), 10)
	}
	out, err := q.results(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("query jobs: %w", err)
	}
	return out, nil
}

// Job returns one result, or ErrNotFound.
func (q *querier) Job(ctx context.Context, id string) (*stratav1.JobResult, error) {
	if q.src.closed() {
		return nil, fmt.Errorf("job: %w", ErrClosed)
	}
	d := q.src
	out, err := q.results(ctx, d.sel("res")+" FROM "+d.jobs()+" WHERE job_id = "+d.lit(id))
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return out[0], nil
}

// SearchJobs returns the page of jobs q selects and how many match.
func (q *querier) SearchJobs(ctx context.Context, jq answer.JobQuery) (answer.JobPage, error) {
	if q.src.closed() {
		return answer.JobPage{}, fmt.Errorf("search jobs: %w", ErrClosed)
	}
	d := q.src
	where, err := jobWhere(d, jq)
	if err != nil {
		return answer.JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	from := " FROM " + d.jobs() + where
	var page answer.JobPage
	if err := q.each(ctx, d.sel("count(*)")+from, func(r row) { page.Total = r.u64() }); err != nil {
		return answer.JobPage{}, fmt.Errorf("count jobs: %w", err)
	}
	order := " ORDER BY fin DESC, job_id"
	if jq.Order == answer.JobsWorst {
		order = " ORDER BY sev DESC, scr DESC, fin DESC, job_id"
	}
	limit := uint64(jq.Limit)
	if limit == 0 {
		limit = 1 << 62
	}
	if page.Jobs, err = q.results(ctx, d.sel("res")+from+order+d.limit(limit, uint64(jq.Offset))); err != nil {
		return answer.JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	return page, nil
}

// JobTimeline counts q's jobs by severity per bucketMs of finish time,
// buckets starting at multiples of bucketMs (floor, also before 1970).
func (q *querier) JobTimeline(ctx context.Context, jq answer.JobQuery, bucketMs int64) ([]answer.SeverityBucket, error) {
	if q.src.closed() {
		return nil, fmt.Errorf("job timeline: %w", ErrClosed)
	}
	if bucketMs <= 0 {
		return nil, fmt.Errorf("job timeline: %w: bucket %d ms", ErrInvalidQuery, bucketMs)
	}
	d := q.src
	where, err := jobWhere(d, jq)
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	b := strconv.FormatInt(bucketMs, 10)
	sel := d.sel(d.toInt64("floor(fin / "+b+")")+" * "+b+" AS start, sev, count(*)") + " FROM " + d.jobs() + where +
		" GROUP BY start, sev ORDER BY start, sev"
	var out []answer.SeverityBucket
	err = q.each(ctx, sel, func(r row) {
		start, sev, n := r.i64(), r.i32(), r.u64()
		if len(out) == 0 || out[len(out)-1].StartMs != start {
			out = append(out, answer.SeverityBucket{StartMs: start})
		}
		if sev >= 0 && int(sev) < len(out[0].Counts) {
			out[len(out)-1].Counts[sev] += n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	return out, nil
}
