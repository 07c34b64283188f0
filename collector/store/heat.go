package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Access heat from DAMON (the agent's HeatSample, docs/damon.md): the
// samples of an application's RDD blocks as they were sent, and per RDD
// the figures below, over each block's latest sample and per read time.
//
// Over a set of samples (weights are bytes; a sample whose value is absent
// adds nothing to that value's sums):
//
//   - AccessRate is the mean of access_rate weighted by covered_bytes: the
//     share of DAMON's checks of the covered pages that found them
//     accessed, 0..1.
//   - AccessesPerSecGiB is the mean, weighted by covered_bytes, of
//     access_rate × 1e9 / sample_interval_ns: every GiB of covered memory
//     is credited with the accesses per second DAMON's checks would find
//     in it were it one region checked once per sampling interval, and the
//     figure is their sum divided by the covered GiB. It is at most the
//     checks per second (5 at a 200 ms sampling interval); a sample without
//     access_rate or sampling interval adds nothing.
//   - ColdForBytes counts, of cold_bytes, those of samples whose youngest
//     cold region (cold_min_age_seconds) is at least ColdFor old: bytes
//     known cold for at least ColdFor, a lower bound, since a sample's
//     older cold regions are not told apart from its younger ones.
//     ColdShare is ColdForBytes over the monitored bytes: per sample the
//     larger of monitored_bytes (0 when absent: the kdamond's target lists
//     no ranges) and covered_bytes.
//   - ColdAgeSeconds is the mean of cold_age_seconds weighted by
//     cold_bytes.
//   - Partial is set when any sample is partial (a shared kdamond's
//     scheme: only the regions it matched are seen, so monitored bytes
//     outside them are neither cold nor hot); Sources lists the samples'
//     sources, sorted, each once.

// HeatQuery asks for an application's access heat.
type HeatQuery struct {
	AppID string
	RDD   *int32 // nil = every RDD
	// ColdFor is N of "cold for at least N": see ColdForBytes.
	ColdFor time.Duration
}

// Heat is an application's access heat per RDD, ordered by RDD. Blocks
// that are not RDD blocks (rdd_id -1) are left out.
type Heat struct {
	ColdFor time.Duration
	RDDs    []HeatRDD
}

// HeatRDD is one RDD's heat: Latest over each of its blocks' latest
// sample, Points per read time (the samples with that time_ns), Blocks
// every sample.
type HeatRDD struct {
	RDD    int32
	Latest HeatFigures
	Points []HeatPoint
	Blocks []HeatBlock
}

// HeatPoint is the figures of the samples read at one time.
type HeatPoint struct {
	TimeUnixNano int64
	HeatFigures
}

// HeatBlock is one block buffer's samples, in time order, as the agent
// sent them (what cannot be known absent). A block is (node, executor,
// pid, block_id, hook_block_id).
type HeatBlock struct {
	NodeName string
	Samples  []*stratav1.HeatSample
}

// Latest is the block's latest sample.
func (b HeatBlock) Latest() *stratav1.HeatSample { return b.Samples[len(b.Samples)-1] }

// HeatFigures are the heat of a set of samples (see the definitions
// above). A pointer is nil when no sample holds what it needs.
type HeatFigures struct {
	Samples           int
	CoveredBytes      uint64
	MonitoredBytes    uint64
	ColdBytes         uint64
	ColdForBytes      uint64
	AccessRate        *float64
	AccessesPerSecGiB *float64
	ColdShare         *float64
	ColdAgeSeconds    *float64
	Partial           bool
	Sources           []string
}

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
func (q *querier) Heat(ctx context.Context, hq HeatQuery) (*Heat, error) {
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
	out := &Heat{ColdFor: hq.ColdFor}
	type blockKey struct {
		node, exec, block string
		pid               uint32
		hook              uint64
	}
	var cur *HeatRDD
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
			out.RDDs = append(out.RDDs, HeatRDD{RDD: rdd})
			cur = &out.RDDs[len(out.RDDs)-1]
		}
		if len(cur.Blocks) == 0 || k != prev {
			cur.Blocks = append(cur.Blocks, HeatBlock{NodeName: node})
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
func heatRDDFigures(r *HeatRDD, coldFor time.Duration) {
	latest := make([]*stratav1.HeatSample, 0, len(r.Blocks))
	var all []*stratav1.HeatSample
	for _, b := range r.Blocks {
		latest = append(latest, b.Latest())
		all = append(all, b.Samples...)
	}
	r.Latest = HeatFiguresOf(latest, coldFor)
	slices.SortStableFunc(all, func(a, b *stratav1.HeatSample) int { return cmp.Compare(a.TimeUnixNano, b.TimeUnixNano) })
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].TimeUnixNano == all[i].TimeUnixNano {
			j++
		}
		r.Points = append(r.Points, HeatPoint{TimeUnixNano: all[i].TimeUnixNano, HeatFigures: HeatFiguresOf(all[i:j], coldFor)})
		i = j
	}
}

// HeatFiguresOf computes the figures of samples (see Heat's definitions).
func HeatFiguresOf(samples []*stratav1.HeatSample, coldFor time.Duration) HeatFigures {
	f := HeatFigures{Samples: len(samples)}
	var rateW, rateSum, freqW, freqSum, ageW, ageSum float64
	sources := map[string]bool{}
	for _, h := range samples {
		cov := h.GetCoveredBytes()
		f.CoveredBytes = satAdd(f.CoveredBytes, cov)
		f.MonitoredBytes = satAdd(f.MonitoredBytes, max(h.GetMonitoredBytes(), cov))
		f.ColdBytes = satAdd(f.ColdBytes, h.GetColdBytes())
		if h.ColdMinAgeSeconds != nil && h.GetColdMinAgeSeconds() >= coldFor.Seconds() {
			f.ColdForBytes = satAdd(f.ColdForBytes, h.GetColdBytes())
		}
		if h.AccessRate != nil && cov > 0 {
			rateW += float64(cov)
			rateSum += h.GetAccessRate() * float64(cov)
			if si := h.GetSampleIntervalNs(); si > 0 {
				freqW += float64(cov)
				freqSum += h.GetAccessRate() * 1e9 / float64(si) * float64(cov)
			}
		}
		if h.ColdAgeSeconds != nil && h.GetColdBytes() > 0 {
			ageW += float64(h.GetColdBytes())
			ageSum += h.GetColdAgeSeconds() * float64(h.GetColdBytes())
		}
		f.Partial = f.Partial || h.GetPartial()
		if h.GetSource() != "" {
			sources[h.GetSource()] = true
		}
	}
	f.AccessRate = ratio(rateSum, rateW)
	f.AccessesPerSecGiB = ratio(freqSum, freqW)
	f.ColdAgeSeconds = ratio(ageSum, ageW)
	f.ColdShare = ratio(float64(f.ColdForBytes), float64(f.MonitoredBytes))
	for s := range sources {
		f.Sources = append(f.Sources, s)
	}
	slices.Sort(f.Sources)
	return f
}

// ratio is a/b, nil when b is 0.
func ratio(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	v := a / b
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
