package jsonform

import (
	"fmt"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// NoHeat is what an RDD's heat says when no DAMON sample of its blocks is
// stored: the collector cannot tell why (the agent's DAMON mode is in its
// log and metrics, not in its batches).
const NoHeat = "unavailable: no DAMON samples"

// Heat is an application's DAMON access heat per RDD: /api/v1/apps/{app}/heat.
// The figures are the store's (docs/storage.md, "Heat").
type Heat struct {
	App            string    `json:"app"`
	ColdForSeconds float64   `json:"cold_for_seconds"`
	RDDs           []HeatRDD `json:"rdds"` // by RDD; only RDDs with samples
}

// HeatRDD is one RDD's heat: Says in words (as `strata report` prints it),
// Latest over each block's latest sample, Points per read time, and each
// block's latest sample.
type HeatRDD struct {
	RDD    int32       `json:"rdd"`
	Says   string      `json:"says"`
	Latest HeatFigures `json:"latest"`
	Points []HeatPoint `json:"points"`
	Blocks []HeatBlock `json:"blocks"`
}

// HeatFigures are the heat of a set of samples; a null figure is one no
// sample holds what it needs for.
type HeatFigures struct {
	Samples           int      `json:"samples"`
	CoveredBytes      uint64   `json:"covered_bytes"`
	MonitoredBytes    uint64   `json:"monitored_bytes"`
	ColdBytes         uint64   `json:"cold_bytes"`
	ColdForBytes      uint64   `json:"cold_for_bytes"`
	AccessRate        *float64 `json:"access_rate"`
	AccessesPerSecGiB *float64 `json:"accesses_per_sec_gib"`
	ColdShare         *float64 `json:"cold_share"`
	ColdAgeSeconds    *float64 `json:"cold_age_seconds"`
	Partial           bool     `json:"partial"`
	Sources           []string `json:"sources"`
}

// HeatPoint is the figures of the samples of one read time.
type HeatPoint struct {
	Time string `json:"time"`
	HeatFigures
}

// HeatBlock is one block buffer and its latest sample, as the agent sent
// it (null: not known).
type HeatBlock struct {
	Node              string   `json:"node"`
	ExecutorID        string   `json:"executor_id"`
	PID               uint32   `json:"pid"`
	BlockID           string   `json:"block_id"`
	Partition         int32    `json:"partition"`
	Samples           int      `json:"samples"`
	Time              string   `json:"time"`
	AccessRate        *float64 `json:"access_rate"`
	AccessesPerSecGiB *float64 `json:"accesses_per_sec_gib"`
	ResolvedBytes     uint64   `json:"resolved_bytes"`
	MonitoredBytes    *uint64  `json:"monitored_bytes"`
	CoveredBytes      uint64   `json:"covered_bytes"`
	ColdBytes         uint64   `json:"cold_bytes"`
	ColdAgeSeconds    *float64 `json:"cold_age_seconds"`
	ColdMinAgeSeconds *float64 `json:"cold_min_age_seconds"`
	Source            string   `json:"source"`
	Partial           bool     `json:"partial"`
}

// NewHeat is h's form for app.
func NewHeat(app string, h *answer.Heat) Heat {
	out := Heat{App: app, ColdForSeconds: h.ColdFor.Seconds(), RDDs: []HeatRDD{}}
	for _, r := range h.RDDs {
		x := HeatRDD{RDD: r.RDD, Says: HeatWords(r.Latest, h.ColdFor), Latest: newHeatFigures(r.Latest),
			Points: []HeatPoint{}, Blocks: []HeatBlock{}}
		for _, p := range r.Points {
			x.Points = append(x.Points, HeatPoint{Time: Time(p.TimeUnixNano), HeatFigures: newHeatFigures(p.HeatFigures)})
		}
		for _, b := range r.Blocks {
			s := b.Latest()
			f := answer.HeatFiguresOf([]*stratav1.HeatSample{s}, h.ColdFor)
			x.Blocks = append(x.Blocks, HeatBlock{Node: b.NodeName, ExecutorID: s.GetExecutorId(), PID: s.GetPid(),
				BlockID: s.GetBlockId(), Partition: s.GetPartition(), Samples: len(b.Samples), Time: Time(s.GetTimeUnixNano()),
				AccessRate: s.AccessRate, AccessesPerSecGiB: f.AccessesPerSecGiB, ResolvedBytes: s.GetResolvedBytes(),
				MonitoredBytes: s.MonitoredBytes, CoveredBytes: s.GetCoveredBytes(), ColdBytes: s.GetColdBytes(),
				ColdAgeSeconds: s.ColdAgeSeconds, ColdMinAgeSeconds: s.ColdMinAgeSeconds, Source: s.GetSource(),
				Partial: s.GetPartial()})
		}
		out.RDDs = append(out.RDDs, x)
	}
	return out
}

func newHeatFigures(f answer.HeatFigures) HeatFigures {
	return HeatFigures{Samples: f.Samples, CoveredBytes: f.CoveredBytes, MonitoredBytes: f.MonitoredBytes,
		ColdBytes: f.ColdBytes, ColdForBytes: f.ColdForBytes, AccessRate: f.AccessRate, AccessesPerSecGiB: f.AccessesPerSecGiB,
		ColdShare: f.ColdShare, ColdAgeSeconds: f.ColdAgeSeconds, Partial: f.Partial, Sources: append([]string{}, f.Sources...)}
}

// Says is the heat of RDD rdd in h in words, NoHeat when h has none of it.
func (h Heat) Says(rdd int32) string {
	for _, r := range h.RDDs {
		if r.RDD == rdd {
			return r.Says
		}
	}
	return NoHeat
}

// HeatWords says figures f in the words of `strata report`'s HEAT column:
// "1.25 acc/s/GiB, 50.0% cold >= 1m0s" from a kdamond that sees every
// region; "partial: shared kdamond …: 50.0% cold >= 1m0s" from a shared
// kdamond's scheme, which sees only the regions it matched and so cannot
// tell hot memory (its access rate is not shown); NoHeat without samples.
// A figure no sample holds what it needs for is "unknown".
func HeatWords(f answer.HeatFigures, coldFor time.Duration) string {
	if f.Samples == 0 {
		return NoHeat
	}
	cold := "cold share unknown"
	if f.ColdShare != nil {
		cold = fmt.Sprintf("%.1f%% cold >= %v", 100**f.ColdShare, coldFor)
	}
	if f.Partial {
		var src []string
		for _, s := range f.Sources {
			src = append(src, strings.Replace(s, "shared: ", "shared ", 1))
		}
		return "partial: " + strings.Join(src, "; ") + ": " + cold
	}
	rate := "access rate unknown (DAMON's intervals tuned by the kernel)"
	if f.AccessesPerSecGiB != nil {
		rate = fmt.Sprintf("%.3g acc/s/GiB", *f.AccessesPerSecGiB)
	}
	return rate + ", " + cold
}
