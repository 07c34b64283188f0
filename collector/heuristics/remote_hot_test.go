package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

func TestRemoteHot(t *testing.T) {
	h := &RemoteHot{p: remoteHot.of(defaults(t))}
	f64 := func(v float64) *float64 { return &v }
	// blk is a 4 MiB block with pages on the nodes of pages and gets from
	// the nodes of gets (the first get the put's read-back).
	blk := func(rdd int32, pages, gets map[int32]uint64, heat *job.BlockHeat) job.CachedBlock {
		var n uint64
		for _, g := range gets {
			n += g
		}
		return job.CachedBlock{RDD: rdd, Pages: 1024, PageSize: 4096, PagesByNode: pages, GetsByNode: gets, Gets: n + 1, PutReads: 1,
			SampledFaultsByNode: map[int32]uint64{}, Heat: heat}
	}
	on := func(n int32, v uint64) map[int32]uint64 { return map[int32]uint64{n: v} }
	remote := blk(1, on(1, 1024), on(0, 10), nil)                                   // all pages on node 1, read from node 0
	local := blk(2, on(0, 1024), on(0, 10), nil)                                    // read where they live
	split := blk(3, map[int32]uint64{0: 512, 1: 512}, on(0, 10), nil)               // half remote
	coldRemote := blk(4, on(1, 1024), on(0, 1), nil)                                // read once after its put: not hot
	damonHot := blk(5, on(1, 1024), on(0, 1), &job.BlockHeat{AccessRate: f64(0.5)}) // hot by DAMON
	damonCold := blk(6, on(1, 1024), on(0, 10), &job.BlockHeat{AccessRate: f64(0.05)})
	partial := blk(7, on(1, 1024), on(0, 10), &job.BlockHeat{AccessRate: f64(0), Partial: true}) // partial: reads decide
	for _, tc := range []struct {
		name   string
		nodes  int
		blocks []job.CachedBlock
		sev    Severity
		score  int64
		skip   bool
		says   string // the Remote hot data detail, when the result is unrated
	}{
		{"hot pages on the other node than their readers", 2, []job.CachedBlock{remote}, Critical, 4, false, ""},
		{"read where they live", 2, []job.CachedBlock{local}, None, 0, false, ""},
		{"one remote, one local block: half", 2, []job.CachedBlock{remote, local}, Critical, 4, false, ""},
		{"half the pages remote", 2, []job.CachedBlock{split, local}, Moderate, 2, false, ""},
		{"a block read once is not hot", 2, []job.CachedBlock{coldRemote, local}, None, 0, false, ""},
		{"hot by DAMON though read once", 2, []job.CachedBlock{damonHot, local}, Critical, 4, false, ""},
		{"DAMON says cold though read often", 2, []job.CachedBlock{damonCold, local}, None, 0, false, ""},
		{"a partial sample does not decide", 2, []job.CachedBlock{partial}, Critical, 4, false, ""},
		{"no hot block", 2, []job.CachedBlock{coldRemote}, None, 0, true, ""},
		{"one node", 1, []job.CachedBlock{local}, None, 0, false, OneNode},
		{"nodes unknown, one seen", 0, []job.CachedBlock{local}, None, 0, false, OneNode},
		{"nodes unknown, two seen", 0, []job.CachedBlock{remote, local}, Critical, 4, false, ""},
		{"no blocks", 2, nil, None, 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, &TraceSummary{NUMANodes: tc.nodes, Blocks: tc.blocks})
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != tc.score)) {
				t.Fatalf("got %v score %d skip %v, want %v score %d skip %v: %+v", r.Severity, r.Score, r.Skip, tc.sev, tc.score, tc.skip, r.Details)
			}
			if v, _ := findDetail(r, "Remote hot data"); v != tc.says {
				t.Errorf("remote hot data %q, want %q", v, tc.says)
			}
		})
	}
	r := h.ApplyTrace(nil, &TraceSummary{NUMANodes: 2, Blocks: []job.CachedBlock{remote, local}})
	if v, _ := findDetail(r, "Remote share of hot cached data's accesses"); v != "0.5000" {
		t.Errorf("share %q", v)
	}
	if v, _ := findDetail(r, "rdd 1"); v != "100.0 % of 10 accesses remote in 1 hot blocks (hot by reads and faults); pages on node 1: 1024, accessed from node 0: 10" {
		t.Errorf("rdd 1 detail %q", v)
	}
}
