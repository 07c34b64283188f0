package answer

import (
	"math"
	"slices"
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

// HeatFiguresOf computes the figures of samples (see Heat's definitions).
func HeatFiguresOf(samples []*stratav1.HeatSample, coldFor time.Duration) HeatFigures {
	f := HeatFigures{Samples: len(samples)}
	var rateW, rateSum, freqW, freqSum, ageW, ageSum float64
	sources := map[string]bool{}
	for _, h := range samples {
		cov := h.GetCoveredBytes()
		f.CoveredBytes = addSat(f.CoveredBytes, cov)
		f.MonitoredBytes = addSat(f.MonitoredBytes, max(h.GetMonitoredBytes(), cov))
		f.ColdBytes = addSat(f.ColdBytes, h.GetColdBytes())
		if h.ColdMinAgeSeconds != nil && h.GetColdMinAgeSeconds() >= coldFor.Seconds() {
			f.ColdForBytes = addSat(f.ColdForBytes, h.GetColdBytes())
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

// addSat is a+b, or 2^64-1 when that overflows: sums of bytes saturate.
func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
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
