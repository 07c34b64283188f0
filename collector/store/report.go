package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// RDDs (`strata report` and the web UI's RDD table): per cached RDD, its
// blocks and hook accesses over every registration (a read or write counted
// once per block, not per buffer: chunk 0's records, one per (process,
// registration, time); evictions likewise; a move once per buffer, since
// each chunk is its own array for the GC to move), the blocks still live (a
// buffer's latest records are not a free), each buffer's pages as last
// resolved while it was live (lastPages), pages per NUMA node, evictions,
// fault counters and samples (rddFaults); and what those buffers hold
// (resolved.go): their coverage bytes per resolution against Spark's size
// of each block, counted once however many buffers it has. Execution
// memory (Tungsten pages carry their task's RDD) is never an RDD's.

// liveBlocksSQL counts the live blocks (executor_id, block_id) of the
// records scope selects per group (a column): a block is live when one
// of its buffers' latest records is not a free.
func liveBlocksSQL(d dialect, group, scope string) string {
	return d.sel(group+`, `+d.uniqIf("executor_id, block_id", "freed = 0")) + ` FROM (
	SELECT ` + group + `, executor_id, pid, block_id, chunk, ` + d.argMax() + `(f, time_ns) AS freed FROM (
		SELECT ` + group + `, executor_id, pid, block_id, chunk, time_ns, max(CASE WHEN access_kind = ` + itoa(accessFree) + ` THEN 1 ELSE 0 END) AS f
		FROM records WHERE ` + scope + ` GROUP BY ` + group + `, executor_id, pid, block_id, chunk, time_ns
	) GROUP BY ` + group + `, executor_id, pid, block_id, chunk
) GROUP BY ` + group
}

// RDDs summarises an app's cached RDDs, ordered by RDD.
func (q *querier) RDDs(ctx context.Context, appID string) ([]*stratav1.RddReport, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("rdds: %w", err)
	}
	d := q.src
	kind := func(k int8) string { return "access_kind = " + itoa(k) }
	access := "executor_id, pid, hook_block_id, time_ns"
	cached := cachedScope(d, appID)
	sel := d.sel(`rdd_id, `+d.uniq("executor_id, block_id")+`, `+d.uniq("partition_id")+`,
	`+d.uniqIf(access, kind(accessRead)+` AND chunk = 0`)+`,
	`+d.uniqIf(access, `(`+kind(accessAlloc)+` OR `+kind(accessWrite)+`) AND chunk = 0`)+`,
	`+d.uniqIf("executor_id, pid, hook_block_id", kind(accessFree)+` AND chunk = 0 AND free_reason = `+
		itoa(int8(stratav1.FreeReason_FREE_REASON_EVICTED)))+`,
	`+d.uniqIf(access, kind(accessMove))+`, max(object_graph), max(page_size)`) + `
FROM records WHERE ` + cached + ` GROUP BY rdd_id ORDER BY rdd_id`
	var out []*stratav1.RddReport
	byRDD := map[int32]*stratav1.RddReport{}
	err := q.each(ctx, sel, func(r row) {
		x := &stratav1.RddReport{RddId: r.i32(), Blocks: r.u64(), Partitions: r.u64(), Reads: r.u64(), Writes: r.u64(),
			Evicted: r.u64(), Moves: r.u64(), ObjectGraph: r.boolean(), PageSize: r.u32(), Faults: &stratav1.FaultCounts{}}
		out = append(out, x)
		byRDD[x.RddId] = x
	})
	if err != nil {
		return nil, fmt.Errorf("query rdds %s: %w", appID, err)
	}
	err = q.each(ctx, liveBlocksSQL(d, "rdd_id", cached), func(r row) {
		rdd, n := r.i32(), r.u64()
		if x := byRDD[rdd]; x != nil {
			x.LiveBlocks = n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query live blocks %s: %w", appID, err)
	}
	pages, err := q.lastPages(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		x := byRDD[p.RDDID]
		if x == nil {
			continue
		}
		x.Pages, x.Present, x.Swapped, x.Thp = x.Pages+p.Pages, x.Present+p.Present, x.Swapped+p.Swapped, x.Thp+p.thpPresent
		if p.Present > 0 {
			x.Nodes = append(x.Nodes, &stratav1.NodePages{NumaNode: p.Node, Pages: p.Present})
		}
	}
	if err := q.rddFaults(ctx, appID, byRDD); err != nil {
		return nil, err
	}
	bufs, err := q.lastBuffers(ctx, appID, nil, 0)
	if err != nil {
		return nil, err
	}
	setResolved(byRDD, bufs)
	return out, nil
}

// lastBuffers returns the buffers of app's cached blocks (of one RDD when
// rdd is set) as last resolved (lastRecsWhere, split records taken
// together), or with at not 0 the buffers live at that moment as their
// latest records that hold by then resolved them (atRecsWhere), ordered by
// RDD, partition, executor, block, pid and chunk.
func (q *querier) lastBuffers(ctx context.Context, app string, rdd *int32, at int64) ([]lastBuffer, error) {
	d := q.src
	scope := cachedScope(d, app)
	if rdd != nil {
		scope += " AND rdd_id = " + itoa(*rdd)
	}
	recs := lastRecsWhere(d, scope)
	if at != 0 {
		recs = atRecsWhere(d, scope, at)
	}
	sel := d.sel(`rdd_id, partition_id, executor_id, pid, block_id, chunk, hook_block_id, `+lastBufferCols) + `
FROM records WHERE ` + recs + `
GROUP BY rdd_id, partition_id, executor_id, pid, block_id, chunk, hook_block_id
ORDER BY rdd_id, partition_id, executor_id, block_id, pid, chunk`
	var out []lastBuffer
	err := q.each(ctx, sel, func(r row) {
		var b lastBuffer
		b.read(r)
		out = append(out, b)
	})
	if err != nil {
		return nil, fmt.Errorf("query last buffers %s: %w", app, err)
	}
	return out, nil
}
