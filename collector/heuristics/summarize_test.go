package heuristics

import (
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestSummarizeRecords(t *testing.T) {
	const app = "application_7_0001"
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	thp := present | uint32(stratav1.PageState_PAGE_STATE_THP)
	swapped := uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	unmapped := uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
	blk := func(rdd int32, id string) *stratav1.SparkBlock {
		return &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: rdd, BlockId: id, Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}
	}
	run := func(count, state uint32, node int32) *stratav1.PageRun {
		return &stratav1.PageRun{Count: count, State: state, NumaNode: node}
	}
	rec := func(ns int64, kind stratav1.AccessKind, b *stratav1.SparkBlock, runs ...*stratav1.PageRun) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: ns, Access: kind, Block: b, PageSize: 4096, Runs: runs, CpuNumaNode: 0}
	}
	records := []*stratav1.Record{
		// rdd_1_0: an old observation superseded by a newer one.
		rec(1, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(1, "rdd_1_0"), run(100, present, 0)),
		rec(5, stratav1.AccessKind_ACCESS_KIND_READ, blk(1, "rdd_1_0"), run(512, thp, 0), run(10, swapped, -1), run(3, unmapped, -1)),
		// rdd_1_1 on node 1.
		rec(2, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(1, "rdd_1_1"), run(200, present, 1)),
		// rdd_2_0 freed after its last observation: gone.
		rec(2, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(2, "rdd_2_0"), run(50, present, 0)),
		rec(3, stratav1.AccessKind_ACCESS_KIND_FREE, blk(2, "rdd_2_0")),
		// Faults: one local, one remote by node, one remote by flag.
		rec(6, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_0"), run(1, present, 0)),
		rec(7, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_1"), run(1, present, 1)),
		rec(8, stratav1.AccessKind_ACCESS_KIND_FAULT, blk(1, "rdd_1_1"), run(1, present|uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE), -1)),
		// Not this app, not an RDD, execution memory: ignored.
		{Block: &stratav1.SparkBlock{AppId: "other", RddId: 1, BlockId: "rdd_1_0"}, Runs: []*stratav1.PageRun{run(9, present, 0)}},
		rec(9, stratav1.AccessKind_ACCESS_KIND_ALLOC, blk(-1, "broadcast_0"), run(9, present, 0)),
		rec(9, stratav1.AccessKind_ACCESS_KIND_ALLOC, &stratav1.SparkBlock{AppId: app, RddId: 3, BlockId: "page_1_1",
			Mode: stratav1.MemoryMode_MEMORY_MODE_EXECUTION}, run(9, present, 0)),
	}
	wl := []*stratav1.WorkloadCounters{{AppId: app, Pid: 1}, {AppId: "other", Pid: 2}}
	ts := SummarizeRecords(app, 0, records, wl)
	if ts.AppID != app || ts.PageSize != 4096 || ts.NUMANodes != 2 || len(ts.Workloads) != 1 {
		t.Fatalf("summary header %+v", ts)
	}
	if len(ts.RDDs) != 1 {
		t.Fatalf("RDDs %+v, want only rdd 1", ts.RDDs)
	}
	r := ts.RDDs[0]
	if r.RDDID != 1 || r.TotalPages != 722 || r.SwappedPages != 10 || r.THPPages != 512 ||
		r.PagesByNode[0] != 512 || r.PagesByNode[1] != 200 {
		t.Fatalf("rdd 1 = %+v", r)
	}
	if ts.Faults == nil || ts.Faults.Local != 1 || ts.Faults.Remote != 2 {
		t.Fatalf("faults %+v", ts.Faults)
	}
	if ts := SummarizeRecords(app, 4096, nil, nil); ts.Faults != nil || len(ts.RDDs) != 0 {
		t.Fatalf("empty summary %+v", ts)
	}
}
