package query

import (
	"time"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// HeatToProto is h as the Heat RPC sends it; HeatFromProto reads it back,
// exactly (TestHeatProtoRoundTrip).
func HeatToProto(h *answer.Heat) *stratav1.HeatResponse {
	out := &stratav1.HeatResponse{ColdForSeconds: h.ColdFor.Seconds()}
	for _, r := range h.RDDs {
		x := &stratav1.RddHeat{RddId: r.RDD, Latest: figuresToProto(r.Latest)}
		for _, p := range r.Points {
			x.Points = append(x.Points, &stratav1.HeatPoint{TimeUnixNano: p.TimeUnixNano, Figures: figuresToProto(p.HeatFigures)})
		}
		for _, b := range r.Blocks {
			x.Blocks = append(x.Blocks, &stratav1.HeatBlock{NodeName: b.NodeName, Samples: b.Samples})
		}
		out.Rdds = append(out.Rdds, x)
	}
	return out
}

// HeatFromProto is the answer.Heat a HeatResponse carries.
func HeatFromProto(r *stratav1.HeatResponse) *answer.Heat {
	h := &answer.Heat{ColdFor: time.Duration(r.GetColdForSeconds() * float64(time.Second))}
	for _, x := range r.GetRdds() {
		rh := answer.HeatRDD{RDD: x.GetRddId(), Latest: figuresFromProto(x.GetLatest())}
		for _, p := range x.GetPoints() {
			rh.Points = append(rh.Points, answer.HeatPoint{TimeUnixNano: p.GetTimeUnixNano(), HeatFigures: figuresFromProto(p.GetFigures())})
		}
		for _, b := range x.GetBlocks() {
			rh.Blocks = append(rh.Blocks, answer.HeatBlock{NodeName: b.GetNodeName(), Samples: b.GetSamples()})
		}
		h.RDDs = append(h.RDDs, rh)
	}
	return h
}

func figuresToProto(f answer.HeatFigures) *stratav1.HeatFigures {
	return &stratav1.HeatFigures{Samples: uint32(f.Samples), CoveredBytes: f.CoveredBytes, MonitoredBytes: f.MonitoredBytes,
		ColdBytes: f.ColdBytes, ColdForBytes: f.ColdForBytes, AccessRate: f.AccessRate, AccessesPerSecGib: f.AccessesPerSecGiB,
		ColdShare: f.ColdShare, ColdAgeSeconds: f.ColdAgeSeconds, Partial: f.Partial, Sources: f.Sources}
}

func figuresFromProto(f *stratav1.HeatFigures) answer.HeatFigures {
	return answer.HeatFigures{Samples: int(f.GetSamples()), CoveredBytes: f.GetCoveredBytes(), MonitoredBytes: f.GetMonitoredBytes(),
		ColdBytes: f.GetColdBytes(), ColdForBytes: f.GetColdForBytes(), AccessRate: f.AccessRate, AccessesPerSecGiB: f.AccessesPerSecGib,
		ColdShare: f.ColdShare, ColdAgeSeconds: f.ColdAgeSeconds, Partial: f.GetPartial(), Sources: f.GetSources()}
}
