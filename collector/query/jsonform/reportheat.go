package jsonform

import "github.com/stratatrace/strata/collector/answer"

// AddHeat gives r and each of its RDDs their DAMON access heat in h (the
// store's Heat of r's application): HeatColdFor is h's cold-for, an RDD's
// HeatSays its heat in words (NoHeat without samples) and HeatLatest the
// figures over each of its blocks' latest sample (absent without
// samples). `strata report -o json` and /api/v1/apps/{app}/report add it
// with the same cold-for.
func (r *Report) AddHeat(h *answer.Heat) {
	secs := h.ColdFor.Seconds()
	r.HeatColdFor = &secs
	latest := map[int32]answer.HeatFigures{}
	for _, x := range h.RDDs {
		latest[x.RDD] = x.Latest
	}
	for i := range r.RDDs {
		x := &r.RDDs[i]
		x.HeatSays = NoHeat
		if f, ok := latest[x.RDD]; ok {
			x.HeatSays = HeatWords(f, h.ColdFor)
			form := newHeatFigures(f)
			x.HeatLatest = &form
		}
	}
}
