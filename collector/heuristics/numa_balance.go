package heuristics

import (
	"slices"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// NUMA Balance (cross-layer, docs/heuristics.md#numa-balance-of-cached-rdds):
// a cached RDD whose resident pages sit mostly on one NUMA node makes
// executors on the other nodes read remote memory. Per RDD with at least
// min_pages resident pages, imbalance = pages on the fullest node / mean
// pages per node (1 = even, N = all on one of N nodes); the severity is the
// worst RDD's. Needs PagesByNode and at least two nodes (the machines'
// count, or the nodes seen holding pages); score = severity × offending
// RDDs.

// NUMABalanceParams are the parameters of NUMA Balance of Cached RDDs.
type NUMABalanceParams struct {
	Common            `yaml:",inline"`
	ImbalanceSeverity Thresholds `yaml:"imbalance_severity" check:"asc" help:"per cached RDD: pages on the fullest node / mean pages per node"`
	MinPages          int64      `yaml:"min_pages" help:"RDDs with fewer resident pages are not rated"`
}

var numaBalance = register(def[NUMABalanceParams]{Key: "numa_balance", Name: "NUMA Balance of Cached RDDs", Order: 301,
	Defaults: NUMABalanceParams{ImbalanceSeverity: Thresholds{1.25, 1.5, 1.75, 2.0}, MinPages: 2560},
	BuildTrace: func(p NUMABalanceParams) TraceHeuristic {
		return &NUMABalance{imbalance: p.ImbalanceSeverity, minPages: p.MinPages}
	}})

// NUMABalance is the NUMA balance heuristic.
type NUMABalance struct {
	imbalance Thresholds
	minPages  int64
}

// ApplyTrace implements TraceHeuristic.
func (h *NUMABalance) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	nodes := ts.NUMANodes
	seen := map[int32]bool{}
	for _, r := range ts.RDDs {
		for n := range r.PagesByNode {
			seen[n] = true
		}
	}
	nodes = max(nodes, len(seen))
	if nodes < 2 {
		return skip
	}
	sev := None
	var offenders int
	var d []Detail
	looked := 0
	for _, r := range ts.RDDs {
		total := r.ResidentPages()
		if total < h.minPages || total == 0 {
			continue
		}
		looked++
		var top int64
		var topNode int32
		keys := make([]int32, 0, len(r.PagesByNode))
		for n := range r.PagesByNode {
			keys = append(keys, n)
		}
		slices.Sort(keys)
		for _, n := range keys {
			if p := r.PagesByNode[n]; p > top {
				top, topNode = p, n
			}
		}
		imb := float64(top) / (float64(total) / float64(nodes))
		s := h.imbalance.Ascending(imb)
		sev = max(sev, s)
		if s > Low {
			offenders++
			d = append(d, detail(rddName(r), strconv.FormatFloat(imb, 'f', 2, 64)+"× the even share on node "+
				strconv.Itoa(int(topNode))+" ("+itoa(top)+" of "+itoa(total)+" pages)"))
		}
	}
	if looked == 0 {
		return skip
	}
	d = append([]Detail{detail("NUMA nodes", strconv.Itoa(nodes)), detail("Cached RDDs looked at", strconv.Itoa(looked))}, d...)
	return Result{Severity: sev, Score: Score(sev, offenders), Details: d}
}

func rddName(r RDDPages) string {
	s := "rdd " + strconv.Itoa(int(r.RDDID))
	if r.Name != "" {
		s += " (" + r.Name + ")"
	}
	return s
}
