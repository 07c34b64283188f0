package heuristics

import (
	"slices"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// NUMA Balance (cross-layer): a cached RDD whose resident pages sit mostly
// on one NUMA node makes executors on the other nodes read remote memory.
// Per RDD with at least min_pages resident pages, imbalance = pages on the
// fullest node / mean pages per node (1 = even, N = all on one of N nodes);
// the severity is the worst RDD's. Needs PagesByNode and at least two
// nodes; score = severity × offending RDDs.

func init() {
	register(entry{key: "numa_balance", name: "NUMA Balance of Cached RDDs", order: orderNUMABalance,
		common: func(c *Config) Common { return c.NUMABalance.Common },
		buildTrace: func(c *Config) TraceHeuristic {
			return &NUMABalance{imbalance: c.NUMABalance.ImbalanceSeverity, minPages: c.NUMABalance.MinPages}
		}})
}

// NUMABalance is the NUMA balance heuristic.
type NUMABalance struct {
	imbalance Thresholds
	minPages  int64
}

// Name implements TraceHeuristic.
func (h *NUMABalance) Name() string { return "NUMA Balance of Cached RDDs" }

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
