package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// CacheApp is the application of CacheBatch.
const CacheApp = "app-cacheuse"

// cacheBlock names a block of CacheApp on executor 1, pid 300.
func cacheBlock(rdd int32, id string, hook uint64, chunk, chunks uint32) *stratav1.SparkBlock {
	return &stratav1.SparkBlock{AppId: CacheApp, ExecutorId: "1", RddId: rdd, Partition: 0, BlockId: id,
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP,
		HookBlockId: hook, Chunk: chunk, Chunks: chunks}
}

// CacheBatch is how a two-node machine reports two cached blocks of
// CacheApp (executor 1, pid 300):
//
//   - rdd_5_0 in two buffers (hooks 51, 52), each 2 present pages on node
//     1, put at T0+1s by thread 7 on node 0 (hook 51's counters: 2 major
//     faults); every buffer read by thread 7 at T0+1.1s (the put's
//     read-back), thread 8 on node 0 at T0+2s and thread 9 on node 1 at
//     T0+3s; one sampled read fault from a CPU on node 0 on a node-1 page;
//     a DAMON sample of hook 51 at T0+4s: 8 KiB covered at access rate 0.5
//     sampled every 200 ms.
//   - rdd_6_0: hook 61, 4 present pages on node 0, put at T0+1s by thread
//     7 and read back by it at T0+1.2s, freed (removed) at T0+5s; cached
//     again as hook 62 (4 pages on node 0) at T0+6s by thread 10, read back
//     by it at T0+6.1s and by thread 11 on node 0 at T0+7s.
func CacheBatch(seq uint64) *stratav1.Batch {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	rec := func(t int64, access stratav1.AccessKind, tid uint32, cpu int32, b *stratav1.SparkBlock, runs ...*stratav1.PageRun) *stratav1.Record {
		r := &stratav1.Record{TimeUnixNano: T0 + t, Access: access, Pid: 300, Tid: tid, Block: b, Vaddr: 0x7e00_0000_0000 +
			b.GetHookBlockId()<<20, Length: 4 * PageSize, PageSize: PageSize, CpuNumaNode: cpu, Runs: runs}
		if access == stratav1.AccessKind_ACCESS_KIND_FREE {
			r.FreeReason = stratav1.FreeReason_FREE_REASON_REMOVED
		}
		return r
	}
	run := func(b *stratav1.SparkBlock, pages uint32, pfn uint64, node int32) *stratav1.PageRun {
		return &stratav1.PageRun{Vaddr: 0x7e00_0000_0000 + b.GetHookBlockId()<<20, Count: pages, State: present, Pfn: pfn,
			Kpageflags: KPF(5), Kpagecount: 1, NumaNode: node}
	}
	alloc, read, free := stratav1.AccessKind_ACCESS_KIND_ALLOC, stratav1.AccessKind_ACCESS_KIND_READ, stratav1.AccessKind_ACCESS_KIND_FREE
	a0, a1 := cacheBlock(5, "rdd_5_0", 51, 0, 2), cacheBlock(5, "rdd_5_0", 52, 1, 2)
	c0, c1 := cacheBlock(6, "rdd_6_0", 61, 0, 1), cacheBlock(6, "rdd_6_0", 62, 0, 1)
	put := rec(1e9, alloc, 7, 0, a0, run(a0, 2, 0x5000, 1))
	put.Faults = &stratav1.FaultCounts{Read: 3, Major: 2}
	fault := rec(25e8, stratav1.AccessKind_ACCESS_KIND_FAULT, 8, 0, a0, run(a0, 1, 0x5000, 1))
	fault.FaultKind, fault.Length = stratav1.FaultKind_FAULT_KIND_READ, 1
	rate, mon := 0.5, uint64(2*PageSize)
	return &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: seq, Node: &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize},
		Records: []*stratav1.Record{
			put, rec(1e9, alloc, 7, 0, a1, run(a1, 2, 0x5002, 1)),
			rec(1e9, alloc, 7, 0, c0, run(c0, 4, 0x6000, 0)),
			rec(11e8, read, 7, 0, a0), rec(11e8, read, 7, 0, a1),
			rec(12e8, read, 7, 0, c0),
			rec(2e9, read, 8, 0, a0), rec(2e9, read, 8, 0, a1),
			fault,
			rec(3e9, read, 9, 1, a0), rec(3e9, read, 9, 1, a1),
			rec(5e9, free, 7, 0, c0),
			rec(6e9, alloc, 10, 0, c1, run(c1, 4, 0x6100, 0)),
			rec(61e8, read, 10, 0, c1),
			rec(7e9, read, 11, 0, c1),
		},
		Heat: []*stratav1.HeatSample{{AppId: CacheApp, ExecutorId: "1", Pid: 300, RddId: 5, Partition: 0, BlockId: "rdd_5_0",
			HookBlockId: 51, TimeUnixNano: T0 + 4e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: 2 * PageSize,
			MonitoredBytes: &mon, CoveredBytes: 2 * PageSize, AccessRate: &rate, SourceKind: stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN,
			Source: HeatOwn}},
	}
}

// WantCachedBlocks is CachedBlocks' answer for CacheApp after CacheBatch.
func WantCachedBlocks() []job.CachedBlock {
	rate, aps := 0.5, 2.5
	return []job.CachedBlock{
		{Node: Node, ExecutorID: "1", PID: 300, BlockID: "rdd_5_0", RDD: 5, Partition: 0, CachedNs: T0 + 1e9,
			Gets: 3, PutReads: 1, LastGetNs: T0 + 3e9, GetsByNode: map[int32]uint64{0: 2, 1: 1},
			Pages: 4, PagesByNode: map[int32]uint64{1: 4}, PageSize: PageSize, MajorFaults: 2,
			SampledFaultsByNode: map[int32]uint64{0: 1},
			Heat: &job.BlockHeat{TimeNs: T0 + 4e9, AccessRate: &rate, AccessesPerSecGiB: &aps, MonitoredBytes: 2 * PageSize,
				CoveredBytes: 2 * PageSize}},
		{Node: Node, ExecutorID: "1", PID: 300, BlockID: "rdd_6_0", RDD: 6, Partition: 0, CachedNs: T0 + 1e9,
			Gets: 3, PutReads: 2, LastGetNs: T0 + 7e9, GetsByNode: map[int32]uint64{0: 3},
			Pages: 4, PagesByNode: map[int32]uint64{0: 4}, PageSize: PageSize, SampledFaultsByNode: map[int32]uint64{}},
	}
}

// testCachedBlocks: each cached block's use, from the records of a
// two-node machine: gets counted once per get of every buffer, the put's
// read-back told apart, registrations summed, the free of an earlier
// registration not the block's, pages and accesses per node, major and
// sampled faults, the latest DAMON sample.
func testCachedBlocks(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, CacheBatch(1))
	cr, ok := s.(store.CacheReader)
	if !ok {
		t.Fatalf("%T answers no CachedBlocks", s)
	}
	got, err := cr.CachedBlocks(context.Background(), CacheApp)
	if err != nil {
		t.Fatal(err)
	}
	want := WantCachedBlocks()
	if len(got) != len(want) {
		t.Fatalf("%d blocks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		gh, wh := g.Heat, w.Heat
		g.Heat, w.Heat = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("block %d:\n got %+v\nwant %+v", i, g, w)
		}
		if (gh == nil) != (wh == nil) || (gh != nil && !reflect.DeepEqual(*gh, *wh)) {
			t.Errorf("block %d heat: got %+v, want %+v", i, gh, wh)
		}
	}
	if r := got[0].Reads(); r != 2 {
		t.Errorf("rdd_5_0 reads after its put = %d, want 2", r)
	}
	if none, err := cr.CachedBlocks(context.Background(), "application_0_0"); err != nil || len(none) != 0 {
		t.Errorf("an app without records: %+v, %v", none, err)
	}
}
