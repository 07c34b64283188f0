package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// How an app's cached RDD blocks were used (CacheReader): the cross-layer
// heuristics' input (job.CachedBlock), one piece of Go over rows every
// backend selects the same way.
//
// The hook reports a MemoryStore get of a block as one READ per buffer it
// holds (a serialized block's chunks, a cached batch's buffers), so a
// registration's gets are those of its most read buffer, and a block's
// gets the sum over its registrations (a block freed and cached again).
// A buffer's first READ on the thread that registered it is the put's own
// read-back (Spark's getOrElseUpdate returns the block it just stored by
// getting it), counted in PutReads.

// CacheReader answers how an application's cached blocks were used.
type CacheReader interface {
	// CachedBlocks returns the app's cached RDD blocks (job.CachedBlock),
	// ordered by RDD, partition, executor, block and pid.
	CachedBlocks(ctx context.Context, appID string) ([]job.CachedBlock, error)
}

// usedBlock names a block across its registrations.
type usedBlock struct {
	exec, block string
	pid         uint32
}

// bufferUse is one buffer registration's life as its lifecycle records
// tell it.
type bufferUse struct {
	hook              uint64
	allocNs, freedNs  int64
	allocTid          uint32
	reads, putReads   uint64
	lastReadNs        int64
	readsByNode       map[int32]uint64
	freeReason        int8
	sawRead, allocked bool
}

// CachedBlocks implements CacheReader.
func (q *querier) CachedBlocks(ctx context.Context, appID string) ([]job.CachedBlock, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("cached blocks: %w", err)
	}
	blocks, bufs, err := q.blockLives(ctx, appID)
	if err != nil {
		return nil, err
	}
	for k, b := range blocks {
		useOf(b, bufs[k])
	}
	if err := q.blockPages(ctx, appID, blocks); err != nil {
		return nil, err
	}
	regs, err := q.latestCounters(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, c := range regs {
		if b := blocks[usedBlock{c.exec, c.block, c.pid}]; b != nil && c.cached {
			b.MajorFaults = satAdd(b.MajorFaults, c.counts[3])
		}
	}
	d := q.src
	sel := d.sel("executor_id, pid, block_id, cpu_numa, count(*)") + ` FROM ` + d.sampleRuns(appID) + ` WHERE ` + cachedCond +
		` GROUP BY executor_id, pid, block_id, cpu_numa`
	err = q.each(ctx, sel, func(r row) {
		k := usedBlock{exec: r.str(), pid: r.u32(), block: r.str()}
		node, n := r.i32(), r.u64()
		if b := blocks[k]; b != nil {
			b.SampledFaultsByNode[node] += n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query sampled faults per block %s: %w", appID, err)
	}
	if err := q.blockHeat(ctx, appID, blocks); err != nil {
		return nil, err
	}
	out := make([]job.CachedBlock, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b job.CachedBlock) int {
		return cmp.Or(cmp.Compare(a.RDD, b.RDD), cmp.Compare(a.Partition, b.Partition), strings.Compare(a.ExecutorID, b.ExecutorID),
			strings.Compare(a.BlockID, b.BlockID), cmp.Compare(a.PID, b.PID))
	})
	return out, nil
}

// blockLives reads the lifecycle records of app's cached blocks: the
// blocks, and each one's buffer registrations in the order they were
// registered.
func (q *querier) blockLives(ctx context.Context, app string) (map[usedBlock]*job.CachedBlock, map[usedBlock][]*bufferUse, error) {
	d := q.src
	sel := d.sel(`node_name, executor_id, pid, block_id, hook_block_id, rdd_id, partition_id, access_kind, time_ns, tid, cpu_numa,
	free_reason`) + ` FROM records WHERE ` + cachedScope(d, app) + ` ORDER BY time_ns, ` + d.batchOrder() + `, rec_idx`
	blocks := map[usedBlock]*job.CachedBlock{}
	bufs := map[usedBlock][]*bufferUse{}
	byHook := map[usedBlock]map[uint64]*bufferUse{}
	err := q.each(ctx, sel, func(r row) {
		node, exec, pid, block, hook := r.str(), r.str(), r.u32(), r.str(), r.u64()
		rdd, part, access, t, tid, cpu, reason := r.i32(), r.i32(), r.i8(), r.i64(), r.u32(), r.i32(), r.i8()
		if r.Err() != nil {
			return
		}
		k := usedBlock{exec, block, pid}
		b := blocks[k]
		if b == nil {
			b = &job.CachedBlock{Node: node, ExecutorID: exec, PID: pid, BlockID: block, RDD: rdd, Partition: part, CachedNs: t,
				GetsByNode: map[int32]uint64{}, PagesByNode: map[int32]uint64{}, SampledFaultsByNode: map[int32]uint64{}}
			blocks[k] = b
			byHook[k] = map[uint64]*bufferUse{}
		}
		u := byHook[k][hook]
		if u == nil {
			u = &bufferUse{hook: hook, allocNs: t, readsByNode: map[int32]uint64{}}
			byHook[k][hook] = u
			bufs[k] = append(bufs[k], u)
		}
		switch access {
		case accessAlloc:
			if !u.allocked {
				u.allocked, u.allocTid, u.allocNs = true, tid, t
			}
		case accessRead:
			if !u.sawRead && u.allocked && tid == u.allocTid {
				u.putReads = 1
			}
			u.sawRead = true
			u.reads++
			u.lastReadNs = t
			u.readsByNode[cpu]++
		case accessFree:
			u.freedNs, u.freeReason = t, reason
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("query cached block lives %s: %w", app, err)
	}
	return blocks, bufs, nil
}

// useOf sets b's gets and free from its buffers, oldest registration
// first: buffers registered before any of the current registration's
// buffers was freed are one registration, whose gets are its most read
// buffer's.
func useOf(b *job.CachedBlock, bufs []*bufferUse) {
	var reg []*bufferUse
	flush := func() {
		var top *bufferUse
		for _, u := range reg {
			if top == nil || u.reads > top.reads {
				top = u
			}
		}
		if top == nil {
			return
		}
		b.Gets += top.reads
		b.PutReads += top.putReads
		b.LastGetNs = max(b.LastGetNs, top.lastReadNs)
		for n, c := range top.readsByNode {
			b.GetsByNode[n] += c
		}
		reg = reg[:0]
	}
	for _, u := range bufs {
		for _, v := range reg {
			if v.freedNs != 0 && v.freedNs <= u.allocNs {
				flush()
				break
			}
		}
		reg = append(reg, u)
	}
	// The block's free is its latest registration's, when every buffer of
	// it was freed.
	last := reg
	flush()
	b.FreedNs, b.FreeReason = 0, ""
	for _, u := range last {
		if u.freedNs == 0 {
			b.FreedNs, b.FreeReason = 0, ""
			return
		}
		if u.freedNs > b.FreedNs {
			b.FreedNs = u.freedNs
			b.FreeReason = strings.ToLower(strings.TrimPrefix(stratav1.FreeReason(u.freeReason).String(), "FREE_REASON_"))
		}
	}
}

// blockPages sets each block's pages as last resolved while live (the runs
// lastPages sums per RDD), per block and NUMA node.
func (q *querier) blockPages(ctx context.Context, app string, blocks map[usedBlock]*job.CachedBlock) error {
	d := q.src
	present := stateBit(d, pgPresent) + ` != 0`
	sel := d.sel(`executor_id, pid, block_id, node,
	sum(CASE WHEN `+stateBit(d, pgUnmapped)+` = 0 THEN pages ELSE 0 END), sum(CASE WHEN `+present+` THEN pages ELSE 0 END),
	sum(CASE WHEN `+stateBit(d, pgSwapped)+` != 0 THEN pages ELSE 0 END), max(page_size)`) + ` FROM (` +
		runsOf(d, app, "executor_id, pid, block_id, "+nodeExpr(d)+" AS node, state, pages, page_size", "",
			lastRecsWhere(d, cachedScope(d, app))) + `)
GROUP BY executor_id, pid, block_id, node`
	err := q.each(ctx, sel, func(r row) {
		k := usedBlock{exec: r.str(), pid: r.u32(), block: r.str()}
		node, pages, present, swapped, ps := r.i32(), r.u64(), r.u64(), r.u64(), r.u32()
		b := blocks[k]
		if b == nil {
			return
		}
		b.Pages, b.SwappedPages = satAdd(b.Pages, pages), satAdd(b.SwappedPages, swapped)
		if present > 0 {
			b.PagesByNode[node] += present
		}
		b.PageSize = max(b.PageSize, ps)
	})
	if err != nil {
		return fmt.Errorf("query cached block pages %s: %w", app, err)
	}
	return nil
}

// blockHeat sets each block's latest DAMON heat: the figures of its
// buffers' latest samples, taken together.
func (q *querier) blockHeat(ctx context.Context, app string, blocks map[usedBlock]*job.CachedBlock) error {
	h, err := q.Heat(ctx, answer.HeatQuery{AppID: app})
	if err != nil {
		return err
	}
	latest := map[usedBlock][]*stratav1.HeatSample{}
	for _, r := range h.RDDs {
		for _, hb := range r.Blocks {
			s := hb.Latest()
			k := usedBlock{s.GetExecutorId(), s.GetBlockId(), s.GetPid()}
			latest[k] = append(latest[k], s)
		}
	}
	for k, ss := range latest {
		b := blocks[k]
		if b == nil {
			continue
		}
		f := answer.HeatFiguresOf(ss, 0)
		bh := &job.BlockHeat{AccessRate: f.AccessRate, AccessesPerSecGiB: f.AccessesPerSecGiB, MonitoredBytes: f.MonitoredBytes,
			CoveredBytes: f.CoveredBytes, ColdBytes: f.ColdBytes, Partial: f.Partial}
		for _, s := range ss {
			bh.TimeNs = max(bh.TimeNs, s.GetTimeUnixNano())
			if s.ColdMinAgeSeconds != nil && (bh.ColdMinAgeSeconds == nil || s.GetColdMinAgeSeconds() < *bh.ColdMinAgeSeconds) {
				v := s.GetColdMinAgeSeconds()
				bh.ColdMinAgeSeconds = &v
			}
		}
		b.Heat = bh
	}
	return nil
}
