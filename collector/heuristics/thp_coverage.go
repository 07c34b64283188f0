package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// THP Coverage (cross-layer): the share of resident cached-block pages
// backed by transparent huge pages; low coverage of a large cache costs
// dTLB misses and page walks. Descending severity over all cached RDDs
// with at least min_pages resident pages in total; score 0.

func init() {
	register(entry{key: "thp_coverage", name: "THP Coverage of Cached Blocks", order: orderTHPCoverage,
		common: func(c *Config) Common { return c.THPCoverage.Common },
		buildTrace: func(c *Config) TraceHeuristic {
			return &THPCoverage{share: c.THPCoverage.THPShareSeverity, minPages: c.THPCoverage.MinPages}
		}})
}

// THPCoverage is the THP coverage heuristic.
type THPCoverage struct {
	share    Thresholds
	minPages int64
}

// Name implements TraceHeuristic.
func (h *THPCoverage) Name() string { return "THP Coverage of Cached Blocks" }

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
