package heuristics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Remote Hot Data (cross-layer, docs/heuristics.md#hot-data-on-a-remote-numa-node):
// hot cached blocks whose pages sit on another NUMA node than the CPUs of
// the tasks reading them. A block is hot when its latest DAMON sample
// (seeing all its monitored bytes) has an access rate of at least
// hot_access_rate; without such a sample, when it was read at least
// min_reads times after its put or took a sampled fault. A hot block's
// accesses (the hook's gets and the sampled faults, by the node of the
// CPU they ran on) are remote by the share of its present pages on other
// nodes; the result's share is that over the hot blocks, weighted by their
// bytes. With fewer than two NUMA nodes the result says so, unrated.
// Score = severity × RDDs whose share reaches the LOW threshold.

// RemoteHotParams are the parameters of Hot Data on a Remote NUMA Node.
type RemoteHotParams struct {
	Common              `yaml:",inline"`
	RemoteShareSeverity Thresholds `yaml:"remote_share_severity" check:"asc" help:"hot cached bytes' accesses from another node than their pages' / all their accesses"`
	HotAccessRate       float64    `yaml:"hot_access_rate" check:"positive" help:"a block whose latest DAMON sample has at least this access rate (0..1) is hot"`
	MinReads            int64      `yaml:"min_reads" check:"positive" help:"without DAMON: a block read this often after its put is hot"`
}

var remoteHot = register(def[RemoteHotParams]{Key: "remote_hot", Name: "Hot Data on a Remote NUMA Node", Order: 307,
	Defaults:   RemoteHotParams{RemoteShareSeverity: Thresholds{0.1, 0.25, 0.4, 0.5}, HotAccessRate: 0.2, MinReads: 2},
	BuildTrace: func(p RemoteHotParams) TraceHeuristic { return &RemoteHot{p: p} }})

// RemoteHot is the hot data on a remote NUMA node heuristic.
type RemoteHot struct{ p RemoteHotParams }

// OneNode is what the result says when the traced machines have one NUMA
// node.
const OneNode = "unavailable: the traced machines have one NUMA node"

// hot tells whether b is hot, and by which signal.
func (h *RemoteHot) hot(b *job.CachedBlock) (bool, string) {
	if hb := b.Heat; hb != nil && !hb.Partial && hb.AccessRate != nil {
		return *hb.AccessRate >= h.p.HotAccessRate, "DAMON"
	}
	var faults uint64
	for _, n := range b.SampledFaultsByNode {
		faults += n
	}
	return b.Reads() >= uint64(max(h.p.MinReads, 1)) || faults > 0, "reads"
}

// remoteShare is the share of b's accesses from CPUs on a node other than
// its pages', and the accesses counted; ok is false when no access or no
// present page has a known node.
func remoteShare(b *job.CachedBlock) (share float64, accesses uint64, ok bool) {
	var present uint64
	for n, p := range b.PagesByNode {
		if n >= 0 {
			present += p
		}
	}
	if present == 0 {
		return 0, 0, false
	}
	var remote float64
	add := func(byNode map[int32]uint64) {
		for n, c := range byNode {
			if n < 0 {
				continue
			}
			accesses += c
			remote += float64(c) * float64(present-b.PagesByNode[n]) / float64(present)
		}
	}
	add(b.GetsByNode)
	add(b.SampledFaultsByNode)
	if accesses == 0 {
		return 0, 0, false
	}
	return remote / float64(accesses), accesses, true
}

// ApplyTrace implements TraceHeuristic.
func (h *RemoteHot) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	if len(ts.Blocks) == 0 {
		return skip
	}
	seen := map[int32]bool{}
	for i := range ts.Blocks {
		for n := range ts.Blocks[i].PagesByNode {
			if n >= 0 {
				seen[n] = true
			}
		}
	}
	if max(ts.NUMANodes, len(seen)) < 2 {
		return Result{Severity: None, Details: []Detail{detail("Remote hot data", OneNode)}}
	}
	type rddShare struct {
		rdd           int32
		hot           int
		bytes, remote float64
		signals       map[string]bool
		pageNodes     map[int32]uint64
		readerNodes   map[int32]uint64
		accesses      uint64
	}
	byRDD := map[int32]*rddShare{}
	var all, remote float64
	for i := range ts.Blocks {
		b := &ts.Blocks[i]
		hot, signal := h.hot(b)
		if !hot {
			continue
		}
		share, acc, ok := remoteShare(b)
		if !ok {
			continue
		}
		w := float64(max(b.Bytes(), 1))
		r := byRDD[b.RDD]
		if r == nil {
			r = &rddShare{rdd: b.RDD, signals: map[string]bool{}, pageNodes: map[int32]uint64{}, readerNodes: map[int32]uint64{}}
			byRDD[b.RDD] = r
		}
		r.hot++
		r.bytes += w
		r.remote += w * share
		r.signals[signal] = true
		r.accesses += acc
		for n, p := range b.PagesByNode {
			r.pageNodes[n] += p
		}
		for n, c := range b.GetsByNode {
			r.readerNodes[n] += c
		}
		for n, c := range b.SampledFaultsByNode {
			r.readerNodes[n] += c
		}
		all += w
		remote += w * share
	}
	if all == 0 {
		return skip
	}
	share := remote / all
	sev := h.p.RemoteShareSeverity.Ascending(share)
	rdds := make([]*rddShare, 0, len(byRDD))
	for _, r := range byRDD {
		rdds = append(rdds, r)
	}
	slices.SortFunc(rdds, func(a, b *rddShare) int { return cmp.Compare(a.rdd, b.rdd) })
	d := []Detail{
		detail("Remote share of hot cached data's accesses", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("NUMA nodes", strconv.Itoa(max(ts.NUMANodes, len(seen)))),
	}
	offenders := 0
	for _, r := range rdds {
		s := r.remote / r.bytes
		if s >= h.p.RemoteShareSeverity[0] {
			offenders++
		}
		by := "DAMON heat"
		if r.signals["reads"] {
			by = "reads and faults"
			if r.signals["DAMON"] {
				by = "DAMON heat, reads and faults"
			}
		}
		d = append(d, detail("rdd "+strconv.Itoa(int(r.rdd)), strconv.FormatFloat(100*s, 'f', 1, 64)+" % of "+
			strconv.FormatUint(r.accesses, 10)+" accesses remote in "+strconv.Itoa(r.hot)+" hot blocks (hot by "+by+
			"); pages on "+nodeList(r.pageNodes)+", accessed from "+nodeList(r.readerNodes)))
	}
	return Result{Severity: sev, Score: Score(sev, offenders), Details: d}
}

// nodeList is "node 0: 12, node 1: 3" ascending, unknown nodes last.
func nodeList(m map[int32]uint64) string {
	keys := make([]int32, 0, len(m))
	for n := range m {
		keys = append(keys, n)
	}
	slices.SortFunc(keys, func(a, b int32) int {
		if (a < 0) != (b < 0) {
			if a < 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a, b)
	})
	s := ""
	for i, n := range keys {
		if i > 0 {
			s += ", "
		}
		name := "node " + strconv.Itoa(int(n))
		if n < 0 {
			name = "unknown node"
		}
		s += name + ": " + strconv.FormatUint(m[n], 10)
	}
	return s
}
