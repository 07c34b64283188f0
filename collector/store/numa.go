package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Numa: for each live buffer of the app's blocks (liveRecsWhere; at a
// moment, atRecsWhere), its latest records that hold are taken; a freed
// buffer holds nothing. Its
// pages are counted once per (executor, pid, page address) under their
// NUMA node, -1 when not known (not present, or the PFN hidden). Fault
// records are not life-cycle records: they cover one page, not the block.
// The backend returns the runs sorted by (RDD, node, executor, pid, page
// size, address); the distinct pages of each (RDD, node) are then the
// union of those ranges per process, which one pass sums without
// expanding a run.

// Numa counts an app's distinct resident pages per RDD per NUMA node.
func (q *querier) Numa(ctx context.Context, appID string) ([]*stratav1.NumaRow, error) {
	return q.numaAt(ctx, appID, 0)
}

// NumaAt is Numa at a moment (unix nanoseconds, see Moment): the pages of
// the blocks live then, each buffer's latest records that hold by then.
func (q *querier) NumaAt(ctx context.Context, appID string, at int64) ([]*stratav1.NumaRow, error) {
	if at <= 0 {
		return nil, fmt.Errorf("numa of %s at %d: %w: a moment is after 1970", appID, at, ErrInvalidQuery)
	}
	return q.numaAt(ctx, appID, at)
}

// numaAt counts the pages of the blocks live at moment at (0: now).
func (q *querier) numaAt(ctx context.Context, appID string, at int64) ([]*stratav1.NumaRow, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("numa: %w", err)
	}
	d := q.src
	sel := d.sel("rdd_id, node, executor_id, pid, page_size, vaddr, pages") + ` FROM (` +
		runsOf(d, appID, "rdd_id, "+nodeExpr(d)+" AS node, executor_id, pid, page_size, vaddr, pages", validRun,
			momentRecsWhere(d, lifecycleScope(d, appID), at)) + `)
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
	err := q.each(ctx, sel, func(r row) {
		p := proc{rdd: r.i32(), node: r.i32(), exec: r.str(), pid: r.u32(), ps: r.u32()}
		vaddr, pages := r.u64(), r.u32()
		if r.Err() != nil {
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
