package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Cached Swap (cross-layer, docs/heuristics.md#swapped-cached-blocks):
// cached RDD blocks that were swapped out are read back from disk at
// page-fault speed, defeating the cache. Severity of swapped / total pages
// over all cached RDDs with at least min_pages pages in total; score =
// severity × RDDs with swapped pages.

// CachedSwapParams are the parameters of Swapped Cached Blocks.
type CachedSwapParams struct {
	Common               `yaml:",inline"`
	SwappedShareSeverity Thresholds `yaml:"swapped_share_severity" check:"asc" help:"swapped / all pages of the cached RDDs"`
	MinPages             int64      `yaml:"min_pages" help:"fewer cached pages in all are not rated"`
}

var cachedSwap = register(def[CachedSwapParams]{Key: "cached_swap", Name: "Swapped Cached Blocks", Order: 302,
	Defaults: CachedSwapParams{SwappedShareSeverity: Thresholds{0.001, 0.01, 0.05, 0.1}, MinPages: 256},
	BuildTrace: func(p CachedSwapParams) TraceHeuristic {
		return &CachedSwap{share: p.SwappedShareSeverity, minPages: p.MinPages}
	}})

// CachedSwap is the swapped cached blocks heuristic.
type CachedSwap struct {
	share    Thresholds
	minPages int64
}

// ApplyTrace implements TraceHeuristic.
func (h *CachedSwap) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	var total, swapped int64
	var withSwap int
	var d []Detail
	for _, r := range ts.RDDs {
		total += r.TotalPages
		swapped += r.SwappedPages
		if r.SwappedPages > 0 {
			withSwap++
			d = append(d, detail(rddName(r), itoa(r.SwappedPages)+" of "+itoa(r.TotalPages)+" pages swapped"))
		}
	}
	if total == 0 || total < h.minPages {
		return skip
	}
	share := float64(swapped) / float64(total)
	sev := h.share.Ascending(share)
	d = append([]Detail{
		detail("Swapped share of cached pages", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("Swapped cached data", ts.size(swapped)),
	}, d...)
	return Result{Severity: sev, Score: Score(sev, withSwap), Details: d}
}
