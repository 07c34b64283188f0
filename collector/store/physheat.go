package store

import (
	"context"
	"math"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// physHeat is, for each of blocks (the physical map's, on machine), the
// accesses per second per GiB of its buffers' latest DAMON samples read
// at or before at (0: the latest), taken together (answer.HeatFiguresOf); NaN
// for a block without a sample or whose samples cannot say it (partial, no
// rate).
func (q *querier) physHeat(ctx context.Context, app, machine string, at int64, blocks []answer.BlockRef) ([]float64, error) {
	out := make([]float64, len(blocks))
	for i := range out {
		out[i] = math.NaN()
	}
	h, err := q.Heat(ctx, answer.HeatQuery{AppID: app})
	if err != nil {
		return nil, err
	}
	latest := map[answer.BlockRef][]*stratav1.HeatSample{}
	for _, r := range h.RDDs {
		for _, b := range r.Blocks {
			if b.NodeName != machine {
				continue
			}
			var last *stratav1.HeatSample
			for _, s := range b.Samples {
				if at == 0 || s.GetTimeUnixNano() <= at {
					last = s
				}
			}
			if last != nil {
				k := answer.BlockRef{RDDID: last.GetRddId(), ExecutorID: last.GetExecutorId(), BlockID: last.GetBlockId()}
				latest[k] = append(latest[k], last)
			}
		}
	}
	for i, b := range blocks {
		if ss := latest[b]; len(ss) > 0 {
			if f := answer.HeatFiguresOf(ss, 0); !f.Partial && f.AccessesPerSecGiB != nil {
				out[i] = *f.AccessesPerSecGiB
			}
		}
	}
	return out, nil
}
