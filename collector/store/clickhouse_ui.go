package store

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The web UI's questions (UIReader) on ClickHouse, with DuckDB's answers.
// The server has no window functions (18.16), so what DuckDB computes over
// windows is grouped in nested subqueries (RDDs) or finished in Go from
// one row per block and time (Occupancy); the physical map shares DuckDB's
// PFN index (physmap.go).

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

// lifecycleSQL selects app's visible lifecycle records with where added.
func lifecycleSQL(app, where string) string {
	return `app_id = ` + quote(app) + ` AND access_kind IN ` + lifecycleKinds + where + ` AND ` + visibleSQL(app)
}

// RDDs returns an app's blocks and lifecycle records per RDD, as
// DuckDB.RDDs does: lifecycle records once per (block buffer, time,
// access) with their summed length; per buffer its latest time, freed
// when that time holds a free, its bytes the longest length then.
func (s *ClickHouse) RDDs(ctx context.Context, appID string) ([]RDDStats, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("rdds: %w", err)
	}
	kind := func(k int8) string { return "access_kind = " + strconv.Itoa(int(k)) }
	ev := `SELECT rdd_id, executor_id, block_id, chunk, time_ns, access_kind, sum(length) AS len
	FROM records WHERE ` + lifecycleSQL(appID, "") + `
	GROUP BY rdd_id, executor_id, block_id, chunk, time_ns, access_kind`
	at := `SELECT rdd_id, executor_id, block_id, chunk, time_ns, max(len) AS tlen, max(` + kind(accessFree) + `) AS tfreed,
	countIf(` + kind(accessAlloc) + `) AS na, countIf(` + kind(accessRead) + `) AS nr, countIf(` + kind(accessWrite) + `) AS nw,
	countIf(` + kind(accessMove) + `) AS nm, countIf(` + kind(accessFree) + `) AS nf
	FROM (` + ev + `) GROUP BY rdd_id, executor_id, block_id, chunk, time_ns`
	buf := `SELECT rdd_id, executor_id, block_id, argMax(tlen, time_ns) AS blen, argMax(tfreed, time_ns) AS bfreed,
	sum(na) AS sa, sum(nr) AS sr, sum(nw) AS sw, sum(nm) AS sm, sum(nf) AS sf
	FROM (` + at + `) GROUP BY rdd_id, executor_id, block_id, chunk`
	sel := `SELECT ` + rowSelect + `, rdd_id, uniqExact(executor_id, block_id), uniqExactIf(executor_id, block_id, bfreed = 0),
	sumIf(blen, bfreed = 0), sum(sa), sum(sr), sum(sw), sum(sm), sum(sf)
FROM (` + buf + `) GROUP BY rdd_id ORDER BY rdd_id`
	var out []RDDStats
	err := s.c.query(ctx, sel, func(r *rowReader) {
		st := RDDStats{RDDID: r.i32(), Blocks: r.u64(), LiveBlocks: r.u64(), LiveBytes: r.u64(),
			Allocs: r.u64(), Reads: r.u64(), Writes: r.u64(), Moves: r.u64(), Frees: r.u64()}
		if r.Err() == nil {
			out = append(out, st)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query rdds %s: %w", appID, err)
	}
	return out, nil
}

// Occupancy returns each RDD's resident memory per time bucket, as
// DuckDB.Occupancy does. The server returns one row per RDD block buffer
// and lifecycle time, in time order per buffer, with the present pages of
// its records then (0 at a free); the changes, running sums and buckets
// are computed here.
func (s *ClickHouse) Occupancy(ctx context.Context, appID string, buckets uint32) ([]OccupancyPoint, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("occupancy: %w", err)
	}
	if buckets == 0 || buckets > 10000 {
		return nil, fmt.Errorf("occupancy: %w: %d buckets (1..10000)", ErrInvalidQuery, buckets)
	}
	key := "rdd_id, executor_id, block_id, chunk, time_ns"
	sel := `SELECT ` + rowSelect + `, ` + key + `, ps, freed, present FROM (
	SELECT ` + key + `, any(page_size) AS ps, max(access_kind = ` + strconv.Itoa(int(accessFree)) + `) AS freed
	FROM records WHERE ` + lifecycleSQL(appID, " AND rdd_id >= 0") + ` GROUP BY ` + key + `
) ANY LEFT JOIN (
	SELECT ` + key + `, sum(pages) AS present
	FROM runs WHERE ` + lifecycleSQL(appID, " AND rdd_id >= 0 AND "+chState("PRESENT")+" != 0") + ` GROUP BY ` + key + `
) USING (` + key + `)
ORDER BY executor_id, block_id, chunk, time_ns`
	type change struct {
		rdd          int32
		t            int64
		pages, bytes int64
	}
	type buffer struct {
		exec, block string
		chunk       uint32
	}
	var (
		changes []change
		prevBuf buffer
		prev    int64 // the buffer's present pages at its previous time
		first   = true
		t0, t1  int64
	)
	err := s.c.query(ctx, sel, func(r *rowReader) {
		rdd, buf := r.i32(), buffer{exec: r.str(), block: r.str(), chunk: r.u32()}
		t, ps, freed, present := r.i64(), int64(r.u32()), r.boolean(), int64(r.u64())
		if r.Err() != nil {
			return
		}
		if freed {
			present = 0
		}
		if first || buf != prevBuf {
			prevBuf, prev = buf, 0
		}
		if first {
			t0, t1, first = t, t, false
		}
		t0, t1 = min(t0, t), max(t1, t)
		changes = append(changes, change{rdd: rdd, t: t, pages: present - prev, bytes: (present - prev) * ps})
		prev = present
	})
	if err != nil {
		return nil, fmt.Errorf("query occupancy %s: %w", appID, err)
	}
	// Per RDD in time order, changes at one time together: the running
	// sum after the last time of each bucket.
	slices.SortStableFunc(changes, func(a, b change) int {
		if a.rdd != b.rdd {
			return int(a.rdd) - int(b.rdd)
		}
		return cmp.Compare(a.t, b.t)
	})
	var (
		out          []OccupancyPoint
		pages, bytes int64
	)
	span := uint64(t1 - t0 + 1)
	for i, c := range changes {
		if i == 0 || c.rdd != changes[i-1].rdd {
			pages, bytes = 0, 0
		}
		pages, bytes = pages+c.pages, bytes+c.bytes
		if i+1 < len(changes) && changes[i+1].rdd == c.rdd && changes[i+1].t == c.t {
			continue // the rest of this time first
		}
		hi, lo := bits.Mul64(uint64(c.t-t0), uint64(buckets))
		b, _ := bits.Div64(hi, lo, span)
		p := OccupancyPoint{RDDID: c.rdd, TimeNs: bucketEnd(t0, t1, int64(b), buckets),
			Pages: uint64(max(pages, 0)), Bytes: uint64(max(bytes, 0))}
		if n := len(out); n > 0 && out[n-1].RDDID == p.RDDID && out[n-1].TimeNs == p.TimeNs {
			out[n-1] = p // a later time of the same bucket
		} else {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b OccupancyPoint) int {
		if a.TimeNs != b.TimeNs {
			return cmp.Compare(a.TimeNs, b.TimeNs)
		}
		return int(a.RDDID) - int(b.RDDID)
	})
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
