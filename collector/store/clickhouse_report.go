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

// The RDD questions on ClickHouse — RDDs, Cached, Occupancy and
// Occupation — with DuckDB's answers (report.go, summary.go). 18.16 has no
// window functions: "each buffer's latest registration and its last
// record with pages" is a chain of IN subqueries (chLastRecsWhere), and
// what a buffer held over time comes back as one row per buffer and time
// (chHeldSteps), whose changes and running sums are computed here.

// chCachedWhere selects app's visible lifecycle records of cached RDD
// blocks, as cachedScope does: rdd_id >= 0, not execution memory.
func chCachedWhere(app string) string {
	return `app_id = ` + quote(app) + ` AND access_kind IN ` + lifecycleKinds + ` AND rdd_id >= 0 AND mem_mode != ` +
		strconv.Itoa(int(stratav1.MemoryMode_MEMORY_MODE_EXECUTION)) + ` AND ` + visibleSQL(app)
}

// chLastRecsWhere selects, among the records of scope, lastLiveCTE's
// "last": for each buffer (executor_id, pid, block_id, chunk) its latest
// registration (the hook id of its latest record), and of that
// registration the latest records that hold (holdsSQL).
func chLastRecsWhere(scope string) string {
	held := scope + ` AND ` + holdsSQL(scope)
	return held + ` AND (executor_id, pid, block_id, chunk, hook_block_id, time_ns) IN (
	SELECT executor_id, pid, block_id, chunk, hook_block_id, max(time_ns) FROM records
	WHERE ` + held + ` AND (executor_id, pid, block_id, chunk, hook_block_id) IN (
		SELECT executor_id, pid, block_id, chunk, argMax(hook_block_id, time_ns) FROM records
		WHERE ` + scope + ` GROUP BY executor_id, pid, block_id, chunk)
	GROUP BY executor_id, pid, block_id, chunk, hook_block_id)`
}

// chLiveRecsWhere selects chLastRecsWhere's records of the buffers still
// live, whose latest records do not include a free (liveCTE's latest).
func chLiveRecsWhere(scope string) string {
	return chLastRecsWhere(scope) + ` AND (executor_id, pid, block_id, chunk) NOT IN (
	SELECT executor_id, pid, block_id, chunk FROM records
	WHERE ` + scope + ` AND access_kind = ` + strconv.Itoa(int(accessFree)) + ` AND (executor_id, pid, block_id, chunk, time_ns) IN (
		SELECT executor_id, pid, block_id, chunk, max(time_ns) FROM records
		WHERE ` + scope + ` GROUP BY executor_id, pid, block_id, chunk))`
}

// lastBuffers returns the buffers of app's cached blocks (of one RDD when
// rdd is set) as last resolved, as DuckDB's lastBuffersSQL lists them.
func (s *ClickHouse) lastBuffers(ctx context.Context, app string, rdd *int32) ([]lastBuffer, error) {
	scope := chCachedWhere(app)
	if rdd != nil {
		scope += " AND rdd_id = " + strconv.Itoa(int(*rdd))
	}
	sel := `SELECT ` + rowSelect + `, rdd_id, partition_id, executor_id, pid, block_id, chunk, hook_block_id,
	` + lastBufferCols("", func(e string) string { return "sum(" + e + ")" }) + `
FROM records WHERE ` + chLastRecsWhere(scope) + `
GROUP BY rdd_id, partition_id, executor_id, pid, block_id, chunk, hook_block_id
ORDER BY rdd_id, partition_id, executor_id, block_id, pid, chunk`
	var out []lastBuffer
	err := s.c.query(ctx, sel, func(r *rowReader) {
		var b lastBuffer
		b.read(r)
		if r.Err() == nil {
			out = append(out, b)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query last buffers %s: %w", app, err)
	}
	return out, nil
}

// lastPages sums the runs of each buffer as last resolved while live
// (chLastRecsWhere) per RDD and node (nodeExpr): the pages Cached counts
// and RDDs splits by node.
type lastPages struct {
	CachedPages
	thpPresent uint64 // present pages of a THP (RDDs' thp; Cached counts THP in any state)
}

func (s *ClickHouse) lastPages(ctx context.Context, app string) ([]lastPages, error) {
	present := chState("PRESENT") + ` != 0`
	sel := `SELECT ` + rowSelect + `, rdd_id, ` + nodeExpr + ` AS node,
	sum(if(` + chState("UNMAPPED") + ` = 0, pages, 0)), sum(if(` + present + `, pages, 0)),
	sum(if(` + chState("SWAPPED") + ` != 0, pages, 0)), sum(if(` + chState("THP") + ` != 0, pages, 0)),
	sum(if(` + present + ` AND ` + chState("THP") + ` != 0, pages, 0))
FROM runs WHERE app_id = ` + quote(app) + ` AND ` + visibleSQL(app) + ` AND (uid, rec_idx) IN (
	SELECT uid, rec_idx FROM records WHERE ` + chLastRecsWhere(chCachedWhere(app)) + `)
GROUP BY rdd_id, node ORDER BY rdd_id, node`
	var out []lastPages
	err := s.c.query(ctx, sel, func(r *rowReader) {
		var p lastPages
		p.RDDID, p.Node, p.Pages, p.Present, p.Swapped, p.THP, p.thpPresent = r.i32(), r.i32(), r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
		if r.Err() == nil {
			out = append(out, p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query last pages %s: %w", app, err)
	}
	return out, nil
}

// Cached returns an app's cached pages per RDD per node; see CachedPages.
func (s *ClickHouse) Cached(ctx context.Context, appID string) ([]CachedPages, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("cached pages: %w", err)
	}
	rows, err := s.lastPages(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]CachedPages, len(rows))
	for i, r := range rows {
		out[i] = r.CachedPages
	}
	return out, nil
}

// RDDs returns an app's RDDs as RddReport describes them, as DuckDB.RDDs
// does: the accesses and blocks of every registration (accesses counted as
// distinct (process, registration, time) of chunk 0), live blocks, the
// pages of each buffer as last resolved while live and what its bytes hold
// (lastBuffers, setResolved), and the fault counters.
func (s *ClickHouse) RDDs(ctx context.Context, appID string) ([]*stratav1.RddReport, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("rdds: %w", err)
	}
	kind := func(ks ...int8) string {
		n := make([]string, len(ks))
		for i, k := range ks {
			n[i] = strconv.Itoa(int(k))
		}
		return "access_kind IN (" + strings.Join(n, ", ") + ")"
	}
	access := "executor_id, pid, hook_block_id, time_ns"
	cached := chCachedWhere(appID)
	sel := `SELECT ` + rowSelect + `, rdd_id, uniqExact(executor_id, block_id), uniqExact(partition_id),
	uniqExactIf(` + access + `, ` + kind(accessRead) + ` AND chunk = 0),
	uniqExactIf(` + access + `, ` + kind(accessAlloc, accessWrite) + ` AND chunk = 0),
	uniqExactIf(executor_id, pid, hook_block_id, ` + kind(accessFree) + ` AND chunk = 0 AND free_reason = ` +
		strconv.Itoa(int(stratav1.FreeReason_FREE_REASON_EVICTED)) + `),
	uniqExactIf(` + access + `, ` + kind(accessMove) + `), max(object_graph), max(page_size)
FROM records WHERE ` + cached + ` GROUP BY rdd_id ORDER BY rdd_id`
	var out []*stratav1.RddReport
	byRDD := map[int32]*stratav1.RddReport{}
	err := s.c.query(ctx, sel, func(r *rowReader) {
		x := &stratav1.RddReport{RddId: r.i32(), Blocks: r.u64(), Partitions: r.u64(), Reads: r.u64(), Writes: r.u64(),
			Evicted: r.u64(), Moves: r.u64(), ObjectGraph: r.boolean(), PageSize: r.u32(), Faults: &stratav1.FaultCounts{}}
		if r.Err() == nil {
			out = append(out, x)
			byRDD[x.RddId] = x
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query rdds %s: %w", appID, err)
	}
	// A block is live when one of its buffers' latest records is not a
	// free.
	live := `SELECT ` + rowSelect + `, rdd_id, uniqExactIf(executor_id, block_id, freed = 0) FROM (
	SELECT rdd_id, executor_id, pid, block_id, chunk, argMax(f, time_ns) AS freed FROM (
		SELECT rdd_id, executor_id, pid, block_id, chunk, time_ns, max(` + kind(accessFree) + `) AS f
		FROM records WHERE ` + cached + ` GROUP BY rdd_id, executor_id, pid, block_id, chunk, time_ns
	) GROUP BY rdd_id, executor_id, pid, block_id, chunk
) GROUP BY rdd_id`
	err = s.c.query(ctx, live, func(r *rowReader) {
		rdd, n := r.i32(), r.u64()
		if x := byRDD[rdd]; x != nil && r.Err() == nil {
			x.LiveBlocks = n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query live blocks %s: %w", appID, err)
	}
	pages, err := s.lastPages(ctx, appID)
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
	if err := s.rddFaults(ctx, appID, byRDD); err != nil {
		return nil, err
	}
	bufs, err := s.lastBuffers(ctx, appID, nil)
	if err != nil {
		return nil, err
	}
	setResolved(byRDD, bufs)
	return out, nil
}

// rddFaults sets each RDD's fault counters and samples, as rddFaultsSQL
// does: the latest counters of each registration of its cached blocks,
// from whichever record carries them, summed with saturation here; and the
// sampled faults (FAULT records without counters).
func (s *ClickHouse) rddFaults(ctx context.Context, appID string, byRDD map[int32]*stratav1.RddReport) error {
	has := "has_faults = 1"
	sel := `SELECT ` + rowSelect + `, rdd_id,
	argMaxIf(fault_read, k, ` + has + `), argMaxIf(fault_write, k, ` + has + `), argMaxIf(fault_exec, k, ` + has + `),
	argMaxIf(fault_major, k, ` + has + `), argMaxIf(fault_unclassified, k, ` + has + `), countIf(has_faults = 0)
FROM (
	SELECT rdd_id, executor_id, block_id, pid, hook_block_id, has_faults,
		fault_read, fault_write, fault_exec, fault_major, fault_unclassified,
		(time_ns, node_name, boot_id, seq, rec_idx) AS k
	FROM records
	WHERE app_id = ` + quote(appID) + ` AND (has_faults = 1 OR access_kind = ` + strconv.Itoa(int(stratav1.AccessKind_ACCESS_KIND_FAULT)) + `)
		AND rdd_id >= 0 AND mem_mode != ` + strconv.Itoa(int(stratav1.MemoryMode_MEMORY_MODE_EXECUTION)) + ` AND ` + visibleSQL(appID) + `
) GROUP BY rdd_id, executor_id, block_id, pid, hook_block_id`
	err := s.c.query(ctx, sel, func(r *rowReader) {
		rdd := r.i32()
		f := stratav1.FaultCounts{Read: r.u64(), Write: r.u64(), Exec: r.u64(), Major: r.u64(), Unclassified: r.u64()}
		sampled := r.u64()
		x := byRDD[rdd]
		if x == nil || r.Err() != nil {
			return
		}
		t := x.Faults
		t.Read, t.Write, t.Exec = satAdd(t.Read, f.Read), satAdd(t.Write, f.Write), satAdd(t.Exec, f.Exec)
		t.Major, t.Unclassified = satAdd(t.Major, f.Major), satAdd(t.Unclassified, f.Unclassified)
		x.SampledFaults += sampled
	})
	if err != nil {
		return fmt.Errorf("query rdd faults %s: %w", appID, err)
	}
	return nil
}

// heldStep is what one buffer of a cached block held from one time on
// (heldStepsCTE's state), and the change against its previous time.
type heldStep struct {
	rdd        int32
	exec       string
	pid        uint32
	node, boot string
	t          int64
	// dPages and dBytes: the change in present pages and bytes.
	dPages, dBytes int64
}

// heldSteps returns app's steps as heldStepsCTE defines them, in time
// order per buffer, and the first and last time of the app's cached
// lifecycle records (ok false: there are none). The server sums, per
// buffer and time, the present pages of the records that hold (holdsSQL;
// a free holds nothing); the changes are taken here.
func (s *ClickHouse) heldSteps(ctx context.Context, app string) (steps []heldStep, t0, t1 int64, ok bool, err error) {
	cached := chCachedWhere(app)
	var n uint64
	err = s.c.query(ctx, `SELECT `+rowSelect+`, min(time_ns), max(time_ns), count() FROM records WHERE `+cached,
		func(r *rowReader) { t0, t1, n = r.i64(), r.i64(), r.u64() })
	if err != nil || n == 0 {
		return nil, 0, 0, false, err
	}
	free := strconv.Itoa(int(accessFree))
	present := chState("PRESENT") + ` != 0`
	sel := `SELECT ` + rowSelect + `, rdd_id, executor_id, pid, block_id, chunk, time_ns, any(node_name), any(boot_id),
	toInt64(sum(if(access_kind = ` + free + `, 0, p))), toInt64(sum(if(access_kind = ` + free + `, 0, b)))
FROM (
	SELECT uid, rec_idx, rdd_id, executor_id, pid, block_id, chunk, time_ns, node_name, boot_id, access_kind
	FROM records WHERE ` + cached + ` AND (access_kind = ` + free + ` OR ` + holdsSQL(cached) + `)
) ANY LEFT JOIN (
	SELECT uid, rec_idx, sum(if(` + present + `, toUInt64(pages), 0)) AS p, sum(if(` + present + `, toUInt64(pages) * page_size, 0)) AS b
	FROM runs WHERE app_id = ` + quote(app) + ` AND ` + visibleSQL(app) + ` GROUP BY uid, rec_idx
) USING (uid, rec_idx)
GROUP BY rdd_id, executor_id, pid, block_id, chunk, time_ns
ORDER BY executor_id, pid, block_id, chunk, time_ns`
	type buffer struct {
		exec  string
		pid   uint32
		block string
		chunk uint32
	}
	var (
		prevBuf            buffer
		prevPages, prevByt int64
	)
	err = s.c.query(ctx, sel, func(r *rowReader) {
		st := heldStep{rdd: r.i32()}
		buf := buffer{exec: r.str(), pid: r.u32(), block: r.str(), chunk: r.u32()}
		st.t, st.node, st.boot = r.i64(), r.str(), r.str()
		pages, byt := r.i64(), r.i64()
		if r.Err() != nil {
			return
		}
		if len(steps) == 0 || buf != prevBuf {
			prevBuf, prevPages, prevByt = buf, 0, 0
		}
		st.exec, st.pid = buf.exec, buf.pid
		st.dPages, st.dBytes = pages-prevPages, byt-prevByt
		prevPages, prevByt = pages, byt
		steps = append(steps, st)
	})
	if err != nil {
		return nil, 0, 0, false, fmt.Errorf("query held steps %s: %w", app, err)
	}
	return steps, t0, t1, true, nil
}

// Occupancy returns each RDD's resident memory per time bucket, as
// DuckDB.Occupancy does: the running sum of heldSteps per RDD, changes at
// one time together, the last value of each bucket.
func (s *ClickHouse) Occupancy(ctx context.Context, appID string, buckets uint32) ([]OccupancyPoint, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("occupancy: %w", err)
	}
	if buckets == 0 || buckets > 10000 {
		return nil, fmt.Errorf("occupancy: %w: %d buckets (1..10000)", ErrInvalidQuery, buckets)
	}
	steps, t0, t1, ok, err := s.heldSteps(ctx, appID)
	if err != nil || !ok {
		return nil, err
	}
	slices.SortStableFunc(steps, func(a, b heldStep) int {
		if c := cmp.Compare(a.rdd, b.rdd); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	var (
		out          []OccupancyPoint
		pages, bytes int64
	)
	span := uint64(t1 - t0 + 1)
	for i, c := range steps {
		if i == 0 || c.rdd != steps[i-1].rdd {
			pages, bytes = 0, 0
		}
		pages, bytes = pages+c.dPages, bytes+c.dBytes
		if i+1 < len(steps) && steps[i+1].rdd == c.rdd && steps[i+1].t == c.t {
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
		if c := cmp.Compare(a.TimeNs, b.TimeNs); c != 0 {
			return c
		}
		return cmp.Compare(a.RDDID, b.RDDID)
	})
	return out, nil
}

// Occupation returns, per process of an app, the peak of the resident
// bytes its cached RDD blocks held against its peak resident set and its
// node's memory, as DuckDB.Occupation does: the running sum of heldSteps
// per process (the first time of its maximum is the peak), the process's
// memory samples, and the node's largest MemTotal.
func (s *ClickHouse) Occupation(ctx context.Context, appID string) ([]*stratav1.OccupationRow, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("occupation: %w", err)
	}
	steps, _, _, _, err := s.heldSteps(ctx, appID)
	if err != nil {
		return nil, err
	}
	type proc struct {
		exec string
		pid  uint32
	}
	type occ struct {
		row *stratav1.OccupationRow
		// peak: steps were seen; held is their running sum's maximum, boot
		// the machine boot of its time.
		peak bool
		held int64
		boot string
		// The memory samples in time order.
		times []int64
		rss   []uint64
	}
	procs := map[proc]*occ{}
	get := func(p proc) *occ {
		o := procs[p]
		if o == nil {
			o = &occ{row: &stratav1.OccupationRow{ExecutorId: p.exec, Pid: p.pid}}
			procs[p] = o
		}
		return o
	}
	slices.SortStableFunc(steps, func(a, b heldStep) int {
		return cmp.Or(cmp.Compare(a.exec, b.exec), cmp.Compare(a.pid, b.pid), cmp.Compare(a.t, b.t))
	})
	var held int64
	for i, st := range steps {
		p := proc{st.exec, st.pid}
		if i == 0 || p != (proc{steps[i-1].exec, steps[i-1].pid}) {
			held = 0
		}
		held += st.dBytes
		if i+1 < len(steps) && steps[i+1].exec == st.exec && steps[i+1].pid == st.pid && steps[i+1].t == st.t {
			continue // the rest of this time first
		}
		o := get(p)
		if !o.peak || held > o.held {
			o.peak, o.held = true, held
			o.row.PeakRddBytes, o.row.PeakTimeUnixNano = uint64(max(held, 0)), st.t
			o.row.NodeName, o.boot = st.node, st.boot
		}
	}
	sel := `SELECT ` + rowSelect + `, executor_id, pid, node_name, time_ns, rss_bytes, hwm_bytes FROM process_memory
WHERE app_id = ` + quote(appID) + ` AND ` + visibleSQL(appID) + ` ORDER BY executor_id, pid, time_ns`
	err = s.c.query(ctx, sel, func(r *rowReader) {
		p := proc{exec: r.str(), pid: r.u32()}
		node, t, rss, hwm := r.str(), r.i64(), r.u64(), r.u64()
		if r.Err() != nil {
			return
		}
		o := get(p)
		if o.row.NodeName == "" {
			o.row.NodeName = node
		}
		o.row.PeakRssBytes = max(o.row.PeakRssBytes, hwm)
		o.row.RssSamples++
		o.times, o.rss = append(o.times, t), append(o.rss, rss)
	})
	if err != nil {
		return nil, fmt.Errorf("query process memory %s: %w", appID, err)
	}
	names := map[string]bool{}
	for _, o := range procs {
		names[o.row.NodeName] = true
	}
	mem, err := s.memTotals(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]*stratav1.OccupationRow, 0, len(procs))
	for _, o := range procs {
		// The latest sample at or before the peak, else the first.
		if i, _ := slices.BinarySearch(o.times, o.row.PeakTimeUnixNano+1); i > 0 {
			o.row.RssAtPeakBytes = o.rss[i-1]
		} else if len(o.rss) > 0 {
			o.row.RssAtPeakBytes = o.rss[0]
		}
		for k, v := range mem {
			if k.name == o.row.NodeName && (!o.peak || k.boot == o.boot) {
				o.row.MemTotalBytes = max(o.row.MemTotalBytes, v)
			}
		}
		SetOccupationShares(o.row)
		out = append(out, o.row)
	}
	slices.SortFunc(out, func(a, b *stratav1.OccupationRow) int {
		return cmp.Or(cmp.Compare(a.ExecutorId, b.ExecutorId), cmp.Compare(a.Pid, b.Pid))
	})
	return out, nil
}

// memTotals returns the largest MemTotal known of each boot of the named
// machines.
func (s *ClickHouse) memTotals(ctx context.Context, names map[string]bool) (map[nodeKey]uint64, error) {
	out := map[nodeKey]uint64{}
	if len(names) == 0 {
		return out, nil
	}
	quoted := make([]string, 0, len(names))
	for n := range names {
		quoted = append(quoted, quote(n))
	}
	sel := `SELECT ` + rowSelect + `, node_name, boot_id, max(mem_total_bytes) FROM nodes
WHERE node_name IN (` + strings.Join(quoted, ", ") + `) GROUP BY node_name, boot_id`
	err := s.c.query(ctx, sel, func(r *rowReader) {
		k, v := nodeKey{name: r.str(), boot: r.str()}, r.u64()
		if r.Err() == nil {
			out[k] = v
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query node memory: %w", err)
	}
	return out, nil
}
