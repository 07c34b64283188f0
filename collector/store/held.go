package store

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// What cached blocks held over time, one definition for Occupation (per
// process, its peak) and Occupancy (per RDD, in time buckets): a buffer of
// a cached block (executor, pid, block_id, chunk) holds, from each of its
// records that holds (holdsSQL) on, the present pages and bytes that
// record resolved; a free holds nothing; the other records say nothing and
// are skipped (no pages, or the array of references of a walked block);
// split records of one time are summed. A new registration of a buffer
// takes the place of the old one. The backend sums each buffer's state per
// time; the changes between them (heldStep) and their running sums over a
// group of buffers, in time order, are taken here.

// heldStep is what one buffer of a cached block held from one time on,
// as the change against its previous time.
type heldStep struct {
	rdd        int32
	exec       string
	pid        uint32
	node, boot string
	t          int64
	// dPages and dBytes: the change in present pages and bytes.
	dPages, dBytes int64
}

// heldSteps returns app's steps in time order per buffer, and the first
// and last time of the app's cached lifecycle records (ok false: there are
// none).
func (q *querier) heldSteps(ctx context.Context, app string) (steps []heldStep, t0, t1 int64, ok bool, err error) {
	d := q.src
	cached := cachedScope(d, app)
	var n uint64
	err = q.each(ctx, d.sel("min(time_ns), max(time_ns), count(*)")+" FROM records WHERE "+cached,
		func(r row) { t0, t1, n = r.i64(), r.i64(), r.u64() })
	if err != nil || n == 0 {
		return nil, 0, 0, false, err
	}
	free := "access_kind = " + itoa(accessFree)
	present := stateBit(d, pgPresent) + ` != 0`
	sel := d.sel(`rdd_id, executor_id, pid, block_id, chunk, time_ns, `+d.anyValue()+`(node_name), `+d.anyValue()+`(boot_id),
	`+d.toInt64(`sum(CASE WHEN `+free+` THEN 0 ELSE p END)`)+`, `+d.toInt64(`sum(CASE WHEN `+free+` THEN 0 ELSE b END)`)) + `
FROM (
	SELECT ` + d.key() + `, rdd_id, executor_id, pid, block_id, chunk, time_ns, node_name, boot_id, access_kind
	FROM ` + d.heldRecords() + ` WHERE ` + cached + ` AND (` + free + ` OR ` + holdsSQL(cached) + `)
)` + d.as("hs") + ` ` + d.leftJoin() + ` (
	SELECT ` + d.key() + `, sum(CASE WHEN ` + present + ` THEN pages ELSE 0 END) AS p,
		sum(CASE WHEN ` + present + ` THEN ` + d.toInt64("pages") + ` * page_size ELSE 0 END) AS b
	FROM runs WHERE app_id = ` + d.lit(app) + d.visible(app) + ` GROUP BY ` + d.key() + `
)` + d.as("hp") + ` USING (` + d.key() + `)
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
	err = q.each(ctx, sel, func(r row) {
		st := heldStep{rdd: r.i32()}
		buf := buffer{exec: r.str(), pid: r.u32(), block: r.str(), chunk: r.u32()}
		st.t, st.node, st.boot = r.i64(), r.str(), r.str()
		pages, byt := r.i64(), r.i64()
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

// Occupancy returns each RDD's resident memory per time bucket: the
// running sum of heldSteps per RDD, changes at one time together, the
// last value of each bucket.
func (q *querier) Occupancy(ctx context.Context, appID string, buckets uint32) ([]answer.OccupancyPoint, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("occupancy: %w", err)
	}
	if buckets == 0 || buckets > 10000 {
		return nil, fmt.Errorf("occupancy: %w: %d buckets (1..10000)", ErrInvalidQuery, buckets)
	}
	steps, t0, t1, ok, err := q.heldSteps(ctx, appID)
	if err != nil || !ok {
		return nil, err
	}
	slices.SortStableFunc(steps, func(a, b heldStep) int {
		return cmp.Or(cmp.Compare(a.rdd, b.rdd), cmp.Compare(a.t, b.t))
	})
	var (
		out          []answer.OccupancyPoint
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
		p := answer.OccupancyPoint{RDDID: c.rdd, TimeNs: bucketEnd(t0, t1, int64(b), buckets),
			Pages: uint64(max(pages, 0)), Bytes: uint64(max(bytes, 0))}
		if n := len(out); n > 0 && out[n-1].RDDID == p.RDDID && out[n-1].TimeNs == p.TimeNs {
			out[n-1] = p // a later time of the same bucket
		} else {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b answer.OccupancyPoint) int {
		return cmp.Or(cmp.Compare(a.TimeNs, b.TimeNs), cmp.Compare(a.RDDID, b.RDDID))
	})
	return out, nil
}

// bucketEnd is the last nanosecond of bucket b of n over [t0, t1]: bucket
// b holds the times t with (t - t0) * n / (t1 - t0 + 1) = b, so its last is
// t0 + ceil((b + 1) * (t1 - t0 + 1) / n) - 1 (the last bucket's is t1),
// computed in 128 bits.
func bucketEnd(t0, t1, b int64, n uint32) int64 {
	hi, lo := bits.Mul64(uint64(b+1), uint64(t1-t0+1))
	q, r := bits.Div64(hi, lo, uint64(n))
	if r > 0 {
		q++
	}
	return t0 + int64(q) - 1
}

// Occupation returns, per process of an app, the peak of the resident
// bytes its cached RDD blocks held (the running sum of heldSteps per
// process; the first time of its maximum is the peak) against the largest
// VmHWM the agent sampled of it (process_memory), its VmRSS at the peak
// (the latest sample at or before it, else the first), and its machine's
// MemTotal (the largest known of the boot at the peak), ordered by
// (executor, pid).
func (q *querier) Occupation(ctx context.Context, appID string) ([]*stratav1.OccupationRow, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("occupation: %w", err)
	}
	steps, _, _, _, err := q.heldSteps(ctx, appID)
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
	d := q.src
	sel := d.sel("executor_id, pid, node_name, time_ns, rss_bytes, hwm_bytes") + ` FROM process_memory
WHERE app_id = ` + d.lit(appID) + d.visible(appID) + ` ORDER BY executor_id, pid, time_ns`
	err = q.each(ctx, sel, func(r row) {
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
	mem, err := q.memTotals(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]*stratav1.OccupationRow, 0, len(procs))
	for _, o := range procs {
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
func (q *querier) memTotals(ctx context.Context, names map[string]bool) (map[nodeKey]uint64, error) {
	out := map[nodeKey]uint64{}
	if len(names) == 0 {
		return out, nil
	}
	d := q.src
	quoted := make([]string, 0, len(names))
	for n := range names {
		quoted = append(quoted, d.lit(n))
	}
	sel := d.sel("node_name, boot_id, max(mem_total_bytes)") + ` FROM nodes
WHERE node_name IN (` + strings.Join(quoted, ", ") + `) GROUP BY node_name, boot_id`
	err := q.each(ctx, sel, func(r row) {
		k, v := nodeKey{name: r.str(), boot: r.str()}, r.u64()
		out[k] = v
	})
	if err != nil {
		return nil, fmt.Errorf("query node memory: %w", err)
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
