package annotator

import (
	"context"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestLiveRunsAndHeat: LiveRuns lists every live block, by pid and hook
// id, with its range and the pages of its latest resolution (the moved
// range and its pages after a MOVE, none once freed, none for a block whose pages the cache could not
// keep); AddHeat's samples ride in the next batch beside the records.
func TestLiveRunsAndHeat(t *testing.T) {
	sink := &memSink{}
	// Room for the runs of one block only (one run each: runOverhead bytes).
	a := New(&rangeResolver{}, sink, Config{NodeName: "n1", BootID: "b1", MaxCacheBytes: runOverhead, ReuseWindow: time.Hour})
	s := &hooksrv.Session{PID: 42, AppID: "app-1", ExecutorID: "3"}
	ctx := context.Background()
	alloc := stratav1.AccessKind_ACCESS_KIND_ALLOC
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, alloc, 2, 0x20000, 0x2000))
	a.HandleEvent(ctx, ev(s, hooksrv.EventRegister, alloc, 1, 0x10000, 0x4000)) // the cache is full: not kept
	live := a.LiveRuns()
	if len(live) != 2 || live[0].Block.GetHookBlockId() != 1 || live[1].Block.GetHookBlockId() != 2 {
		t.Fatalf("live = %+v, want blocks 1 and 2 in that order", live)
	}
	if live[0].Runs != nil || live[0].PID != 42 || live[0].Vaddr != 0x10000 || live[0].Length != 0x4000 {
		t.Fatalf("block 1 = %+v, want pid 42, range [0x10000, 0x14000) and no runs (cache full)", live[0])
	}
	if r := live[1].Runs; len(r) != 1 || r[0].GetPfn() != 0x20 || r[0].GetCount() != 2 || live[1].Resolved.IsZero() {
		t.Fatalf("block 2 runs = %v at %v, want 2 pages from pfn 0x20", r, live[1].Resolved)
	}
	if b := live[1].Block; b.GetAppId() != "app-1" || b.GetExecutorId() != "3" || b.GetRddId() != 7 || b.GetPartition() != 2 || b.GetBlockId() != "rdd_7_2" {
		t.Fatalf("block 2 names = %v", b)
	}
	a.HandleEvent(ctx, ev(s, hooksrv.EventMove, stratav1.AccessKind_ACCESS_KIND_MOVE, 2, 0x50000, 0x2000))
	a.HandleEvent(ctx, ev(s, hooksrv.EventFree, stratav1.AccessKind_ACCESS_KIND_FREE, 1, 0x10000, 0x4000))
	live = a.LiveRuns()
	if len(live) != 1 || live[0].Runs[0].GetPfn() != 0x50 || live[0].Vaddr != 0x50000 || live[0].Length != 0x2000 {
		t.Fatalf("after move and free: %+v, want block 2 at [0x50000, 0x52000), pfn 0x50", live)
	}

	heat := &stratav1.HeatSample{AppId: "app-1", Pid: 42, HookBlockId: 2, ResolvedBytes: 8192, CoveredBytes: 4096}
	a.AddHeat(heat)
	a.Flush()
	var got []*stratav1.HeatSample
	for _, b := range sink.batches {
		got = append(got, b.GetHeat()...)
	}
	if len(got) != 1 || got[0] != heat || len(sink.batches[len(sink.batches)-1].GetRecords()) == 0 {
		t.Fatalf("heat in batches = %v, want the one sample beside the records", got)
	}
}
