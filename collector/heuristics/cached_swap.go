package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Cached Swap (cross-layer): cached RDD blocks that were swapped out are
// read back from disk at page-fault speed, defeating the cache. Severity of
// swapped / total pages over all cached RDDs with at least min_pages pages
// in total; score = severity × RDDs with swapped pages.

func init() {
	register(entry{key: "cached_swap", name: "Swapped Cached Blocks", order: orderCachedSwap,
		common: func(c *Config) Common { return c.CachedSwap.Common },
		buildTrace: func(c *Config) TraceHeuristic {
			return &CachedSwap{share: c.CachedSwap.SwappedShareSeverity, minPages: c.CachedSwap.MinPages}
		}})
}

// CachedSwap is the swapped cached blocks heuristic.
type CachedSwap struct {
	share    Thresholds
	minPages int64
}

// Name implements TraceHeuristic.
func (h *CachedSwap) Name() string { return "Swapped Cached Blocks" }

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
