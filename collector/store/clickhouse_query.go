package store

import (
	"context"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// visibleSQL is the condition every read of records, runs, workloads and
// process_memory carries: a row is read only if its write attempt (uid)
// committed — its batch_apps rows exist — and is the batch's canonical
// attempt, the committed one with the least uid. A batch written twice (replayed
// through another collector before its first write was acknowledged, or
// by two collectors racing) is so read once, and rows of an attempt that
// died half-way are never read.
func visibleSQL(app string) string {
	return "uid IN (SELECT min(uid) FROM batch_apps WHERE app_id = " + quote(app) + " GROUP BY node_name, boot_id, seq)"
}

// lifecycleKinds are the access kinds of a block's life (not FAULT).
var lifecycleKinds = fmt.Sprintf("(%d, %d, %d, %d, %d)", accessAlloc, accessRead, accessWrite, accessFree, accessMove)

// latestRunsSQL selects cols of the runs of each live block buffer's
// latest records that hold in app, as latestLifecycleCTE defines them
// (chLiveRecsWhere over every block of the app). where adds conditions on
// the runs.
func latestRunsSQL(app, cols, where string) string {
	scope := `app_id = ` + quote(app) + ` AND access_kind IN ` + lifecycleKinds + ` AND ` + visibleSQL(app)
	return `SELECT ` + cols + ` FROM runs
WHERE app_id = ` + quote(app) + ` AND ` + visibleSQL(app) + where + ` AND (uid, rec_idx) IN (
	SELECT uid, rec_idx FROM records WHERE ` + chLiveRecsWhere(scope) + `)`
}

// chState is the SQL test of a page-state bit: chState("PRESENT") is
// bitAnd(state, 1).
func chState(name string) string {
	return withStates("bitAnd(state, {" + name + "})")
}

// nodeExpr is a run's NUMA node as the queries count it: -1 when not
// present or the PFN hidden.
var nodeExpr = "if(" + chState("PRESENT") + " = 0 OR " + chState("PFN_HIDDEN") + " != 0, -1, numa_node)"

// Trace lists, per record and per page, what the record saw, as
// DuckDB.Trace does, each run with its record's coverage columns; records
// of the same time are in the order of their batches' write attempts
// (uid), as DuckDB's are in the order of storage.
func (s *ClickHouse) Trace(ctx context.Context, q TraceQuery, fn func(*stratav1.TracePage) error) error {
	if err := s.reader(q.AppID); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	where := ""
	if q.RDD != nil {
		where += " AND rdd_id = " + strconv.Itoa(int(*q.RDD))
	}
	if q.Partition != nil {
		where += " AND partition_id = " + strconv.Itoa(int(*q.Partition))
	}
	sel := `SELECT ` + rowSelect + `, time_ns, access_kind, pid, app_id, executor_id, rdd_id, partition_id, block_id,
	mem_mode, mem_location, hook_block_id, page_size,
	vaddr, pages, state, pfn, kpageflags, folio_pages, kpagecount, numa_node, swap_type, swap_offset, pfn_deltas,
	block_kind, object_graph, chunk, chunks, stage_id, stage_attempt, task_attempt, ` + coverageColNames("") + `
FROM (
	SELECT * FROM runs WHERE app_id = ` + quote(q.AppID) + where + ` AND ` + visibleSQL(q.AppID) + `
) ANY LEFT JOIN (
	SELECT uid, rec_idx, ` + coverageColNames("") + ` FROM records
	WHERE app_id = ` + quote(q.AppID) + where + ` AND ` + visibleSQL(q.AppID) + `
) USING (uid, rec_idx)
ORDER BY time_ns, uid, rec_idx, vaddr`
	em := pageEmitter{q: q, fn: fn}
	defer em.warn(s.log)
	var ferr error
	err := s.c.queryStop(ctx, sel, func(rr *rowReader) bool {
		var r traceRun
		blk := &stratav1.SparkBlock{}
		r.time, r.access, r.pid = rr.i64(), rr.i8(), rr.u32()
		blk.AppId, blk.ExecutorId, blk.RddId, blk.Partition, blk.BlockId = rr.str(), rr.str(), rr.i32(), rr.i32(), rr.str()
		blk.Mode, blk.Location = stratav1.MemoryMode(rr.i8()), stratav1.MemoryLocation(rr.i8())
		blk.HookBlockId, r.pageSize = rr.u64(), rr.u32()
		r.run.Vaddr, r.run.Count, r.run.State, r.run.Pfn = rr.u64(), rr.u32(), rr.u32(), rr.u64()
		r.run.Kpageflags, r.run.FolioPages, r.run.Kpagecount, r.run.NumaNode = rr.u64(), rr.u32(), rr.u64(), rr.i32()
		r.run.SwapType, r.run.SwapOffset, r.deltas = rr.u32(), rr.u64(), rr.blob()
		blk.Kind, blk.ObjectGraph, blk.Chunk, blk.Chunks = stratav1.BlockKind(rr.i8()), rr.boolean(), rr.u32(), rr.u32()
		blk.StageId, blk.StageAttempt, blk.TaskAttemptId = rr.i32(), rr.i32(), rr.i64()
		var cov coverageRow
		cov.read(rr)
		if rr.Err() != nil {
			return false
		}
		cov.setBlock(blk)
		r.blk, r.cov = blk, cov.coverage()
		done, err := em.emit(&r)
		ferr = err
		return !done
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", q.AppID, err)
	}
	return nil
}

// Records lists an app's records without pages, in time order, as
// DuckDB.Records does.
func (s *ClickHouse) Records(ctx context.Context, q RecordsQuery, fn func(*stratav1.RecordRow) error) error {
	if err := s.reader(q.AppID); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	where := ""
	if q.RDD != nil {
		where += " AND rdd_id = " + strconv.Itoa(int(*q.RDD))
	}
	if q.Partition != nil {
		where += " AND partition_id = " + strconv.Itoa(int(*q.Partition))
	}
	if q.BlockID != "" {
		where += " AND block_id = " + quote(q.BlockID)
	}
	if len(q.Access) > 0 {
		kinds := make([]string, len(q.Access))
		for i, k := range q.Access {
			kinds[i] = strconv.Itoa(int(int8(k)))
		}
		where += " AND access_kind IN (" + strings.Join(kinds, ", ") + ")"
	}
	sel := `SELECT ` + rowSelect + `, time_ns, access_kind, node_name, pid, tid, app_id, executor_id, rdd_id, partition_id, block_id,
	mem_mode, mem_location, hook_block_id, block_kind, object_graph, chunk, chunks, stage_id, stage_attempt, task_attempt,
	vaddr, length, pages, free_reason, resolve_error, has_faults,
	fault_read, fault_write, fault_exec, fault_major, fault_unclassified, fault_kind, ` + coverageColNames("") + `
FROM records WHERE app_id = ` + quote(q.AppID) + where + ` AND ` + visibleSQL(q.AppID) + `
ORDER BY time_ns, node_name, boot_id, seq, rec_idx`
	if q.Limit > 0 {
		sel += " LIMIT " + strconv.FormatUint(uint64(q.Limit), 10)
	}
	var ferr error
	err := s.c.queryStop(ctx, sel, func(rr *rowReader) bool {
		r := &stratav1.RecordRow{}
		b := &stratav1.SparkBlock{}
		r.TimeUnixNano, r.Access, r.NodeName, r.Pid, r.Tid = rr.i64(), stratav1.AccessKind(rr.i8()), rr.str(), rr.u32(), rr.u32()
		b.AppId, b.ExecutorId, b.RddId, b.Partition, b.BlockId = rr.str(), rr.str(), rr.i32(), rr.i32(), rr.str()
		b.Mode, b.Location, b.HookBlockId = stratav1.MemoryMode(rr.i8()), stratav1.MemoryLocation(rr.i8()), rr.u64()
		b.Kind, b.ObjectGraph, b.Chunk, b.Chunks = stratav1.BlockKind(rr.i8()), rr.boolean(), rr.u32(), rr.u32()
		b.StageId, b.StageAttempt, b.TaskAttemptId = rr.i32(), rr.i32(), rr.i64()
		r.Vaddr, r.Length, r.Pages = rr.u64(), rr.u64(), rr.u64()
		r.FreeReason, r.ResolveError = stratav1.FreeReason(rr.i8()), rr.str()
		hasFaults := rr.boolean()
		f := &stratav1.FaultCounts{Read: rr.u64(), Write: rr.u64(), Exec: rr.u64(), Major: rr.u64(), Unclassified: rr.u64()}
		r.FaultKind = stratav1.FaultKind(rr.i8())
		var cov coverageRow
		cov.read(rr)
		if rr.Err() != nil {
			return false
		}
		cov.setBlock(b)
		r.Block, r.Coverage = b, cov.coverage()
		if hasFaults {
			r.Faults = f
		}
		ferr = fn(r)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("records %s: %w", q.AppID, err)
	}
	return nil
}

// Numa counts distinct resident pages per RDD per NUMA node, as
// DuckDB.Numa does. The server returns each block's latest runs sorted by
// (RDD, node, executor, pid, page size, address); the distinct pages of
// each (RDD, node) are then the union of those ranges per process, which
// one pass sums without expanding a run.
func (s *ClickHouse) Numa(ctx context.Context, appID string) ([]*stratav1.NumaRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("numa: %w", err)
	}
	sel := `SELECT ` + rowSelect + `, rdd_id, node, executor_id, pid, page_size, vaddr, pages FROM (` +
		latestRunsSQL(appID, "rdd_id, "+nodeExpr+" AS node, executor_id, pid, page_size, vaddr, pages",
			" AND pages BETWEEN 1 AND "+strconv.Itoa(stratav1.MaxRunPages)+" AND page_size > 0") + `)
ORDER BY rdd_id, node, executor_id, pid, page_size, vaddr`
	type proc struct {
		rdd, node int32
		exec      string
		pid, ps   uint32
	}
	var (
		out    []*stratav1.NumaRow
		cur    *stratav1.NumaRow
		prev   proc
		covEnd uint64 // end of the ranges of prev seen so far
	)
	err := s.c.query(ctx, sel, func(rr *rowReader) {
		p := proc{rdd: rr.i32(), node: rr.i32(), exec: rr.str(), pid: rr.u32(), ps: rr.u32()}
		vaddr, pages := rr.u64(), rr.u32()
		if rr.Err() != nil {
			return
		}
		if cur == nil || cur.RddId != p.rdd || cur.NumaNode != p.node {
			cur = &stratav1.NumaRow{RddId: p.rdd, NumaNode: p.node}
			out = append(out, cur)
		}
		if p != prev {
			prev, covEnd = p, 0
		}
		end := vaddr + uint64(pages)*uint64(p.ps) // validated: never wraps
		if start := max(vaddr, covEnd); end > start {
			n := (end - start) / uint64(p.ps)
			cur.Pages += n
			cur.Bytes += n * uint64(p.ps)
		}
		covEnd = max(covEnd, end)
	})
	if err != nil {
		return nil, fmt.Errorf("query numa %s: %w", appID, err)
	}
	return out, nil
}

// faults returns the app's fault rows as DuckDB.faults does: the server
// picks each registration's latest counters, and they are summed here per
// block with saturation.
func (s *ClickHouse) faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	sel := `SELECT ` + rowSelect + `, executor_id, argMax(rdd_id, k), argMax(partition_id, k), block_id, pid,
	argMax(fault_read, k), argMax(fault_write, k), argMax(fault_exec, k), argMax(fault_major, k), argMax(fault_unclassified, k)
FROM (
	SELECT executor_id, rdd_id, partition_id, block_id, pid, hook_block_id,
		fault_read, fault_write, fault_exec, fault_major, fault_unclassified,
		(time_ns, node_name, boot_id, seq, rec_idx) AS k
	FROM records WHERE app_id = ` + quote(appID) + ` AND has_faults = 1 AND ` + visibleSQL(appID) + `
) GROUP BY executor_id, block_id, pid, hook_block_id`
	type blockKey struct {
		exec      string
		rdd, part int32
		block     string
		pid       uint32
	}
	sums := map[blockKey]*stratav1.FaultRow{}
	err := s.c.query(ctx, sel, func(rr *rowReader) {
		k := blockKey{exec: rr.str(), rdd: rr.i32(), part: rr.i32(), block: rr.str(), pid: rr.u32()}
		f := stratav1.FaultCounts{Read: rr.u64(), Write: rr.u64(), Exec: rr.u64(), Major: rr.u64(), Unclassified: rr.u64()}
		if rr.Err() != nil {
			return
		}
		row := sums[k]
		if row == nil {
			row = &stratav1.FaultRow{ExecutorId: k.exec, RddId: k.rdd, Partition: k.part, BlockId: k.block, Pid: k.pid,
				Faults: &stratav1.FaultCounts{}}
			sums[k] = row
		}
		t := row.Faults
		t.Read, t.Write, t.Exec = satAdd(t.Read, f.Read), satAdd(t.Write, f.Write), satAdd(t.Exec, f.Exec)
		t.Major, t.Unclassified = satAdd(t.Major, f.Major), satAdd(t.Unclassified, f.Unclassified)
	})
	if err != nil {
		return nil, fmt.Errorf("query faults %s: %w", appID, err)
	}
	out := make([]*stratav1.FaultRow, 0, len(sums))
	for _, r := range sums {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.RddId != b.RddId:
			return a.RddId < b.RddId
		case a.Partition != b.Partition:
			return a.Partition < b.Partition
		case a.ExecutorId != b.ExecutorId:
			return a.ExecutorId < b.ExecutorId
		case a.BlockId != b.BlockId:
			return a.BlockId < b.BlockId
		}
		return a.Pid < b.Pid
	})
	return out, nil
}

// satAdd adds without wrapping: sums saturate at 2^64-1, as in DuckDB's
// queries.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// Faults returns the latest fault counters per block; see DuckDB.Faults.
func (s *ClickHouse) Faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	return s.faults(ctx, appID)
}

// Overhead returns per (executor, pid) workload counters as
// DuckDB.Overhead does: the server picks the latest snapshot of each
// (executor, pid, start); they are combined here.
func (s *ClickHouse) Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	sel := `SELECT ` + rowSelect + `, executor_id, pid, start_ns, argMax(end_ns, k),
	argMax(task_clock_ns, k), argMax(context_switches, k), argMax(cpu_migrations, k), argMax(minor_faults, k), argMax(major_faults, k),
	argMax(cycles, k), argMax(instructions, k), argMax(dtlb_misses, k), argMax(walk_load, k), argMax(walk_store, k), argMax(walk_rdd, k),
	argMax(hw_mask, k), argMax(pmu_status, k)
FROM (
	SELECT *, (end_ns, node_name, boot_id, seq) AS k FROM workloads
	WHERE app_id = ` + quote(appID) + ` AND ` + visibleSQL(appID) + `
) GROUP BY executor_id, pid, start_ns
ORDER BY executor_id, pid, start_ns`
	var (
		out     []*stratav1.OverheadRow
		cur     *stratav1.WorkloadCounters
		hw      [6]uint64
		allHave uint8
		lastEnd int64
	)
	finish := func() {
		if cur == nil {
			return
		}
		ptrs := []**uint64{&cur.Cycles, &cur.Instructions, &cur.DtlbMisses, &cur.WalkCyclesLoad, &cur.WalkCyclesStore, &cur.WalkCyclesRdd}
		for i, p := range ptrs {
			if allHave&(1<<i) != 0 {
				v := hw[i]
				*p = &v
			}
		}
		out = append(out, &stratav1.OverheadRow{Counters: cur})
	}
	err := s.c.query(ctx, sel, func(rr *rowReader) {
		exec, pid, start, end := rr.str(), rr.u32(), rr.i64(), rr.i64()
		var sw [5]uint64
		for i := range sw {
			sw[i] = rr.u64()
		}
		var h [6]uint64
		for i := range h {
			h[i] = rr.u64()
		}
		mask, status := rr.u8(), rr.str()
		if rr.Err() != nil {
			return
		}
		if cur == nil || cur.ExecutorId != exec || cur.Pid != pid {
			finish()
			cur = &stratav1.WorkloadCounters{AppId: appID, ExecutorId: exec, Pid: pid, StartUnixNano: start, EndUnixNano: end}
			hw, allHave, lastEnd = [6]uint64{}, 0x3f, end-1
		}
		cur.StartUnixNano, cur.EndUnixNano = min(cur.StartUnixNano, start), max(cur.EndUnixNano, end)
		cur.TaskClockNs, cur.ContextSwitches = satAdd(cur.TaskClockNs, sw[0]), satAdd(cur.ContextSwitches, sw[1])
		cur.CpuMigrations, cur.MinorFaults, cur.MajorFaults = satAdd(cur.CpuMigrations, sw[2]), satAdd(cur.MinorFaults, sw[3]), satAdd(cur.MajorFaults, sw[4])
		for i := range hw {
			hw[i] = satAdd(hw[i], h[i])
		}
		allHave &= mask
		if end > lastEnd {
			cur.PmuStatus, lastEnd = status, end
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query overhead %s: %w", appID, err)
	}
	finish()
	faults, err := s.faults(ctx, appID)
	if err != nil {
		return nil, err
	}
	finishOverhead(out, faults)
	return out, nil
}

// Hot ranks an app's pages by sampled faults, as DuckDB.Hot does.
func (s *ClickHouse) Hot(ctx context.Context, q HotQuery) ([]*stratav1.HotPage, error) {
	if err := s.reader(q.AppID); err != nil {
		return nil, fmt.Errorf("hot: %w", err)
	}
	where := ""
	if q.RDD != nil {
		where = " AND rdd_id = " + strconv.Itoa(int(*q.RDD))
	}
	sel := `SELECT ` + rowSelect + `, executor_id, pid, rdd_id, partition_id, block_id, hook_block_id, mem_mode, mem_location, vaddr,
	count() AS samples,
	countIf(fault_kind = ` + strconv.Itoa(int(stratav1.FaultKind_FAULT_KIND_READ)) + `),
	countIf(fault_kind = ` + strconv.Itoa(int(stratav1.FaultKind_FAULT_KIND_WRITE)) + `),
	argMax(pfn, time_ns), argMax(numa_node, time_ns), argMax(kpageflags, time_ns),
	countIf(cpu_numa >= 0 AND numa_node >= 0 AND numa_node != cpu_numa)
FROM runs
WHERE app_id = ` + quote(q.AppID) + ` AND access_kind = ` + strconv.Itoa(int(stratav1.AccessKind_ACCESS_KIND_FAULT)) +
		` AND has_faults = 0` + where + ` AND ` + visibleSQL(q.AppID) + `
GROUP BY executor_id, pid, rdd_id, partition_id, block_id, hook_block_id, mem_mode, mem_location, vaddr
ORDER BY samples DESC, pid, vaddr`
	if q.Limit > 0 {
		sel += " LIMIT " + strconv.FormatUint(uint64(q.Limit), 10)
	}
	var out []*stratav1.HotPage
	err := s.c.query(ctx, sel, func(rr *rowReader) {
		p := &stratav1.HotPage{Block: &stratav1.SparkBlock{AppId: q.AppID}}
		b := p.Block
		b.ExecutorId, p.Pid, b.RddId, b.Partition, b.BlockId, b.HookBlockId = rr.str(), rr.u32(), rr.i32(), rr.i32(), rr.str(), rr.u64()
		b.Mode, b.Location, p.Vaddr = stratav1.MemoryMode(rr.i8()), stratav1.MemoryLocation(rr.i8()), rr.u64()
		p.Samples, p.Reads, p.Writes = rr.u64(), rr.u64(), rr.u64()
		p.Pfn, p.NumaNode, p.Kpageflags, p.CrossNode = rr.u64(), rr.i32(), rr.u64(), rr.u64()
		if rr.Err() == nil {
			out = append(out, p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query hot %s: %w", q.AppID, err)
	}
	return out, nil
}

// FaultNodes splits the sampled faults in an app's cached blocks into
// local and remote, as DuckDB.FaultNodes does.
func (s *ClickHouse) FaultNodes(ctx context.Context, appID string) (local, remote uint64, err error) {
	if err := s.reader(appID); err != nil {
		return 0, 0, fmt.Errorf("fault nodes: %w", err)
	}
	cross := chState("CROSS_NODE")
	sel := `SELECT ` + rowSelect + `,
	sum(if(` + cross + ` = 0 AND numa_node >= 0 AND numa_node = cpu_numa, pages, 0)),
	sum(if(` + cross + ` != 0 OR (numa_node >= 0 AND cpu_numa >= 0 AND numa_node != cpu_numa), pages, 0))
FROM runs
WHERE app_id = ` + quote(appID) + ` AND access_kind = ` + strconv.Itoa(int(stratav1.AccessKind_ACCESS_KIND_FAULT)) +
		` AND has_faults = 0 AND rdd_id >= 0 AND mem_mode != ` + strconv.Itoa(int(stratav1.MemoryMode_MEMORY_MODE_EXECUTION)) +
		` AND ` + chState("PRESENT") + ` != 0 AND ` + chState("PFN_HIDDEN") + ` = 0 AND ` + visibleSQL(appID)
	err = s.c.query(ctx, sel, func(rr *rowReader) { local, remote = rr.u64(), rr.u64() })
	if err != nil {
		return 0, 0, fmt.Errorf("query fault nodes %s: %w", appID, err)
	}
	return local, remote, nil
}

// Machines lists the machines holding an app's records with their latest
// known NodeInfo (a field sent as 0 keeps the value known before).
func (s *ClickHouse) Machines(ctx context.Context, appID string) ([]Machine, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("machines: %w", err)
	}
	sel := `SELECT ` + rowSelect + `, node_name, boot_id, numa, if(ps > 0, ps, rps), mem FROM (
	SELECT node_name, boot_id, max(page_size) AS rps FROM records
	WHERE app_id = ` + quote(appID) + ` AND ` + visibleSQL(appID) + ` GROUP BY node_name, boot_id
) ANY LEFT JOIN (
	SELECT node_name, boot_id,
		argMaxIf(numa_nodes, updated_ns, numa_nodes > 0) AS numa,
		argMaxIf(page_size, updated_ns, page_size > 0) AS ps,
		argMaxIf(mem_total_bytes, updated_ns, mem_total_bytes > 0) AS mem
	FROM nodes GROUP BY node_name, boot_id
) USING (node_name, boot_id)
ORDER BY node_name, boot_id`
	var out []Machine
	err := s.c.query(ctx, sel, func(rr *rowReader) {
		m := Machine{NodeName: rr.str(), BootID: rr.str(), NUMANodes: rr.u32(), PageSize: rr.u32(), MemTotalBytes: rr.u64()}
		if rr.Err() == nil {
			out = append(out, m)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query machines %s: %w", appID, err)
	}
	return out, nil
}
