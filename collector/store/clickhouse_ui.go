package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The web UI's questions (UIReader) on ClickHouse, with DuckDB's answers.
// Occupancy is in clickhouse_report.go with Occupation, which shares its
// steps; the physical map shares DuckDB's PFN index (physmap.go).

// chJobWhere is the WHERE clause over latestJobsSQL's columns that
// selects q's jobs.
func chJobWhere(q JobQuery) (string, error) {
	if _, ok := stratav1.Severity_name[int32(q.MinSeverity)]; !ok {
		return "", fmt.Errorf("%w: unknown severity %d", ErrInvalidQuery, q.MinSeverity)
	}
	if q.FinishedTo != 0 && q.FinishedTo <= q.FinishedFrom {
		return "", fmt.Errorf("%w: finished to %d is not after from %d", ErrInvalidQuery, q.FinishedTo, q.FinishedFrom)
	}
	conds := []string{"sev >= " + strconv.Itoa(int(q.MinSeverity))}
	for _, f := range []struct{ col, v string }{{"usr", q.User}, {"que", q.Queue}, {"typ", q.Type}, {"app", q.AppID}} {
		if f.v != "" {
			conds = append(conds, f.col+" = "+quote(f.v))
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

// SearchJobs returns the page of jobs q selects and how many match, as
// DuckDB.SearchJobs does; each job as its latest analysis.
func (s *ClickHouse) SearchJobs(ctx context.Context, q JobQuery) (JobPage, error) {
	if s.closed() {
		return JobPage{}, fmt.Errorf("search jobs: %w", ErrClosed)
	}
	where, err := chJobWhere(q)
	if err != nil {
		return JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	from := ` FROM (` + latestJobsSQL + ` GROUP BY job_id)` + where
	var page JobPage
	if err := s.c.query(ctx, `SELECT `+rowSelect+`, count()`+from, func(r *rowReader) { page.Total = r.u64() }); err != nil {
		return JobPage{}, fmt.Errorf("count jobs: %w", err)
	}
	order := " ORDER BY fin DESC, job_id"
	if q.Order == JobsWorst {
		order = " ORDER BY sev DESC, scr DESC, fin DESC, job_id"
	}
	limit := uint64(q.Limit)
	if limit == 0 {
		limit = 1 << 62
	}
	sel := `SELECT ` + rowSelect + `, res` + from + order +
		" LIMIT " + strconv.FormatUint(uint64(q.Offset), 10) + ", " + strconv.FormatUint(limit, 10)
	if page.Jobs, err = s.queryJobs(ctx, sel); err != nil {
		return JobPage{}, fmt.Errorf("search jobs: %w", err)
	}
	return page, nil
}

// JobTimeline counts q's jobs by severity per bucketMs of finish time, as
// DuckDB.JobTimeline does.
func (s *ClickHouse) JobTimeline(ctx context.Context, q JobQuery, bucketMs int64) ([]SeverityBucket, error) {
	if s.closed() {
		return nil, fmt.Errorf("job timeline: %w", ErrClosed)
	}
	if bucketMs <= 0 {
		return nil, fmt.Errorf("job timeline: %w: bucket %d ms", ErrInvalidQuery, bucketMs)
	}
	where, err := chJobWhere(q)
	if err != nil {
		return nil, fmt.Errorf("job timeline: %w", err)
	}
	b := strconv.FormatInt(bucketMs, 10)
	// floor, not intDiv (which truncates toward zero), as DuckDB buckets.
	sel := `SELECT ` + rowSelect + `, toInt64(floor(fin / ` + b + `)) * ` + b + ` AS start, sev, count()
FROM (` + latestJobsSQL + ` GROUP BY job_id)` + where + ` GROUP BY start, sev ORDER BY start, sev`
	var out []SeverityBucket
	err = s.c.query(ctx, sel, func(r *rowReader) {
		start, sev, n := r.i64(), r.i32(), r.u64()
		if r.Err() != nil {
			return
		}
		if len(out) == 0 || out[len(out)-1].StartMs != start {
			out = append(out, SeverityBucket{StartMs: start})
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

// Apps lists the applications holding records, latest record first, as
// DuckDB.Apps does. Machine names are joined with a newline, which no node
// name holds.
func (s *ClickHouse) Apps(ctx context.Context) ([]AppSummary, error) {
	if s.closed() {
		return nil, fmt.Errorf("apps: %w", ErrClosed)
	}
	sel := `SELECT ` + rowSelect + `, app_id, arrayStringConcat(arraySort(groupUniqArray(node_name)), '\n'),
	toUInt32(uniqExact(executor_id)), count(), min(time_ns), max(time_ns) AS last
FROM records WHERE uid IN (SELECT min(uid) FROM batch_apps GROUP BY node_name, boot_id, seq)
GROUP BY app_id ORDER BY last DESC, app_id`
	var out []AppSummary
	err := s.c.query(ctx, sel, func(r *rowReader) {
		a := AppSummary{AppID: r.str(), Machines: strings.Split(r.str(), "\n"), Executors: r.u32(), Records: r.u64(),
			FirstNs: r.i64(), LastNs: r.i64()}
		if r.Err() == nil {
			out = append(out, a)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query apps: %w", err)
	}
	return out, nil
}

// PhysMap returns the app's physical memory map on one machine, from the
// same PFN index as DuckDB.PhysMap.
func (s *ClickHouse) PhysMap(ctx context.Context, q PhysMapQuery) (*PhysMap, error) {
	if err := s.reader(q.AppID); err != nil {
		return nil, fmt.Errorf("physical map: %w", err)
	}
	return physMap(ctx, s, &s.physMaps, s.log, q)
}

// physStamp changes with every write attempt of a batch of app that
// commits, through any collector: the count and the sum of the uids of
// its commit rows.
func (s *ClickHouse) physStamp(ctx context.Context, app string) (int64, error) {
	var n, sum uint64
	err := s.c.query(ctx, `SELECT `+rowSelect+`, count(), sum(uid) FROM batch_apps WHERE app_id = `+quote(app),
		func(r *rowReader) { n, sum = r.u64(), r.u64() })
	if err != nil {
		return 0, fmt.Errorf("read batches of %s: %w", app, err)
	}
	return int64(n ^ sum), nil
}

func (s *ClickHouse) physRuns(ctx context.Context, app, machine string, fn func(physRun)) error {
	sel := `SELECT ` + rowSelect + `, rdd_id, executor_id, block_id, state, pfn, pages, pfn_deltas, numa_node FROM (` +
		latestRunsSQL(app, "rdd_id, executor_id, block_id, state, pfn, pages, pfn_deltas, numa_node",
			" AND node_name = "+quote(machine)+" AND "+withStates("bitAnd(state, {PRESENT} + {SWAPPED})")+" != 0"+
				" AND pages BETWEEN 1 AND "+strconv.Itoa(stratav1.MaxRunPages)) + `)`
	return s.c.query(ctx, sel, func(r *rowReader) {
		var p physRun
		p.ref.RDDID, p.ref.ExecutorID, p.ref.BlockID = r.i32(), r.str(), r.str()
		p.state, p.pfn, p.pages, p.deltas, p.node = r.u32(), r.u64(), r.u32(), r.blob(), r.i32()
		if r.Err() == nil {
			fn(p)
		}
	})
}

func (s *ClickHouse) hotSamples(ctx context.Context, app, machine string, from, to uint64) (map[uint64]uint64, error) {
	sel := `SELECT ` + rowSelect + `, pfn, count() FROM runs
WHERE app_id = ` + quote(app) + ` AND node_name = ` + quote(machine) +
		` AND access_kind = ` + strconv.Itoa(int(stratav1.AccessKind_ACCESS_KIND_FAULT)) + ` AND has_faults = 0` +
		` AND ` + chState("PRESENT") + ` != 0 AND ` + chState("PFN_HIDDEN") + ` = 0` +
		` AND pfn >= ` + strconv.FormatUint(from, 10) + ` AND pfn < ` + strconv.FormatUint(to, 10) +
		` AND ` + visibleSQL(app) + ` GROUP BY pfn`
	out := map[uint64]uint64{}
	err := s.c.query(ctx, sel, func(r *rowReader) {
		pfn, n := r.u64(), r.u64()
		if r.Err() == nil {
			out[pfn] = n
		}
	})
	return out, err
}
