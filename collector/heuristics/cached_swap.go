package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Cached Swap (cross-layer, docs/heuristics.md#swapped-cached-blocks), the
// cache under pressure: cached RDD blocks whose pages were swapped out are
// read back from disk at page-fault speed, defeating the cache. The pages
// under pressure are those swapped out at the blocks' latest resolution
// plus those faulted back in (the major faults in the blocks' ranges, from
// Blocks, when the collector read them). Severity of pressured / total
// pages (at most 1) over all cached RDDs with at least min_pages pages in
// total; score = severity × RDDs with pressured pages.

// CachedSwapParams are the parameters of Swapped Cached Blocks.
type CachedSwapParams struct {
	Common               `yaml:",inline"`
	SwappedShareSeverity Thresholds `yaml:"swapped_share_severity" check:"asc" help:"swapped and faulted-back pages / all pages of the cached RDDs"`
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
	refaults := map[int32]int64{}
	for i := range ts.Blocks {
		refaults[ts.Blocks[i].RDD] += int64(min(ts.Blocks[i].MajorFaults, 1<<62))
	}
	var total, swapped, back int64
	var pressured int
	var d []Detail
	for _, r := range ts.RDDs {
		total += r.TotalPages
		swapped += r.SwappedPages
		back += refaults[r.RDDID]
		if r.SwappedPages == 0 && refaults[r.RDDID] == 0 {
			continue
		}
		pressured++
		v := itoa(r.SwappedPages) + " of " + itoa(r.TotalPages) + " pages swapped"
		if ts.Blocks != nil {
			v += ", " + itoa(refaults[r.RDDID]) + " faulted back in"
		}
		d = append(d, detail(rddName(r), v))
	}
	if total == 0 || total < h.minPages {
		return skip
	}
	share := min(float64(swapped+back)/float64(total), 1)
	sev := h.share.Ascending(share)
	head := []Detail{
		detail("Swapped share of cached pages", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("Swapped cached data", ts.size(swapped)),
	}
	if ts.Blocks != nil {
		head[0].Name = "Swapped and faulted-back share of cached pages"
		head = append(head, detail("Faulted back in (major faults)", ts.size(back)))
	}
	return Result{Severity: sev, Score: Score(sev, pressured), Details: append(head, d...)}
}
