package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Access kinds as stored (TINYINT), named for the SQL below.
const (
	accessAlloc = int8(stratav1.AccessKind_ACCESS_KIND_ALLOC)
	accessRead  = int8(stratav1.AccessKind_ACCESS_KIND_READ)
	accessWrite = int8(stratav1.AccessKind_ACCESS_KIND_WRITE)
	accessFree  = int8(stratav1.AccessKind_ACCESS_KIND_FREE)
	accessMove  = int8(stratav1.AccessKind_ACCESS_KIND_MOVE)
)

func (s *DuckDB) reader(appID string) error {
	if s.closed() {
		return ErrClosed
	}
	if appID == "" {
		return fmt.Errorf("%w: empty app_id", ErrInvalidQuery)
	}
	return nil
}

// traceSQL lists app $1's runs (of RDD $2 and partition $3 when set) in
// time order, each with its record's coverage columns.
var traceSQL = `
SELECT r.time_ns, r.access_kind, r.pid, r.app_id, r.executor_id, r.rdd_id, r.partition_id, r.block_id,
	r.mem_mode, r.mem_location, r.hook_block_id, r.page_size,
	r.vaddr, r.pages, r.state, r.pfn, r.kpageflags, r.folio_pages, r.kpagecount, r.numa_node, r.swap_type, r.swap_offset, r.pfn_deltas,
	r.block_kind, r.object_graph, r.chunk, r.chunks, r.stage_id, r.stage_attempt, r.task_attempt, ` + coverageColNames("c.") + `
FROM runs r JOIN records c ON c.batch_id = r.batch_id AND c.rec_idx = r.rec_idx
WHERE r.app_id = $1 AND c.app_id = $1 AND ($2::INTEGER IS NULL OR r.rdd_id = $2) AND ($3::INTEGER IS NULL OR r.partition_id = $3)
ORDER BY r.time_ns, r.batch_id, r.rec_idx, r.vaddr`

// Trace lists, per record and per page, what the record saw: records are a
// time series of accesses, so a page appears once for every record that
// covered it, oldest first. Runs are expanded here with expandRun. A stored
// run that cannot be expanded (written by a collector that validated less)
// is skipped, and the skipped runs are counted in one warning per query,
// so one corrupt row never fails every trace of its application.
func (s *DuckDB) Trace(ctx context.Context, q TraceQuery, fn func(*stratav1.TracePage) error) error {
	if err := s.reader(q.AppID); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	var rdd, part any
	if q.RDD != nil {
		rdd = *q.RDD
	}
	if q.Partition != nil {
		part = *q.Partition
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the query when the limit is reached early
	rows, err := s.db.QueryContext(ctx, traceSQL, q.AppID, rdd, part)
	if err != nil {
		return fmt.Errorf("trace %s: %w", q.AppID, err)
	}
	defer rows.Close()
	em := pageEmitter{q: q, fn: fn}
	defer em.warn(s.log)
	for rows.Next() {
		var (
			r               traceRun
			blk             stratav1.SparkBlock
			mode, loc, kind int8
			cov             coverageRow
		)
		err := rows.Scan(append([]any{&r.time, &r.access, &r.pid, &blk.AppId, &blk.ExecutorId, &blk.RddId, &blk.Partition, &blk.BlockId,
			&mode, &loc, &blk.HookBlockId, &r.pageSize,
			&r.run.Vaddr, &r.run.Count, &r.run.State, &r.run.Pfn, &r.run.Kpageflags, &r.run.FolioPages, &r.run.Kpagecount,
			&r.run.NumaNode, &r.run.SwapType, &r.run.SwapOffset, &r.deltas,
			&kind, &blk.ObjectGraph, &blk.Chunk, &blk.Chunks, &blk.StageId, &blk.StageAttempt, &blk.TaskAttemptId}, cov.dest()...)...)
		if err != nil {
			return fmt.Errorf("scan trace row: %w", err)
		}
		blk.Mode, blk.Kind, blk.Location = stratav1.MemoryMode(mode), stratav1.BlockKind(kind), stratav1.MemoryLocation(loc)
		cov.setBlock(&blk)
		r.blk, r.cov = &blk, cov.coverage()
		if done, err := em.emit(&r); done || err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read trace rows: %w", err)
	}
	return nil
}

// errCorruptRun wraps why a stored run cannot be expanded.
var errCorruptRun = errors.New("corrupt stored run")

// expandRun calls fn for each page of a stored run (its PFN steps as
// stored, see encodeDeltas) until fn returns false. It refuses, before
// calling fn at all, a run ValidateBatch would have refused for what
// expansion relies on: a count outside 1..MaxRunPages, a page size that is
// not a power of two, a range that wraps, or PFN steps that do not decode
// into count-1 steps.
func expandRun(run *stratav1.PageRun, deltas []byte, pageSize uint32, fn func(stratav1.Page) bool) error {
	n := run.GetCount()
	if n == 0 || n > stratav1.MaxRunPages {
		return fmt.Errorf("%w: count %d", errCorruptRun, n)
	}
	if pageSize == 0 || pageSize&(pageSize-1) != 0 {
		return fmt.Errorf("%w: page_size %d", errCorruptRun, pageSize)
	}
	if run.GetVaddr() > ^uint64(0)-uint64(n)*uint64(pageSize) {
		return fmt.Errorf("%w: range %#x+%d pages wraps", errCorruptRun, run.GetVaddr(), n)
	}
	d, err := decodeDeltas(deltas, n)
	if err != nil {
		return fmt.Errorf("%w: %w", errCorruptRun, err)
	}
	run.PfnDeltas = d
	run.ForEachPage(uint64(pageSize), func(_ uint32, p stratav1.Page) bool { return fn(p) })
	return nil
}

// lifecycleScope selects app $1's lifecycle records ($2..$6 = alloc, read,
// write, free, move), every kind of block.
const lifecycleScope = `app_id = $1 AND access_kind IN ($2, $3, $4, $5, $6)`

// latestLifecycleCTE defines "latest": the (batch_id, rec_idx) of each
// live block buffer's latest records that hold (liveCTE over every block
// of the app). A buffer is (executor_id, pid, block_id, chunk); its latest
// records are all those at one time, because an agent sends a record too
// large for one batch as several records over consecutive sub-ranges with
// the same time.
var latestLifecycleCTE = liveCTE(lifecycleScope)

// numaSQL: the latest records that hold of each live block buffer win
// (latestLifecycleCTE); a buffer whose latest record is a free holds no
// pages. Pages are counted once per (executor, pid, page address)
// within each (RDD, node); a page whose node is not known (not present, PFN
// hidden) counts under node -1. Expanding runs into pages to deduplicate
// them is the costly part, so it is done only for the processes whose
// latest runs overlap (found with a running max of range ends in vaddr
// order); everywhere else a run's page count is summed as it is. A stored
// run with a count outside 1..MaxRunPages or no page size (which
// ValidateBatch refuses; only a corrupt row can hold one) is left out
// rather than expanded.
var numaSQL = withStates(latestLifecycleCTE + `, r AS (
	SELECT r.rdd_id, r.executor_id, r.pid, r.page_size::UBIGINT AS page_size, r.vaddr, r.pages::UBIGINT AS pages,
		r.vaddr + r.pages::UBIGINT * r.page_size AS vend,
		CASE WHEN r.state & {PRESENT} = 0 OR r.state & {PFN_HIDDEN} <> 0 THEN -1 ELSE r.numa_node END AS node
	FROM runs r JOIN latest USING (batch_id, rec_idx)
	WHERE r.app_id = $1 AND r.pages BETWEEN 1 AND {MAX_RUN_PAGES} AND r.page_size > 0
), flagged AS (
	SELECT *, coalesce(vaddr < max(vend) OVER (PARTITION BY executor_id, pid ORDER BY vaddr, vend
		ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS covered
	FROM r
), procs AS (
	SELECT executor_id, pid, bool_or(covered) AS overlapping FROM flagged GROUP BY executor_id, pid
), counted AS (
	SELECT f.rdd_id, f.node, f.pages, f.pages * f.page_size AS bytes
	FROM flagged f JOIN procs p USING (executor_id, pid) WHERE NOT p.overlapping
	UNION ALL
	SELECT rdd_id, node, 1, page_size FROM (
		SELECT DISTINCT f.rdd_id, f.executor_id, f.pid, f.page_size, f.node,
			f.vaddr + i.i * f.page_size AS page
		FROM flagged f JOIN procs p USING (executor_id, pid)
		CROSS JOIN LATERAL (SELECT unnest(range(f.pages::BIGINT)) AS i) i
		WHERE p.overlapping) d
)
SELECT rdd_id, node, sum(pages)::UBIGINT, sum(bytes)::UBIGINT
FROM counted GROUP BY rdd_id, node ORDER BY rdd_id, node`)

// Numa counts distinct resident pages per RDD per NUMA node; see numaSQL.
func (s *DuckDB) Numa(ctx context.Context, appID string) ([]*stratav1.NumaRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("numa: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, numaSQL, appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove)
	if err != nil {
		return nil, fmt.Errorf("query numa %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (*stratav1.NumaRow, error) {
		var r stratav1.NumaRow
		return &r, sc(&r.RddId, &r.NumaNode, &r.Pages, &r.Bytes)
	})
}

// faultsSQL: counters are cumulative since a block's registration, so the
// latest record carrying them wins per registration (executor, block, pid,
// hook_block_id); registrations of the same Spark block (freed and cached
// again) are summed. Sums saturate at {UBIGINT_MAX} (see withStates): counters
// an agent sent near 2^64 must not fail the query.
var faultsSQL = withStates(`
WITH latest AS (
	SELECT executor_id, rdd_id, partition_id, block_id, pid,
		fault_read, fault_write, fault_exec, fault_major, fault_unclassified,
		row_number() OVER (PARTITION BY executor_id, block_id, pid, hook_block_id
			ORDER BY time_ns DESC, batch_id DESC, rec_idx DESC) AS rn
	FROM records WHERE app_id = $1 AND has_faults
)
SELECT executor_id, rdd_id, partition_id, block_id, pid,
	least(sum(fault_read), {UBIGINT_MAX})::UBIGINT, least(sum(fault_write), {UBIGINT_MAX})::UBIGINT,
	least(sum(fault_exec), {UBIGINT_MAX})::UBIGINT, least(sum(fault_major), {UBIGINT_MAX})::UBIGINT,
	least(sum(fault_unclassified), {UBIGINT_MAX})::UBIGINT
FROM latest WHERE rn = 1
GROUP BY executor_id, rdd_id, partition_id, block_id, pid
ORDER BY rdd_id, partition_id, executor_id, block_id, pid`)

func (s *DuckDB) faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	rows, err := s.db.QueryContext(ctx, faultsSQL, appID)
	if err != nil {
		return nil, fmt.Errorf("query faults %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (*stratav1.FaultRow, error) {
		r := &stratav1.FaultRow{Faults: &stratav1.FaultCounts{}}
		f := r.Faults
		return r, sc(&r.ExecutorId, &r.RddId, &r.Partition, &r.BlockId, &r.Pid, &f.Read, &f.Write, &f.Exec, &f.Major, &f.Unclassified)
	})
}

// Faults returns the latest fault counters per block; see faultsSQL. A block
// seen in several processes of one executor (rare) gives one row per pid.
func (s *DuckDB) Faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	return s.faults(ctx, appID)
}

// overheadSQL: snapshots sharing a start are cumulative (the latest end
// wins); snapshots with different starts are successive intervals and are
// summed. A hardware counter is reported only when every summed snapshot
// measured it, and pmu_status is the latest snapshot's. Sums saturate at
// {UBIGINT_MAX}, as in faultsSQL.
var overheadSQL = withStates(`
WITH snap AS (
	SELECT *, row_number() OVER (PARTITION BY executor_id, pid, start_ns
		ORDER BY end_ns DESC, batch_id DESC) AS rn
	FROM workloads WHERE app_id = $1
)
SELECT executor_id, pid, min(start_ns), max(end_ns),
	least(sum(task_clock_ns), {UBIGINT_MAX})::UBIGINT, least(sum(context_switches), {UBIGINT_MAX})::UBIGINT,
	least(sum(cpu_migrations), {UBIGINT_MAX})::UBIGINT,
	least(sum(minor_faults), {UBIGINT_MAX})::UBIGINT, least(sum(major_faults), {UBIGINT_MAX})::UBIGINT,
	CASE WHEN count(cycles) = count(*) THEN least(sum(cycles), {UBIGINT_MAX})::UBIGINT END,
	CASE WHEN count(instructions) = count(*) THEN least(sum(instructions), {UBIGINT_MAX})::UBIGINT END,
	CASE WHEN count(dtlb_misses) = count(*) THEN least(sum(dtlb_misses), {UBIGINT_MAX})::UBIGINT END,
	CASE WHEN count(walk_load) = count(*) THEN least(sum(walk_load), {UBIGINT_MAX})::UBIGINT END,
	CASE WHEN count(walk_store) = count(*) THEN least(sum(walk_store), {UBIGINT_MAX})::UBIGINT END,
	CASE WHEN count(walk_rdd) = count(*) THEN least(sum(walk_rdd), {UBIGINT_MAX})::UBIGINT END,
	arg_max(pmu_status, end_ns)
FROM snap WHERE rn = 1
GROUP BY executor_id, pid ORDER BY executor_id, pid`)

// Overhead returns per (executor, pid) workload counters, their fault rate,
// the faults inside the app's blocks, and page-walk shares of cycles when
// the PMU measured them (see walkShares).
func (s *DuckDB) Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, overheadSQL, appID)
	if err != nil {
		return nil, fmt.Errorf("query overhead %s: %w", appID, err)
	}
	out, err := collect(rows, func(sc func(...any) error) (*stratav1.OverheadRow, error) {
		c := &stratav1.WorkloadCounters{AppId: appID}
		var cyc, ins, dtlb, wl, ws, wr sql.Null[uint64]
		err := sc(&c.ExecutorId, &c.Pid, &c.StartUnixNano, &c.EndUnixNano,
			&c.TaskClockNs, &c.ContextSwitches, &c.CpuMigrations, &c.MinorFaults, &c.MajorFaults,
			&cyc, &ins, &dtlb, &wl, &ws, &wr, &c.PmuStatus)
		c.Cycles, c.Instructions, c.DtlbMisses = nullPtr(cyc), nullPtr(ins), nullPtr(dtlb)
		c.WalkCyclesLoad, c.WalkCyclesStore, c.WalkCyclesRdd = nullPtr(wl), nullPtr(ws), nullPtr(wr)
		return &stratav1.OverheadRow{Counters: c}, err
	})
	if err != nil {
		return nil, err
	}
	faults, err := s.faults(ctx, appID)
	if err != nil {
		return nil, err
	}
	finishOverhead(out, faults)
	return out, nil
}

// finishOverhead completes Overhead's rows from the app's fault rows: the
// faults inside the app's blocks per (executor, pid), the fault rate, and
// the page-walk shares (walkShares).
func finishOverhead(out []*stratav1.OverheadRow, faults []*stratav1.FaultRow) {
	type proc struct {
		exec string
		pid  uint32
	}
	rdd := map[proc]*stratav1.FaultCounts{}
	for _, f := range faults {
		k := proc{f.GetExecutorId(), f.GetPid()}
		sum := rdd[k]
		if sum == nil {
			sum = &stratav1.FaultCounts{}
			rdd[k] = sum
		}
		sum.Read += f.GetFaults().GetRead()
		sum.Write += f.GetFaults().GetWrite()
		sum.Exec += f.GetFaults().GetExec()
		sum.Major += f.GetFaults().GetMajor()
	}
	for _, r := range out {
		c := r.Counters
		r.RddFaults = rdd[proc{c.GetExecutorId(), c.GetPid()}]
		if r.RddFaults == nil {
			r.RddFaults = &stratav1.FaultCounts{}
		}
		if d := c.GetEndUnixNano() - c.GetStartUnixNano(); d > 0 {
			r.FaultRatePerSec = float64(c.GetMinorFaults()+c.GetMajorFaults()) / (float64(d) / 1e9)
		}
		walkShares(r)
	}
}

// walkShares sets the page-walk percentages of cycles that were measured:
// read = load-walk cycles, write = store-walk cycles, rdd = walk cycles
// sampled inside RDD blocks, and walk_pct = read + write of those present.
// Nothing is set without a non-zero cycle count: no number is invented.
func walkShares(r *stratav1.OverheadRow) {
	c := r.GetCounters()
	if c.Cycles == nil || c.GetCycles() == 0 {
		return
	}
	pct := func(v uint64) *float64 {
		p := float64(v) * 100 / float64(c.GetCycles())
		return &p
	}
	if c.WalkCyclesLoad != nil {
		r.WalkPctRead = pct(c.GetWalkCyclesLoad())
	}
	if c.WalkCyclesStore != nil {
		r.WalkPctWrite = pct(c.GetWalkCyclesStore())
	}
	if c.WalkCyclesRdd != nil {
		r.WalkPctRdd = pct(c.GetWalkCyclesRdd())
	}
	if c.WalkCyclesLoad != nil || c.WalkCyclesStore != nil {
		r.WalkPct = pct(c.GetWalkCyclesLoad() + c.GetWalkCyclesStore())
	}
}

func nullPtr(n sql.Null[uint64]) *uint64 {
	if !n.Valid {
		return nil
	}
	return &n.V
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(sc func(...any) error) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("scan row: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return out, nil
}

// HasJob reports whether a result for id is stored.
func (s *DuckDB) HasJob(ctx context.Context, id string) (bool, error) {
	if s.closed() {
		return false, fmt.Errorf("has job: %w", ErrClosed)
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE job_id = $1", id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up job %s: %w", id, err)
	}
	return n > 0, nil
}

// Jobs lists results at or above min, newest finish first; limit 0 = all.
func (s *DuckDB) Jobs(ctx context.Context, min stratav1.Severity, limit uint32) ([]*stratav1.JobResult, error) {
	if s.closed() {
		return nil, fmt.Errorf("jobs: %w", ErrClosed)
	}
	q := "SELECT result FROM jobs WHERE severity >= $1 ORDER BY finish_ms DESC, job_id"
	args := []any{int32(min)}
	if limit > 0 {
		q += " LIMIT $2"
		args = append(args, int64(limit))
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query jobs: %w", err)
	}
	return collect(rows, func(sc func(...any) error) (*stratav1.JobResult, error) {
		return scanJob(sc)
	})
}

// Job returns one result, or ErrNotFound.
func (s *DuckDB) Job(ctx context.Context, id string) (*stratav1.JobResult, error) {
	if s.closed() {
		return nil, fmt.Errorf("job: %w", ErrClosed)
	}
	r, err := scanJob(s.db.QueryRowContext(ctx, "SELECT result FROM jobs WHERE job_id = $1", id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return r, nil
}

func scanJob(sc func(...any) error) (*stratav1.JobResult, error) {
	var blob []byte
	if err := sc(&blob); err != nil {
		return nil, err
	}
	var r stratav1.JobResult
	if err := proto.Unmarshal(blob, &r); err != nil {
		return nil, fmt.Errorf("decode job: %w", err)
	}
	return &r, nil
}
