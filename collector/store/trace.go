package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Trace: records are a time series of accesses, so Trace lists every page
// of every matching record, oldest record first (records of one time in
// the order their batches were stored), each run expanded with
// PageRun.Page and carrying its record's coverage; a page covered by three
// records appears three times. At a moment (TraceQuery.At) it lists only
// the records the blocks live then hold (atRecsWhere): one snapshot. A stored run that cannot be expanded (left
// by a collector that validated less) is skipped, and one warning per
// query counts the skipped runs: one corrupt row never fails every trace
// of its application.

// traceCols are the columns Trace reads of dialect.traceRuns, in the order
// readTraceRun reads them.
var traceCols = `time_ns, access_kind, pid, app_id, executor_id, rdd_id, partition_id, block_id,
	mem_mode, mem_location, hook_block_id, page_size,
	vaddr, pages, state, pfn, kpageflags, folio_pages, kpagecount, numa_node, swap_type, swap_offset, pfn_deltas,
	block_kind, object_graph, chunk, chunks, stage_id, stage_attempt, task_attempt, ` + coverageColNames("")

// Trace calls fn for each page of each matching record; see TraceReader.
func (q *querier) Trace(ctx context.Context, tq answer.TraceQuery, fn func(*stratav1.TracePage) error) error {
	if err := q.check(tq.AppID); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	where := func(p string) string {
		w := ""
		if tq.RDD != nil {
			w += " AND " + p + "rdd_id = " + itoa(*tq.RDD)
		}
		if tq.Partition != nil {
			w += " AND " + p + "partition_id = " + itoa(*tq.Partition)
		}
		if tq.At != 0 {
			key := strings.Split(q.src.key(), ", ")
			for i := range key {
				key[i] = p + key[i]
			}
			w += " AND (" + strings.Join(key, ", ") + ") IN (SELECT " + q.src.key() + " FROM records WHERE " +
				atRecsWhere(q.src, lifecycleScope(q.src, tq.AppID), tq.At) + ")"
		}
		return w
	}
	d := q.src
	sel := d.sel(traceCols) + " FROM " + d.traceRuns(tq.AppID, where) + " ORDER BY time_ns, " + d.key() + ", vaddr"
	em := pageEmitter{q: tq, fn: fn}
	defer em.warn(q.log)
	var ferr error
	err := q.src.selectRows(ctx, sel, func(r row) bool {
		var tr traceRun
		readTraceRun(r, &tr)
		if r.Err() != nil {
			return false
		}
		done, err := em.emit(&tr)
		ferr = err
		return !done
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", tq.AppID, err)
	}
	return nil
}

// traceRun is one stored run with its record's fields.
type traceRun struct {
	time     int64
	access   int8
	pid      uint32
	pageSize uint32
	blk      *stratav1.SparkBlock // shared by the pages of the run
	cov      *stratav1.Coverage   // the record's, shared likewise
	run      stratav1.PageRun
	deltas   []byte // the run's PFN steps as stored (encodeDeltas)
}

// readTraceRun reads traceCols into t.
func readTraceRun(r row, t *traceRun) {
	blk := &stratav1.SparkBlock{}
	t.time, t.access, t.pid = r.i64(), r.i8(), r.u32()
	blk.AppId, blk.ExecutorId, blk.RddId, blk.Partition, blk.BlockId = r.str(), r.str(), r.i32(), r.i32(), r.str()
	blk.Mode, blk.Location = stratav1.MemoryMode(r.i8()), stratav1.MemoryLocation(r.i8())
	blk.HookBlockId, t.pageSize = r.u64(), r.u32()
	t.run.Vaddr, t.run.Count, t.run.State, t.run.Pfn = r.u64(), r.u32(), r.u32(), r.u64()
	t.run.Kpageflags, t.run.FolioPages, t.run.Kpagecount, t.run.NumaNode = r.u64(), r.u32(), r.u64(), r.i32()
	t.run.SwapType, t.run.SwapOffset, t.deltas = r.u32(), r.u64(), r.blob()
	blk.Kind, blk.ObjectGraph, blk.Chunk, blk.Chunks = stratav1.BlockKind(r.i8()), r.boolean(), r.u32(), r.u32()
	blk.StageId, blk.StageAttempt, blk.TaskAttemptId = r.i32(), r.i32(), r.i64()
	var cov coverageRow
	cov.read(r)
	cov.setBlock(blk)
	t.blk, t.cov = blk, cov.coverage()
}

// pageEmitter expands the stored runs of one Trace call into pages, up to
// the query's limit. A run that cannot be expanded is skipped and
// counted; warn reports the count once.
type pageEmitter struct {
	q             answer.TraceQuery
	fn            func(*stratav1.TracePage) error
	sent, skipped uint32
	firstSkip     error
}

// emit calls fn for each page of r. done reports that the limit is
// reached or fn failed; err is fn's first error.
func (e *pageEmitter) emit(r *traceRun) (done bool, err error) {
	if e.q.Limit > 0 && e.sent >= e.q.Limit {
		return true, nil
	}
	var ferr error
	xerr := expandRun(&r.run, r.deltas, r.pageSize, func(p stratav1.Page) bool {
		if e.q.Limit > 0 && e.sent >= e.q.Limit {
			return false
		}
		ferr = e.fn(&stratav1.TracePage{
			TimeUnixNano: r.time,
			Access:       stratav1.AccessKind(r.access),
			Block:        r.blk,
			Pid:          r.pid,
			Vaddr:        p.VAddr,
			State:        p.State,
			Pfn:          p.PFN,
			Paddr:        p.PAddr(uint64(r.pageSize)),
			Kpageflags:   p.KPageFlags,
			Kpagecount:   p.KPageCount,
			NumaNode:     p.NUMANode,
			Coverage:     r.cov,
		})
		if ferr != nil {
			return false
		}
		e.sent++
		return true
	})
	if xerr != nil {
		if e.skipped == 0 {
			e.firstSkip = fmt.Errorf("%s at %#x (time %d): %w", r.blk.GetBlockId(), r.run.GetVaddr(), r.time, xerr)
		}
		e.skipped++
		return false, nil
	}
	if ferr != nil {
		return true, ferr
	}
	return e.q.Limit > 0 && e.sent >= e.q.Limit, nil
}

// warn logs the runs this Trace skipped, if any.
func (e *pageEmitter) warn(log *slog.Logger) {
	if e.skipped > 0 {
		log.Warn("trace skipped stored runs that cannot be expanded", "app_id", e.q.AppID, "runs", e.skipped, "first", e.firstSkip)
	}
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
