package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// MomentApp is the looking-back scenario's application (MomentBatch).
const MomentApp = "application_1526555215992_0042"

// The looking-back scenario, one batch on Node; every block is freed by
// its end, so the app has ended:
//
//   - T0: ALLOC rdd_1_0 (executor 1, pid 100), 4 pages at PFN 0x100
//   - T0+1s: ALLOC rdd_1_1 (executor 1, pid 100), 2 pages at PFN 0x200
//   - T0+2s: ALLOC rdd_2_0 (executor 2, pid 200), 8 pages sent as two
//     records of 4 over sub-ranges, PFN 0x300 and 0x304: 14 pages held,
//     the peak
//   - T0+3s: READ rdd_1_0 without pages: changes nothing
//   - T0+4s: FREE rdd_2_0: 6 pages
//   - T0+5s: MOVE rdd_1_0 to PFN 0x400 (4 pages): still 6
//   - T0+6s: FREE rdd_1_0 and rdd_1_1 (session end): nothing
//
// MomentPFNs says which block holds which PFN at each time.
func MomentBatch(seq uint64) *stratav1.Batch {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	blk := func(exec string, rdd, part int32, hook uint64) *stratav1.SparkBlock {
		return &stratav1.SparkBlock{AppId: MomentApp, ExecutorId: exec, RddId: rdd, Partition: part,
			BlockId: fmt.Sprintf("rdd_%d_%d", rdd, part), HookBlockId: hook, Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}
	}
	b10, b11, b20 := blk("1", 1, 0, 1), blk("1", 1, 1, 2), blk("2", 2, 0, 3)
	const base = uint64(0x7f40_0000_0000)
	rec := func(t int64, access stratav1.AccessKind, pid uint32, b *stratav1.SparkBlock, vaddr uint64, pages uint32, pfn uint64) *stratav1.Record {
		r := &stratav1.Record{TimeUnixNano: T0 + t, Access: access, Pid: pid, Block: b, Vaddr: vaddr,
			Length: uint64(pages) * PageSize, PageSize: PageSize}
		switch {
		case access == stratav1.AccessKind_ACCESS_KIND_FREE:
			r.FreeReason = stratav1.FreeReason_FREE_REASON_SESSION_END
		case pfn != 0:
			r.Runs = []*stratav1.PageRun{{Vaddr: vaddr, Count: pages, State: present, Pfn: pfn, Kpagecount: 1}}
		}
		return r
	}
	alloc, read, free, move := stratav1.AccessKind_ACCESS_KIND_ALLOC, stratav1.AccessKind_ACCESS_KIND_READ,
		stratav1.AccessKind_ACCESS_KIND_FREE, stratav1.AccessKind_ACCESS_KIND_MOVE
	return &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: seq, Records: []*stratav1.Record{
		rec(0, alloc, 100, b10, base, 4, 0x100),
		rec(1e9, alloc, 100, b11, base+0x100000, 2, 0x200),
		rec(2e9, alloc, 200, b20, base+0x200000, 4, 0x300),
		rec(2e9, alloc, 200, b20, base+0x204000, 4, 0x304),
		rec(3e9, read, 100, b10, base, 4, 0),
		rec(4e9, free, 200, b20, base+0x200000, 8, 0),
		rec(5e9, move, 100, b10, base+0x300000, 4, 0x400),
		rec(6e9, free, 100, b10, base+0x300000, 4, 0),
		rec(6e9, free, 100, b11, base+0x100000, 2, 0),
	}}
}

// MomentPFNs returns which block holds each PFN of the scenario at time
// T0+t: the answer of the map, Trace and BlocksAt at that moment.
func MomentPFNs(t int64) map[uint64]string {
	out := map[uint64]string{}
	put := func(block string, pfn uint64, n int) {
		for i := range n {
			out[pfn+uint64(i)] = block
		}
	}
	if t >= 0 && t < 5e9 {
		put("rdd_1_0", 0x100, 4)
	}
	if t >= 5e9 && t < 6e9 {
		put("rdd_1_0", 0x400, 4)
	}
	if t >= 1e9 && t < 6e9 {
		put("rdd_1_1", 0x200, 2)
	}
	if t >= 2e9 && t < 4e9 {
		put("rdd_2_0", 0x300, 8)
	}
	return out
}

// momentTimes are the offsets from T0 the contract looks at: before the
// first record, at and between records, and after the last.
var momentTimes = []int64{-1, 0, 5e8, 1e9, 2e9 - 1, 2e9, 3e9, 35e8, 4e9, 5e9, 55e8, 6e9, 7e9}

// testMoment: the blocks live at each moment of the looking-back
// scenario are exact on the map, in Trace and in BlocksAt; the default
// moment of the ended app is its peak, and Moment says what the blocks
// held then.
func testMoment(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	MustAppend(t, s, MomentBatch(1))

	m, err := s.Moment(ctx, answer.MomentQuery{AppID: MomentApp})
	if err != nil {
		t.Fatal(err)
	}
	want := answer.Moment{Kind: answer.MomentPeak, Default: true, AtNs: T0 + 2e9, Ended: true, FirstNs: T0, LastNs: T0 + 6e9,
		PeakNs: T0 + 2e9, PeakBytes: 14 * PageSize, PeakPages: 14, Bytes: 14 * PageSize, Pages: 14}
	if m != want {
		t.Fatalf("default moment = %+v\nwant %+v", m, want)
	}
	asked := func(mq answer.MomentQuery, at int64, pages uint64) {
		t.Helper()
		mq.AppID = MomentApp
		got, err := s.Moment(ctx, mq)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		w.Kind, w.Default, w.AtNs, w.Bytes, w.Pages = mq.Want, false, at, pages*PageSize, pages
		if got != w {
			t.Fatalf("moment %+v = %+v\nwant %+v", mq, got, w)
		}
	}
	asked(answer.MomentQuery{Want: answer.MomentPeak}, T0+2e9, 14)
	asked(answer.MomentQuery{Want: answer.MomentNow}, 0, 0)
	asked(answer.MomentQuery{Want: answer.MomentAt, At: T0 + 5e9}, T0+5e9, 6)
	asked(answer.MomentQuery{Want: answer.MomentAt, At: 45e8, SinceStart: true}, T0+45e8, 6)
	asked(answer.MomentQuery{Want: answer.MomentAt, At: T0 - 1}, T0-1, 0)
	asked(answer.MomentQuery{Want: answer.MomentAt, At: T0 + 35e8}, T0+35e8, 14)

	for _, dt := range momentTimes {
		at := T0 + dt
		wantPFNs := MomentPFNs(dt)
		// The map: one page per bucket over the scenario's PFNs.
		pm, err := s.PhysMap(ctx, answer.PhysMapQuery{AppID: MomentApp, From: 0x100, To: 0x500, At: at})
		if err != nil {
			t.Fatal(err)
		}
		gotMap := map[uint64]string{}
		for _, b := range pm.Buckets {
			if b.End != b.Start+1 || b.Block == nil {
				t.Fatalf("at T0%+d: bucket %+v", dt, b)
			}
			gotMap[b.Start] = b.Block.BlockID
		}
		if !reflect.DeepEqual(gotMap, wantPFNs) || pm.Pages != uint64(len(wantPFNs)) {
			t.Errorf("map at T0%+d: %d pages %v, want %v", dt, pm.Pages, gotMap, wantPFNs)
		}
		// Trace: the pages the live blocks hold then, once each.
		gotTrace := map[uint64]string{}
		for _, p := range Trace(t, s, answer.TraceQuery{AppID: MomentApp, At: at}) {
			if _, dup := gotTrace[p.GetPfn()]; dup || p.GetTimeUnixNano() > at {
				t.Fatalf("trace at T0%+d: page %v twice or after the moment", dt, p)
			}
			gotTrace[p.GetPfn()] = p.GetBlock().GetBlockId()
		}
		if !reflect.DeepEqual(gotTrace, wantPFNs) {
			t.Errorf("trace at T0%+d: %v, want %v", dt, gotTrace, wantPFNs)
		}
		// BlocksAt: RDD 1's live blocks and their pages then.
		blocks, err := s.BlocksAt(ctx, MomentApp, 1, at)
		if err != nil {
			t.Fatal(err)
		}
		gotBlocks, wantBlocks := map[string]uint64{}, map[string]uint64{}
		for _, b := range blocks {
			for _, buf := range b.Buffers {
				gotBlocks[b.BlockID] += buf.Pages
			}
		}
		for _, id := range wantPFNs {
			if id != "rdd_2_0" {
				wantBlocks[id]++
			}
		}
		if !reflect.DeepEqual(gotBlocks, wantBlocks) {
			t.Errorf("blocks of rdd 1 at T0%+d: %v, want %v", dt, gotBlocks, wantBlocks)
		}
		// NumaAt: every page on node 0, counted per RDD.
		numa, err := s.NumaAt(ctx, MomentApp, at)
		if err != nil {
			t.Fatal(err)
		}
		perRDD := map[int32]uint64{}
		for _, id := range wantPFNs {
			perRDD[int32(id[4]-'0')]++
		}
		var wantNuma []*stratav1.NumaRow
		for _, rdd := range []int32{1, 2} {
			if n := perRDD[rdd]; n > 0 {
				wantNuma = append(wantNuma, &stratav1.NumaRow{RddId: rdd, NumaNode: 0, Pages: n, Bytes: n * PageSize})
			}
		}
		EqualRows(t, numa, wantNuma)
	}
	// Now the ended app holds nothing: the map without a moment is empty.
	pm, err := s.PhysMap(ctx, answer.PhysMapQuery{AppID: MomentApp})
	if err != nil || pm.Pages != 0 || len(pm.Buckets) != 0 {
		t.Fatalf("map now: %+v, %v", pm, err)
	}
	// A partition's trace at a moment keeps to the partition.
	part := int32(1)
	var ids []string
	for _, p := range Trace(t, s, answer.TraceQuery{AppID: MomentApp, Partition: &part, At: T0 + 2e9}) {
		ids = append(ids, p.GetBlock().GetBlockId())
	}
	if !slices.Equal(ids, []string{"rdd_1_1", "rdd_1_1"}) {
		t.Errorf("trace of partition 1 at T0+2s: %v", ids)
	}

	for name, mq := range map[string]answer.MomentQuery{
		"no app":      {Want: answer.MomentPeak},
		"before 1970": {AppID: MomentApp, Want: answer.MomentAt, At: -5},
		"bad kind":    {AppID: MomentApp, Want: answer.MomentKind(9)},
	} {
		if _, err := s.Moment(ctx, mq); !errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", name, err)
		}
	}
	if _, err := s.Moment(ctx, answer.MomentQuery{AppID: "app-none"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown app: %v, want ErrNotFound", err)
	}
	if _, err := s.BlocksAt(ctx, MomentApp, 1, 0); !errors.Is(err, store.ErrInvalidQuery) {
		t.Errorf("blocks at 0: %v, want ErrInvalidQuery", err)
	}
	if _, err := s.NumaAt(ctx, MomentApp, 0); !errors.Is(err, store.ErrInvalidQuery) {
		t.Errorf("numa at 0: %v, want ErrInvalidQuery", err)
	}

	// A running app's default moment is now; a peak it cannot name (its
	// cached blocks never held a page) is ErrNotFound.
	MustAppend(t, s, &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 2, Records: []*stratav1.Record{{
		TimeUnixNano: T0, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 300, PageSize: PageSize,
		Block: &stratav1.SparkBlock{AppId: "app-running", ExecutorId: "1", RddId: 3, BlockId: "rdd_3_0", HookBlockId: 9,
			Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}, Vaddr: 0x7f50_0000_0000, Length: PageSize}}})
	run, err := s.Moment(ctx, answer.MomentQuery{AppID: "app-running"})
	if err != nil {
		t.Fatal(err)
	}
	if run != (answer.Moment{Kind: answer.MomentNow, Default: true, FirstNs: T0, LastNs: T0}) {
		t.Fatalf("running app's moment = %+v", run)
	}
	if _, err := s.Moment(ctx, answer.MomentQuery{AppID: "app-running", Want: answer.MomentPeak}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("peak of an app that never held a page: %v, want ErrNotFound", err)
	}
}
