package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Access heat from DAMON (the agent's HeatSample, docs/damon.md): Heat
// returns the stored samples of an application's RDD blocks as they were
// sent, and per RDD the figures answer.HeatFiguresOf defines, over each
// block's latest sample and per read time.

// heatMask bits: which of a sample's optional values are present, in the
// heat tables' heat_mask (an absent value is stored as 0).
const (
	heatMonitored = 1 << iota
	heatRate
	heatColdAge
	heatColdMinAge
)

// heatValues are a sample's optional values as stored, and their mask.
type heatValues struct {
	monitored           uint64
	rate                float64
	coldAge, coldMinAge float64
	mask                uint8
}

func heatValuesOf(h *stratav1.HeatSample) heatValues {
	var v heatValues
	if h.MonitoredBytes != nil {
		v.monitored, v.mask = *h.MonitoredBytes, v.mask|heatMonitored
	}
	if h.AccessRate != nil {
		v.rate, v.mask = *h.AccessRate, v.mask|heatRate
	}
	if h.ColdAgeSeconds != nil {
		v.coldAge, v.mask = *h.ColdAgeSeconds, v.mask|heatColdAge
	}
	if h.ColdMinAgeSeconds != nil {
		v.coldMinAge, v.mask = *h.ColdMinAgeSeconds, v.mask|heatColdMinAge
	}
	return v
}

// Heat answers q from the stored heat samples.
func (q *querier) Heat(ctx context.Context, hq answer.HeatQuery) (*answer.Heat, error) {
	if err := q.check(hq.AppID); err != nil {
		return nil, err
	}
	if hq.ColdFor < 0 {
		return nil, fmt.Errorf("%w: negative cold-for %v", ErrInvalidQuery, hq.ColdFor)
	}
	d := q.src
	where := "app_id = " + d.lit(hq.AppID) + " AND rdd_id >= 0"
	if hq.RDD != nil {
		where += " AND rdd_id = " + strconv.Itoa(int(*hq.RDD))
	}
	sel := d.sel(`rdd_id, node_name, executor_id, pid, block_id, hook_block_id, partition_id, time_ns, interval_ns,
	sample_interval_ns, resolved_bytes, monitored_bytes, covered_bytes, access_rate, cold_bytes, cold_age_s, cold_min_age_s,
	heat_mask, source_kind, partial, source`) + ` FROM heat WHERE ` + where + d.visible(hq.AppID) + `
ORDER BY rdd_id, node_name, executor_id, pid, block_id, hook_block_id, time_ns, ` + d.batchOrder()
	out := &answer.Heat{ColdFor: hq.ColdFor}
	type blockKey struct {
		node, exec, block string
		pid               uint32
		hook              uint64
	}
	var cur *answer.HeatRDD
	var prev blockKey
	err := q.each(ctx, sel, func(r row) {
		rdd, node, exec, pid, block, hook := r.i32(), r.str(), r.str(), r.u32(), r.str(), r.u64()
		h := &stratav1.HeatSample{AppId: hq.AppID, ExecutorId: exec, Pid: pid, RddId: rdd, Partition: r.i32(),
			BlockId: block, HookBlockId: hook, TimeUnixNano: r.i64(), IntervalNs: r.i64(), SampleIntervalNs: r.i64(),
			ResolvedBytes: r.u64()}
		monitored := r.u64()
		h.CoveredBytes = r.u64()
		rate := r.f64()
		h.ColdBytes = r.u64()
		coldAge, coldMinAge := r.f64(), r.f64()
		mask := r.u8()
		h.SourceKind, h.Partial, h.Source = stratav1.HeatSourceKind(r.i8()), r.boolean(), r.str()
		if r.Err() != nil {
			return
		}
		if mask&heatMonitored != 0 {
			h.MonitoredBytes = &monitored
		}
		if mask&heatRate != 0 {
			h.AccessRate = &rate
		}
		if mask&heatColdAge != 0 {
			h.ColdAgeSeconds = &coldAge
		}
		if mask&heatColdMinAge != 0 {
			h.ColdMinAgeSeconds = &coldMinAge
		}
		k := blockKey{node, exec, block, pid, hook}
		if cur == nil || cur.RDD != rdd {
			out.RDDs = append(out.RDDs, answer.HeatRDD{RDD: rdd})
			cur = &out.RDDs[len(out.RDDs)-1]
		}
		if len(cur.Blocks) == 0 || k != prev {
			cur.Blocks = append(cur.Blocks, answer.HeatBlock{NodeName: node})
			prev = k
		}
		b := &cur.Blocks[len(cur.Blocks)-1]
		b.Samples = append(b.Samples, h)
	})
	if err != nil {
		return nil, fmt.Errorf("query heat %s: %w", hq.AppID, err)
	}
	for i := range out.RDDs {
		heatRDDFigures(&out.RDDs[i], hq.ColdFor)
	}
	return out, nil
}

// heatRDDFigures sets r's Latest and Points from its blocks' samples.
func heatRDDFigures(r *answer.HeatRDD, coldFor time.Duration) {
	latest := make([]*stratav1.HeatSample, 0, len(r.Blocks))
	var all []*stratav1.HeatSample
	for _, b := range r.Blocks {
		latest = append(latest, b.Latest())
		all = append(all, b.Samples...)
	}
	r.Latest = answer.HeatFiguresOf(latest, coldFor)
	slices.SortStableFunc(all, func(a, b *stratav1.HeatSample) int { return cmp.Compare(a.TimeUnixNano, b.TimeUnixNano) })
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].TimeUnixNano == all[i].TimeUnixNano {
			j++
		}
		r.Points = append(r.Points, answer.HeatPoint{TimeUnixNano: all[i].TimeUnixNano, HeatFigures: answer.HeatFiguresOf(all[i:j], coldFor)})
		i = j
	}
}
