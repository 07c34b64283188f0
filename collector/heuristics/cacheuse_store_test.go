package heuristics

import (
	"context"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

// The per-block input as a real store answers it for records a two-node
// machine sent (storetest.CacheBatch): rdd_5_0, hot by DAMON, has its
// pages on node 1 and three of its four accesses (two gets after its put,
// one sampled fault) from node 0; rdd_6_0, read once after its put, is not
// hot.
func TestRemoteHotFromStore(t *testing.T) {
	s := storetest.Open(t)
	storetest.MustAppend(t, s, storetest.CacheBatch(1))
	ctx := context.Background()
	blocks, err := s.CachedBlocks(ctx, storetest.CacheApp)
	if err != nil {
		t.Fatal(err)
	}
	machines, err := s.Machines(ctx, storetest.CacheApp)
	if err != nil || len(machines) != 1 {
		t.Fatalf("machines %+v, %v", machines, err)
	}
	ts := &TraceSummary{AppID: storetest.CacheApp, NUMANodes: int(machines[0].NUMANodes), Blocks: blocks}
	r := (&RemoteHot{p: remoteHot.of(defaults(t))}).ApplyTrace(nil, ts)
	if r.Skip || r.Severity != Critical || r.Score != 4 {
		t.Fatalf("got %+v", r)
	}
	wantDetails(t, r, map[string]string{
		"Remote share of hot cached data's accesses": "0.7500",
		"NUMA nodes": "2",
		"rdd 5":      "75.0 % of 4 accesses remote in 1 hot blocks (hot by DAMON heat); pages on node 1: 4, accessed from node 0: 3, node 1: 1",
	})
	if _, ok := findDetail(r, "rdd 6"); ok {
		t.Error("rdd 6, read once after its put, counted as hot")
	}
}

// The same blocks from a machine with one NUMA node (every page and CPU on
// node 0): the result says the question is unavailable there, unrated.
func TestRemoteHotOneNodeFromStore(t *testing.T) {
	b := storetest.CacheBatch(1)
	b.Node.NumaNodes = 1
	for _, r := range b.Records {
		r.CpuNumaNode = 0
		for _, run := range r.Runs {
			run.NumaNode = 0
		}
	}
	s := storetest.Open(t)
	storetest.MustAppend(t, s, b)
	ctx := context.Background()
	blocks, err := s.CachedBlocks(ctx, storetest.CacheApp)
	if err != nil || len(blocks) != 2 {
		t.Fatalf("blocks %+v, %v", blocks, err)
	}
	machines, err := s.Machines(ctx, storetest.CacheApp)
	if err != nil || len(machines) != 1 || machines[0].NUMANodes != 1 {
		t.Fatalf("machines %+v, %v", machines, err)
	}
	r := (&RemoteHot{p: remoteHot.of(defaults(t))}).ApplyTrace(nil,
		&TraceSummary{AppID: storetest.CacheApp, NUMANodes: 1, Blocks: blocks})
	if r.Skip || r.Severity != None {
		t.Fatalf("got %+v", r)
	}
	wantDetails(t, r, map[string]string{"Remote hot data": OneNode})
}
