package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// THP Coverage (cross-layer, docs/heuristics.md#thp-coverage-of-cached-blocks):
// the share of resident cached-block pages backed by transparent huge
// pages; low coverage of a large cache costs dTLB misses and page walks.
// Descending severity over all cached RDDs with at least min_pages
// resident pages in total; score 0.

// THPCoverageParams are the parameters of THP Coverage of Cached Blocks.
type THPCoverageParams struct {
	Common           `yaml:",inline"`
	THPShareSeverity Thresholds `yaml:"thp_share_severity" check:"desc" help:"THP-backed / resident pages of the cached RDDs"`
	MinPages         int64      `yaml:"min_pages" help:"fewer resident cached pages are not rated (four huge pages of 4 KiB pages)"`
}

var thpCoverage = register(def[THPCoverageParams]{Key: "thp_coverage", Name: "THP Coverage of Cached Blocks", Order: 305,
	Defaults: THPCoverageParams{THPShareSeverity: Thresholds{0.5, 0.25, 0.1, 0.05}, MinPages: 2048},
	BuildTrace: func(p THPCoverageParams) TraceHeuristic {
		return &THPCoverage{share: p.THPShareSeverity, minPages: p.MinPages}
	}})

// THPCoverage is the THP coverage heuristic.
type THPCoverage struct {
	share    Thresholds
	minPages int64
}

// ApplyTrace implements TraceHeuristic.
func (h *THPCoverage) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	var resident, thp int64
	for _, r := range ts.RDDs {
		resident += r.ResidentPages()
		thp += r.THPPages
	}
	if resident == 0 || resident < h.minPages {
		return skip
	}
	share := min(float64(thp)/float64(resident), 1)
	return Result{Severity: h.share.Descending(share), Details: []Detail{
		detail("THP-backed share of resident cached pages", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("Resident cached data", ts.size(resident)),
	}}
}
