package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Faults: counters are cumulative since a block's registration, so the
// latest record carrying them wins per registration (executor, block, pid,
// hook_block_id); registrations of one Spark block (freed and cached
// again) are summed. Sums saturate at 2^64-1 rather than fail: counters an
// agent sent near 2^64 must not fail the query. The RDD report sums the
// same latest counters per RDD (rddFaults).
//
// Fills: a FILL record carries the faults one put's thread took while it
// filled the block; they are not cumulative, so every FILL record of a
// block adds (fillCounters), and they stay apart from the block's own
// counters.

// counterRecord is one record carrying fault counters.
type counterRecord struct {
	exec      string
	rdd, part int32
	block     string
	pid       uint32
	hook      uint64
	cached    bool      // of a cached RDD block (cachedCond)
	counts    [5]uint64 // read, write, exec, major, unclassified
}

// registration names the registration whose counters a record carries.
type registration struct {
	exec, block string
	pid         uint32
	hook        uint64
}

// latestCounters returns, per registration, the latest record carrying
// app's fault counters, oldest registration first.
func (q *querier) latestCounters(ctx context.Context, app string) ([]counterRecord, error) {
	d := q.src
	sel := d.sel(`executor_id, rdd_id, partition_id, block_id, pid, hook_block_id, (`+cachedCond+`),
	fault_read, fault_write, fault_exec, fault_major, fault_unclassified`) + `
FROM records WHERE app_id = ` + d.lit(app) + ` AND has_faults AND access_kind != ` + itoa(accessFill) + d.visible(app) + `
ORDER BY time_ns, ` + d.batchOrder() + `, rec_idx`
	index := map[registration]int{}
	var out []counterRecord
	err := q.each(ctx, sel, func(r row) {
		c := counterRecord{exec: r.str(), rdd: r.i32(), part: r.i32(), block: r.str(), pid: r.u32(), hook: r.u64(), cached: r.boolean()}
		for i := range c.counts {
			c.counts[i] = r.u64()
		}
		k := registration{c.exec, c.block, c.pid, c.hook}
		if i, ok := index[k]; ok {
			out[i] = c // later in time: it wins
			return
		}
		index[k] = len(out)
		out = append(out, c)
	})
	if err != nil {
		return nil, fmt.Errorf("query faults %s: %w", app, err)
	}
	return out, nil
}

// fillCounters returns the faults of app's fills summed per Spark block
// and pid (faultBlock), in no order.
func (q *querier) fillCounters(ctx context.Context, app string) ([]counterRecord, error) {
	d := q.src
	sel := d.sel(`executor_id, rdd_id, partition_id, block_id, pid, (`+cachedCond+`),
	fault_read, fault_write, fault_exec, fault_major, fault_unclassified`) + `
FROM records WHERE app_id = ` + d.lit(app) + ` AND access_kind = ` + itoa(accessFill) + d.visible(app)
	index := map[faultBlock]int{}
	var out []counterRecord
	err := q.each(ctx, sel, func(r row) {
		c := counterRecord{exec: r.str(), rdd: r.i32(), part: r.i32(), block: r.str(), pid: r.u32(), cached: r.boolean()}
		for i := range c.counts {
			c.counts[i] = r.u64()
		}
		k := faultBlock{c.exec, c.rdd, c.part, c.block, c.pid}
		i, ok := index[k]
		if !ok {
			index[k] = len(out)
			out = append(out, counterRecord{exec: c.exec, rdd: c.rdd, part: c.part, block: c.block, pid: c.pid, cached: c.cached})
			i = len(out) - 1
		}
		for j := range c.counts {
			out[i].counts[j] = satAdd(out[i].counts[j], c.counts[j])
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query fill faults %s: %w", app, err)
	}
	return out, nil
}

// faultBlock is a Spark block of one process, as strata faults lists it.
type faultBlock struct {
	exec      string
	rdd, part int32
	block     string
	pid       uint32
}

// addCounts adds c (read, write, exec, major, unclassified) to a,
// saturating.
func addCounts(a *stratav1.FaultCounts, c [5]uint64) {
	a.Read, a.Write, a.Exec = satAdd(a.Read, c[0]), satAdd(a.Write, c[1]), satAdd(a.Exec, c[2])
	a.Major, a.Unclassified = satAdd(a.Major, c[3]), satAdd(a.Unclassified, c[4])
}

// Faults returns the latest fault counters per block, and the faults of
// its fills, ordered by (RDD, partition, executor, block, pid). A block
// seen in several processes of one executor (rare) gives one row per pid.
func (q *querier) Faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	return q.faults(ctx, appID)
}

func (q *querier) faults(ctx context.Context, appID string) ([]*stratav1.FaultRow, error) {
	regs, err := q.latestCounters(ctx, appID)
	if err != nil {
		return nil, err
	}
	fills, err := q.fillCounters(ctx, appID)
	if err != nil {
		return nil, err
	}
	sums := map[faultBlock]*stratav1.FaultRow{}
	var out []*stratav1.FaultRow
	rowOf := func(c *counterRecord) *stratav1.FaultRow {
		k := faultBlock{c.exec, c.rdd, c.part, c.block, c.pid}
		row := sums[k]
		if row == nil {
			row = &stratav1.FaultRow{ExecutorId: c.exec, RddId: c.rdd, Partition: c.part, BlockId: c.block, Pid: c.pid,
				Faults: &stratav1.FaultCounts{}}
			sums[k] = row
			out = append(out, row)
		}
		return row
	}
	for i := range regs {
		addCounts(rowOf(&regs[i]).Faults, regs[i].counts)
	}
	for i := range fills {
		row := rowOf(&fills[i])
		row.Fill = &stratav1.FaultCounts{}
		addCounts(row.Fill, fills[i].counts)
	}
	slices.SortFunc(out, func(a, b *stratav1.FaultRow) int {
		return cmp.Or(cmp.Compare(a.RddId, b.RddId), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.ExecutorId, b.ExecutorId), cmp.Compare(a.BlockId, b.BlockId), cmp.Compare(a.Pid, b.Pid))
	})
	return out, nil
}

// rddFaults sets each RDD's fault counters — the latest counters of each
// registration of its cached blocks, whichever record carries them (the
// agent's periodic counter records, or the final counters on a free),
// summed — and its sampled faults (FAULT records without counters).
func (q *querier) rddFaults(ctx context.Context, appID string, byRDD map[int32]*stratav1.RddReport) error {
	regs, err := q.latestCounters(ctx, appID)
	if err != nil {
		return err
	}
	for i := range regs {
		if x := byRDD[regs[i].rdd]; x != nil && regs[i].cached {
			addCounts(x.Faults, regs[i].counts)
		}
	}
	fills, err := q.fillCounters(ctx, appID)
	if err != nil {
		return err
	}
	for i := range fills {
		if x := byRDD[fills[i].rdd]; x != nil && fills[i].cached {
			if x.FillFaults == nil {
				x.FillFaults = &stratav1.FaultCounts{}
			}
			addCounts(x.FillFaults, fills[i].counts)
		}
	}
	d := q.src
	sel := d.sel("rdd_id, count(*)") + ` FROM records WHERE app_id = ` + d.lit(appID) + ` AND access_kind = ` + itoa(accessFault) +
		` AND NOT has_faults AND ` + cachedCond + d.visible(appID) + ` GROUP BY rdd_id`
	err = q.each(ctx, sel, func(r row) {
		rdd, n := r.i32(), r.u64()
		if x := byRDD[rdd]; x != nil {
			x.SampledFaults = n
		}
	})
	if err != nil {
		return fmt.Errorf("query sampled faults %s: %w", appID, err)
	}
	return nil
}
