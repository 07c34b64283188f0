package store

import (
	"context"
	"database/sql"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// cachedScope selects the lifecycle records (alloc $2, read $3, write $4,
// free $5, move $6) of app $1's cached RDD blocks: rdd_id >= 0 and not
// execution memory ($7; a Tungsten page carries its task's RDD). Records
// written before modes were stored read as unspecified, i.e. cached.
const cachedScope = `app_id = $1 AND rdd_id >= 0 AND coalesce(mem_mode, 0) <> $7 AND access_kind IN ($2, $3, $4, $5, $6)`

// recCTE selects the records of scope as rec, with holds: whether the
// record says what its buffer holds (holdsSQL).
func recCTE(scope string) string {
	return `
WITH rec AS (
	SELECT batch_id, rec_idx, time_ns, access_kind, executor_id, pid, rdd_id, partition_id, block_id,
		coalesce(chunk, 0) AS chunk, hook_block_id, length, pages, page_size,
		coalesce(free_reason, 0) AS free_reason, coalesce(object_graph, false) AS object_graph,
		` + holdsSQL(scope) + ` AS holds
	FROM records
	WHERE ` + scope + `
)`
}

// cachedRecsCTE is recCTE of the cached RDD blocks (cachedScope).
var cachedRecsCTE = recCTE(cachedScope)

// lastLiveCTE extends recCTE(scope) with last: for each buffer of a block
// (executor, pid, block_id, chunk), its latest registration (the hook id
// of its latest record), and of that registration the latest records that
// hold (holdsSQL: pages, no free, resolved ones preferred) — the buffer as
// last resolved while it was live (several records when an agent split
// one too large for a batch).
func lastLiveCTE(scope string) string {
	return recCTE(scope) + `, reg AS (
	SELECT executor_id, pid, block_id, chunk, arg_max(hook_block_id, time_ns) AS hook
	FROM rec GROUP BY executor_id, pid, block_id, chunk
), withpages AS (
	SELECT r.*, dense_rank() OVER (PARTITION BY r.executor_id, r.pid, r.block_id, r.chunk ORDER BY r.time_ns DESC) AS rk
	FROM rec r JOIN reg g ON r.executor_id = g.executor_id AND r.pid = g.pid AND r.block_id = g.block_id
		AND r.chunk = g.chunk AND r.hook_block_id = g.hook
	WHERE r.holds
), last AS (
	SELECT * FROM withpages WHERE rk = 1
)`
}

// liveCTE extends lastLiveCTE(scope) with latest: the (batch_id,
// rec_idx) of last's records of the buffers still live, whose latest
// records do not include a free.
func liveCTE(scope string) string {
	return lastLiveCTE(scope) + `, ended AS (
	SELECT executor_id, pid, block_id, chunk FROM (
		SELECT *, rank() OVER (PARTITION BY executor_id, pid, block_id, chunk ORDER BY time_ns DESC) AS rk FROM rec)
	WHERE rk = 1 GROUP BY executor_id, pid, block_id, chunk HAVING bool_or(access_kind = $5)
), latest AS (
	SELECT l.batch_id, l.rec_idx FROM last l ANTI JOIN ended e
		ON l.executor_id = e.executor_id AND l.pid = e.pid AND l.block_id = e.block_id AND l.chunk = e.chunk
)`
}

// rddSQL: per RDD, the blocks and accesses of every registration, and the
// pages of each buffer as last resolved (lastLiveCTE); its bytes and what
// they hold come from lastBuffersSQL (resolved.go). A read or
// write is counted once per block however many buffers (chunks) it covers:
// chunk 0's records, one per (process, registration, time). Evictions are
// counted the same way ($8 = FREE_REASON_EVICTED); a move once per buffer
// (each chunk is its own array for the GC to move). A block is live when
// one of its buffers' latest records is not a free.
var rddSQL = withStates(lastLiveCTE(cachedScope) + `, acc AS (
	SELECT rdd_id,
		count(DISTINCT (executor_id, block_id)) AS blocks,
		count(DISTINCT partition_id) AS partitions,
		count(DISTINCT CASE WHEN access_kind = $3 AND chunk = 0 THEN (executor_id, pid, hook_block_id, time_ns) END) AS reads,
		count(DISTINCT CASE WHEN access_kind IN ($2, $4) AND chunk = 0 THEN (executor_id, pid, hook_block_id, time_ns) END) AS writes,
		count(DISTINCT CASE WHEN access_kind = $5 AND free_reason = $8 AND chunk = 0 THEN (executor_id, pid, hook_block_id) END) AS evicted,
		count(DISTINCT CASE WHEN access_kind = $6 THEN (executor_id, pid, hook_block_id, time_ns) END) AS moves,
		bool_or(object_graph) AS object_graph,
		max(page_size) AS page_size
	FROM rec GROUP BY rdd_id
), latest AS (
	SELECT rdd_id, executor_id, block_id, bool_or(access_kind = $5) AS freed
	FROM (SELECT *, rank() OVER (PARTITION BY executor_id, pid, block_id, chunk ORDER BY time_ns DESC) AS rk FROM rec)
	WHERE rk = 1 GROUP BY rdd_id, executor_id, pid, block_id, chunk
), live AS (
	SELECT rdd_id, count(DISTINCT (executor_id, block_id)) AS blocks FROM latest WHERE NOT freed GROUP BY rdd_id
), pages AS (
	SELECT l.rdd_id,
		sum(CASE WHEN r.state & {UNMAPPED} = 0 THEN r.pages ELSE 0 END) AS pages,
		sum(CASE WHEN r.state & {PRESENT} <> 0 THEN r.pages ELSE 0 END) AS present,
		sum(CASE WHEN r.state & {SWAPPED} <> 0 THEN r.pages ELSE 0 END) AS swapped,
		sum(CASE WHEN r.state & {PRESENT} <> 0 AND r.state & {THP} <> 0 THEN r.pages ELSE 0 END) AS thp
	FROM last l JOIN runs r USING (batch_id, rec_idx)
	GROUP BY l.rdd_id
)
SELECT a.rdd_id, a.blocks::UBIGINT, a.partitions::UBIGINT,
	coalesce(p.pages, 0)::UBIGINT, coalesce(p.present, 0)::UBIGINT,
	coalesce(p.swapped, 0)::UBIGINT, coalesce(p.thp, 0)::UBIGINT,
	a.reads::UBIGINT, a.writes::UBIGINT, a.evicted::UBIGINT, a.object_graph, coalesce(a.page_size, 0)::UINTEGER,
	coalesce(v.blocks, 0)::UBIGINT, a.moves::UBIGINT
FROM acc a LEFT JOIN pages p USING (rdd_id) LEFT JOIN live v USING (rdd_id)
ORDER BY a.rdd_id`)

// rddNodesSQL: present pages of each RDD's buffers as last resolved, per
// NUMA node (-1 when the PFN is hidden).
var rddNodesSQL = withStates(lastLiveCTE(cachedScope) + `
SELECT l.rdd_id, CASE WHEN r.state & {PFN_HIDDEN} <> 0 THEN -1 ELSE r.numa_node END AS node, sum(r.pages)::UBIGINT
FROM last l JOIN runs r USING (batch_id, rec_idx)
WHERE r.state & {PRESENT} <> 0
GROUP BY 1, 2 ORDER BY 1, 2`)

// rddFaultsSQL: per RDD, the kernel's fault counters of its cached blocks
// (the latest counters of each registration, as faultsSQL takes them —
// whichever record carries them: the agent's periodic counter records, or
// the final counters on a free — summed, saturating) and the sampled
// faults ($2 = FAULT, records without counters).
var rddFaultsSQL = withStates(`
WITH f AS (
	SELECT rdd_id, has_faults, fault_read, fault_write, fault_exec, fault_major, fault_unclassified,
		row_number() OVER (PARTITION BY executor_id, block_id, pid, hook_block_id, has_faults
			ORDER BY time_ns DESC, batch_id DESC, rec_idx DESC) AS rn
	FROM records
	WHERE app_id = $1 AND (has_faults OR access_kind = $2) AND rdd_id >= 0 AND coalesce(mem_mode, 0) <> $3
)
SELECT rdd_id,
	least(coalesce(sum(fault_read) FILTER (WHERE has_faults AND rn = 1), 0), {UBIGINT_MAX})::UBIGINT,
	least(coalesce(sum(fault_write) FILTER (WHERE has_faults AND rn = 1), 0), {UBIGINT_MAX})::UBIGINT,
	least(coalesce(sum(fault_exec) FILTER (WHERE has_faults AND rn = 1), 0), {UBIGINT_MAX})::UBIGINT,
	least(coalesce(sum(fault_major) FILTER (WHERE has_faults AND rn = 1), 0), {UBIGINT_MAX})::UBIGINT,
	least(coalesce(sum(fault_unclassified) FILTER (WHERE has_faults AND rn = 1), 0), {UBIGINT_MAX})::UBIGINT,
	count(*) FILTER (WHERE NOT has_faults)::UBIGINT
FROM f GROUP BY rdd_id ORDER BY rdd_id`)

// RDDs returns an app's RDDs as RddReport describes them: the blocks and
// accesses of every registration, and each block buffer's pages as last
// resolved while it was live, so a finished application still shows what
// its RDDs held.
func (s *DuckDB) RDDs(ctx context.Context, appID string) ([]*stratav1.RddReport, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("rdds: %w", err)
	}
	exec := int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION)
	life := []any{appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove, exec}
	rows, err := s.db.QueryContext(ctx, rddSQL, append(life, int8(stratav1.FreeReason_FREE_REASON_EVICTED))...)
	if err != nil {
		return nil, fmt.Errorf("query rdds %s: %w", appID, err)
	}
	out, err := collect(rows, func(sc func(...any) error) (*stratav1.RddReport, error) {
		r := &stratav1.RddReport{Faults: &stratav1.FaultCounts{}}
		return r, sc(&r.RddId, &r.Blocks, &r.Partitions, &r.Pages, &r.Present, &r.Swapped, &r.Thp,
			&r.Reads, &r.Writes, &r.Evicted, &r.ObjectGraph, &r.PageSize, &r.LiveBlocks, &r.Moves)
	})
	if err != nil {
		return nil, err
	}
	byRDD := make(map[int32]*stratav1.RddReport, len(out))
	for _, r := range out {
		byRDD[r.RddId] = r
	}
	rows, err = s.db.QueryContext(ctx, rddNodesSQL, life...)
	if err != nil {
		return nil, fmt.Errorf("query rdd nodes %s: %w", appID, err)
	}
	type nodeRow struct {
		rdd  int32
		node int32
		n    uint64
	}
	nodes, err := collect(rows, func(sc func(...any) error) (nodeRow, error) {
		var n nodeRow
		return n, sc(&n.rdd, &n.node, &n.n)
	})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if r := byRDD[n.rdd]; r != nil {
			r.Nodes = append(r.Nodes, &stratav1.NodePages{NumaNode: n.node, Pages: n.n})
		}
	}
	rows, err = s.db.QueryContext(ctx, rddFaultsSQL, appID, int8(stratav1.AccessKind_ACCESS_KIND_FAULT), exec)
	if err != nil {
		return nil, fmt.Errorf("query rdd faults %s: %w", appID, err)
	}
	type faultRow struct {
		rdd     int32
		f       *stratav1.FaultCounts
		sampled uint64
	}
	faults, err := collect(rows, func(sc func(...any) error) (faultRow, error) {
		f := faultRow{f: &stratav1.FaultCounts{}}
		return f, sc(&f.rdd, &f.f.Read, &f.f.Write, &f.f.Exec, &f.f.Major, &f.f.Unclassified, &f.sampled)
	})
	if err != nil {
		return nil, err
	}
	for _, f := range faults {
		if r := byRDD[f.rdd]; r != nil {
			r.Faults, r.SampledFaults = f.f, f.sampled
		}
	}
	bufs, err := s.lastBuffers(ctx, appID, nil)
	if err != nil {
		return nil, err
	}
	setResolved(byRDD, bufs)
	return out, nil
}

// lastBuffersSQL lists each buffer of app $1's cached blocks as last
// resolved (lastLiveCTE's last, split records taken together), of every
// RDD ($8 NULL) or of one; see lastBuffer.
var lastBuffersSQL = lastLiveCTE(cachedScope) + `
SELECT l.rdd_id, l.partition_id, l.executor_id, l.pid, l.block_id, l.chunk, l.hook_block_id,
	` + lastBufferCols("r.", func(e string) string { return "sum(" + e + ")::UBIGINT" }) + `
FROM last l JOIN records r USING (batch_id, rec_idx)
WHERE $8::INTEGER IS NULL OR l.rdd_id = $8
GROUP BY l.rdd_id, l.partition_id, l.executor_id, l.pid, l.block_id, l.chunk, l.hook_block_id
ORDER BY l.rdd_id, l.partition_id, l.executor_id, l.block_id, l.pid, l.chunk`

// lastBuffers returns the buffers of app's cached blocks (of one RDD when
// rdd is set) as last resolved; see lastBuffersSQL.
func (s *DuckDB) lastBuffers(ctx context.Context, appID string, rdd *int32) ([]lastBuffer, error) {
	var r any
	if rdd != nil {
		r = *rdd
	}
	rows, err := s.db.QueryContext(ctx, lastBuffersSQL, appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove,
		int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION), r)
	if err != nil {
		return nil, fmt.Errorf("query last buffers %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (lastBuffer, error) {
		var b lastBuffer
		return b, sc(b.dest()...)
	})
}

// heldStepsCTE extends cachedRecsCTE with step: what each buffer of a
// cached block (executor, pid, block_id, chunk) holds from each of its
// records on, and the change against its previous record. A record that
// holds (holdsSQL) holds the present pages (and bytes) it resolved; the
// others say nothing and are skipped — no pages (a range that could not
// be resolved), or the array of references of a block whose registration
// is walked; a free holds nothing; split records of one time are summed. A new registration
// of a buffer takes the place of the old one. Running sums of d_pages and
// d_bytes in time order, over any grouping of buffers (an RDD, a process),
// are what that group held: Occupation and Occupancy are both built on it.
var heldStepsCTE = cachedRecsCTE + `, present AS (
	SELECT batch_id, rec_idx,
		sum(CASE WHEN state & {PRESENT} <> 0 THEN pages ELSE 0 END)::UBIGINT AS pages,
		sum(CASE WHEN state & {PRESENT} <> 0 THEN pages::UBIGINT * page_size ELSE 0 END) AS bytes
	FROM runs WHERE app_id = $1 GROUP BY batch_id, rec_idx
), state AS (
	SELECT r.rdd_id, r.executor_id, r.pid, r.block_id, r.chunk, r.time_ns,
		any_value(b.node_name) AS node_name, any_value(b.boot_id) AS boot_id,
		sum(CASE WHEN r.access_kind = $5 THEN 0 ELSE coalesce(p.pages, 0) END)::HUGEINT AS pages,
		sum(CASE WHEN r.access_kind = $5 THEN 0 ELSE coalesce(p.bytes, 0) END)::HUGEINT AS bytes
	FROM rec r JOIN batches b USING (batch_id) LEFT JOIN present p USING (batch_id, rec_idx)
	WHERE r.access_kind = $5 OR r.holds
	GROUP BY r.rdd_id, r.executor_id, r.pid, r.block_id, r.chunk, r.time_ns
), step AS (
	SELECT *, pages - coalesce(lag(pages) OVER w, 0) AS d_pages, bytes - coalesce(lag(bytes) OVER w, 0) AS d_bytes
	FROM state
	WINDOW w AS (PARTITION BY executor_id, pid, block_id, chunk ORDER BY time_ns)
)`

// occupationSQL: for each process of app $1, the peak over time of the
// present bytes of its cached RDD blocks: the running sum of heldStepsCTE's
// steps per process, in time order; its maximum is the peak (the first
// time it was reached).
var occupationSQL = withStates(heldStepsCTE + `, level AS (
	SELECT executor_id, pid, time_ns, any_value(node_name) AS node_name, any_value(boot_id) AS boot_id,
		sum(sum(d_bytes)) OVER (PARTITION BY executor_id, pid ORDER BY time_ns) AS held
	FROM step GROUP BY executor_id, pid, time_ns
), peak AS (
	SELECT executor_id, pid, node_name, boot_id, held AS peak, time_ns AS peak_ns FROM (
		SELECT *, row_number() OVER (PARTITION BY executor_id, pid ORDER BY held DESC, time_ns) AS rn FROM level)
	WHERE rn = 1
), mem AS (
	SELECT executor_id, pid, max(hwm_bytes) AS hwm, count(*) AS samples, any_value(node_name) AS node_name
	FROM process_memory WHERE app_id = $1 GROUP BY executor_id, pid
), procs AS (
	SELECT coalesce(p.executor_id, m.executor_id) AS executor_id, coalesce(p.pid, m.pid) AS pid,
		coalesce(p.node_name, m.node_name) AS node_name, p.boot_id,
		coalesce(p.peak, 0) AS peak, coalesce(p.peak_ns, 0) AS peak_ns, coalesce(m.hwm, 0) AS hwm, coalesce(m.samples, 0) AS samples
	FROM peak p FULL OUTER JOIN mem m ON p.executor_id = m.executor_id AND p.pid = m.pid
)
SELECT o.executor_id, o.pid, o.node_name, greatest(o.peak, 0)::UBIGINT, o.peak_ns,
	o.hwm::UBIGINT,
	coalesce(
		(SELECT arg_max(pm.rss_bytes, pm.time_ns) FROM process_memory pm
			WHERE pm.app_id = $1 AND pm.executor_id = o.executor_id AND pm.pid = o.pid AND pm.time_ns <= o.peak_ns),
		(SELECT arg_min(pm.rss_bytes, pm.time_ns) FROM process_memory pm
			WHERE pm.app_id = $1 AND pm.executor_id = o.executor_id AND pm.pid = o.pid), 0)::UBIGINT,
	coalesce((SELECT max(n.mem_total_bytes) FROM nodes n
		WHERE n.node_name = o.node_name AND (o.boot_id IS NULL OR n.boot_id = o.boot_id)), 0)::UBIGINT,
	o.samples::UINTEGER
FROM procs o ORDER BY o.executor_id, o.pid`)

// Occupation returns, per process of an app, the peak of the resident
// bytes its cached RDD blocks held and that peak's share of the process's
// peak resident set and of its node's memory; see OccupationRow.
func (s *DuckDB) Occupation(ctx context.Context, appID string) ([]*stratav1.OccupationRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("occupation: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, occupationSQL, appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove,
		int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION))
	if err != nil {
		return nil, fmt.Errorf("query occupation %s: %w", appID, err)
	}
	out, err := collect(rows, func(sc func(...any) error) (*stratav1.OccupationRow, error) {
		o := &stratav1.OccupationRow{}
		var node sql.NullString
		err := sc(&o.ExecutorId, &o.Pid, &node, &o.PeakRddBytes, &o.PeakTimeUnixNano, &o.PeakRssBytes, &o.RssAtPeakBytes,
			&o.MemTotalBytes, &o.RssSamples)
		o.NodeName = node.String
		return o, err
	})
	if err != nil {
		return nil, err
	}
	for _, o := range out {
		SetOccupationShares(o)
	}
	return out, nil
}

// SetOccupationShares sets of_rss and of_node from the row's byte counts,
// leaving each absent when its divisor is unknown (0): a backend computes
// the bytes, and the shares the same way.
func SetOccupationShares(o *stratav1.OccupationRow) {
	o.OfRss, o.OfNode = nil, nil
	if o.GetPeakRssBytes() > 0 {
		v := float64(o.GetPeakRddBytes()) / float64(o.GetPeakRssBytes())
		o.OfRss = &v
	}
	if o.GetMemTotalBytes() > 0 {
		v := float64(o.GetPeakRddBytes()) / float64(o.GetMemTotalBytes())
		o.OfNode = &v
	}
}
