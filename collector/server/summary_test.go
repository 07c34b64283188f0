package server

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestTraceSummaryFromStore: the cross-layer input the collector reads back
// for one application: each block's latest observation while it was live
// counts (a finished application's blocks are all freed, and what they held
// is what the heuristics judge), holes are not pages, other apps, non-RDD blocks
// and execution memory are left out, and sampled faults split local and
// remote by node numbers or by the agent's CROSS_NODE mark; the node count
// and page size are the agent's NodeInfo.
func TestTraceSummaryFromStore(t *testing.T) {
	const app = "application_7_0001"
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	thp := present | uint32(stratav1.PageState_PAGE_STATE_THP)
	swapped := uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	unmapped := uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
	blk := func(rdd int32, id string) *stratav1.SparkBlock {
		return &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: rdd, BlockId: id, Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}
	}
	va := uint64(0x10000000)
	run := func(count, state uint32, node int32) *stratav1.PageRun {
		r := &stratav1.PageRun{Vaddr: va, Count: count, State: state, NumaNode: node}
		if state&present != 0 {
			r.Pfn = va >> 12
		}
		va += uint64(count) * 4096
		return r
	}
	rec := func(ns int64, kind stratav1.AccessKind, b *stratav1.SparkBlock, runs ...*stratav1.PageRun) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: ns, Access: kind, Block: b, Pid: 9, PageSize: 4096, Runs: runs, CpuNumaNode: 0, Vaddr: 1, Length: 1}
	}
	records := []*stratav1.Record{
		// rdd_1_0: an old observation superseded by a newer one.
		rec(1, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(1, "rdd_1_0"), run(100, present, 0)),
		rec(5, stratav1.AccessKind_ACCESS_KIND_READ, blk(1, "rdd_1_0"), run(512, thp, 0), run(10, swapped, -1), run(3, unmapped, -1)),
		// rdd_1_1 on node 1.
		rec(2, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(1, "rdd_1_1"), run(200, present, 1)),
		// rdd_2_0 freed after its last observation: counts as last seen.
		rec(2, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(2, "rdd_2_0"), run(50, present, 0)),
		rec(3, stratav1.AccessKind_ACCESS_KIND_FREE, blk(2, "rdd_2_0")),
		// Fault samples: one local, one remote by node, one remote by mark.
		rec(6, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_0"), run(1, present, 0)),
		rec(7, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_1"), run(1, present, 1)),
		rec(8, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_1"), run(1, present|uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE), -1)),
		// Another app, a non-RDD block, execution memory: left out.
		rec(9, stratav1.AccessKind_ACCESS_KIND_ALLOC, &stratav1.SparkBlock{AppId: "other", ExecutorId: "1", RddId: 1, BlockId: "rdd_1_0"}, run(9, present, 0)),
		rec(9, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(-1, "broadcast_0"), run(9, present, 0)),
		rec(9, stratav1.AccessKind_ACCESS_KIND_ALLOC, &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: 3, BlockId: "page_1_1",
			Mode: stratav1.MemoryMode_MEMORY_MODE_EXECUTION}, run(9, present, 0)),
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Append(ctx, &stratav1.Batch{NodeName: "n", BootId: "b", Seq: 1, Records: records,
		Node:      &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096, MemTotalBytes: 8 << 30},
		Workloads: []*stratav1.WorkloadCounters{{AppId: app, ExecutorId: "1", Pid: 9, StartUnixNano: 1, EndUnixNano: 2, PmuStatus: "unavailable: no hardware PMU"}}}); err != nil {
		t.Fatal(err)
	}
	a := analyzer{traces: st, log: slog.New(slog.DiscardHandler)}
	ts, err := a.summary(ctx, app)
	if err != nil || ts == nil || ts.AppID != app || len(ts.Workloads) != 1 || ts.NUMANodes != 2 || ts.PageSize != 4096 {
		t.Fatalf("summary = %+v, %v", ts, err)
	}
	if len(ts.RDDs) != 2 {
		t.Fatalf("RDDs %+v, want rdd 1 and the freed rdd 2", ts.RDDs)
	}
	r := ts.RDDs[0]
	if r.RDDID != 1 || r.TotalPages != 722 || r.SwappedPages != 10 || r.THPPages != 512 ||
		r.PagesByNode[0] != 512 || r.PagesByNode[1] != 200 || len(r.PagesByNode) != 2 {
		t.Fatalf("rdd 1 = %+v", r)
	}
	if r := ts.RDDs[1]; r.RDDID != 2 || r.TotalPages != 50 || r.PagesByNode[0] != 50 || len(r.PagesByNode) != 1 {
		t.Fatalf("rdd 2 = %+v", r)
	}
	if ts.Faults == nil || ts.Faults.Local != 1 || ts.Faults.Remote != 2 {
		t.Fatalf("faults %+v", ts.Faults)
	}
	if ts, err := a.summary(ctx, "application_none"); ts != nil || err != nil {
		t.Fatalf("an app without traces: summary %+v, %v", ts, err)
	}
}

// The node count is the largest any machine of the app reported; the page
// size is known only when the machines agree.
func TestTopology(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []store.Machine
		nodes int
		page  int64
	}{
		{"none", nil, 0, 0},
		{"unknown", []store.Machine{{PageSize: 4096}}, 0, 4096},
		{"two machines", []store.Machine{{NUMANodes: 2, PageSize: 4096}, {NUMANodes: 4, PageSize: 4096}}, 4, 4096},
		{"page sizes differ", []store.Machine{{NUMANodes: 1, PageSize: 4096}, {NUMANodes: 1, PageSize: 65536}}, 1, 0},
	} {
		if n, p := topology(tc.in); n != tc.nodes || p != tc.page {
			t.Errorf("%s: topology = %d nodes, %d B pages; want %d, %d", tc.name, n, p, tc.nodes, tc.page)
		}
	}
}
