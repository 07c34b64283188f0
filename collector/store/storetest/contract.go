package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// Backend is a store implementation the contract runs against.
type Backend struct {
	// New opens a store on a fresh, empty location (a directory, a
	// database) in env. reopen opens another store on the same location
	// once the first is closed. Every store it returns is closed at tb's
	// cleanup.
	New func(tb testing.TB, env Env) (s store.Store, reopen func() store.Store)
	// AppendUnchecked stores b as Append does but without ValidateBatch:
	// what a collector that validated less may have left behind.
	AppendUnchecked func(s store.Store, b *stratav1.Batch) error
}

// Env is what a test sets of a store it opens.
type Env struct {
	// Log receives the store's log; nil discards it.
	Log *slog.Logger
	// Now is the store's clock; nil is time.Now.
	Now func() time.Time
}

func (be Backend) open(tb testing.TB) store.Store {
	tb.Helper()
	s, _ := be.New(tb, Env{})
	return s
}

// Contract runs every backend-neutral expectation of the store against
// be: the same batches in give the same answers out, whatever the
// backend. Each expectation is a parallel subtest with a fresh store.
func Contract(t *testing.T, be Backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"AppendDuplicateAndReopen", testAppendDuplicateAndReopen},
		{"AppendInvalid", testAppendInvalid},
		{"ShortDeltasRefused", testShortDeltasRefused},
		{"CorruptStoredRows", testCorruptStoredRows},
		{"ConcurrentAppends", testConcurrentAppends},
		{"TracePages", testTracePages},
		{"TraceScatteredPFNs", testTraceScatteredPFNs},
		{"TraceCarriesHookFields", testTraceCarriesHookFields},
		{"Records", testRecords},
		{"Numa", testNuma},
		{"NumaOverlap", testNumaOverlap},
		{"NumaCountsEveryChunk", testNumaCountsEveryChunk},
		{"NumaCountsSplitRecords", testNumaCountsSplitRecords},
		{"FaultsLatestPerBlock", testFaultsLatestPerBlock},
		{"FillFaults", testFillFaults},
		{"Overhead", testOverhead},
		{"Hot", testHot},
		{"Summary", testSummary},
		{"Machines", testMachines},
		{"Jobs", testJobs},
		{"Retention", testRetention},
		{"SearchJobs", testSearchJobs},
		{"AppsRDDsOccupancy", testAppsRDDsOccupancy},
		{"PhysMap", testPhysMap},
		{"Moment", testMoment},
		{"UIChunksAndSplits", testUIChunksAndSplits},
		{"Report", testReport},
		{"ProcessMemoryValidated", testProcessMemoryValidated},
		{"CoverageRoundTrip", testCoverageRoundTrip},
		{"CoverageReport", testCoverageReport},
		{"Quoting", testQuoting},
		{"Heat", testHeat},
		{"HeatValidated", testHeatValidated},
		{"CachedBlocks", testCachedBlocks},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each has a store of its own; the server's round trips overlap
			c.fn(t, be)
		})
	}
}

// Trace returns every page Trace gives for q, failing tb on an error.
func Trace(tb testing.TB, s answer.TraceReader, q answer.TraceQuery) []*stratav1.TracePage {
	tb.Helper()
	var pages []*stratav1.TracePage
	if err := s.Trace(context.Background(), q, func(p *stratav1.TracePage) error {
		pages = append(pages, p)
		return nil
	}); err != nil {
		tb.Fatalf("trace: %v", err)
	}
	return pages
}

// MustAppend appends b, failing tb on an error.
func MustAppend(tb testing.TB, s store.BatchAppender, b *stratav1.Batch) store.AppendResult {
	tb.Helper()
	res, err := s.Append(context.Background(), b)
	if err != nil {
		tb.Fatalf("append seq %d: %v", b.GetSeq(), err)
	}
	return res
}

// EqualRows fails tb unless got and want hold equal messages in order.
// wantNuma checks the NUMA rows of App.
func wantNuma(tb testing.TB, s store.Store, want []*stratav1.NumaRow) {
	tb.Helper()
	rows, err := s.Numa(context.Background(), App)
	if err != nil {
		tb.Fatal(err)
	}
	EqualRows(tb, rows, want)
}

// wantOccupancy checks App's occupancy over buckets buckets.
func wantOccupancy(tb testing.TB, s store.Store, buckets uint32, want []answer.OccupancyPoint) {
	tb.Helper()
	got, err := s.Occupancy(context.Background(), App, buckets)
	if err != nil {
		tb.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("occupancy over %d buckets = %+v, want %+v", buckets, got, want)
	}
}

func EqualRows[T proto.Message](tb testing.TB, got, want []T) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d rows %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			tb.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func testAppendInvalid(t *testing.T, be Backend) {
	s := be.open(t)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	swapped := uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	for name, mutate := range map[string]func(*stratav1.Batch){
		"no node":       func(b *stratav1.Batch) { b.NodeName = "" },
		"no boot":       func(b *stratav1.Batch) { b.BootId = "" },
		"boot utf8":     func(b *stratav1.Batch) { b.BootId = "boot-\xff" },
		"no app":        func(b *stratav1.Batch) { b.Records[2].Block.AppId = "" },
		"no block":      func(b *stratav1.Batch) { b.Records[1].Block = nil },
		"block utf8":    func(b *stratav1.Batch) { b.Records[2].Block.BlockId = "rdd_\xff" },
		"no access":     func(b *stratav1.Batch) { b.Records[0].Access = 0 },
		"odd access":    func(b *stratav1.Batch) { b.Records[0].Access = 300 },
		"odd mode":      func(b *stratav1.Batch) { b.Records[0].Block.Mode = 9 },
		"odd location":  func(b *stratav1.Batch) { b.Records[0].Block.Location = 9 },
		"odd kind":      func(b *stratav1.Batch) { b.Records[0].Block.Kind = 99 },
		"chunk 2 of 2":  func(b *stratav1.Batch) { b.Records[0].Block.Chunk, b.Records[0].Block.Chunks = 2, 2 },
		"chunk of none": func(b *stratav1.Batch) { b.Records[0].Block.Chunk = 1 },
		"odd free":      func(b *stratav1.Batch) { b.Records[0].FreeReason = 99 },
		"odd resolution": func(b *stratav1.Batch) {
			b.Records[0].Coverage = &stratav1.Coverage{Resolution: 9}
		},
		"column -2":   func(b *stratav1.Batch) { b.Records[0].Block.Column = proto.Int32(-2) },
		"column utf8": func(b *stratav1.Batch) { b.Records[0].Block.ColumnName = "n\xffame" },
		"detail utf8": func(b *stratav1.Batch) {
			b.Records[0].Coverage = &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_REFERENCES, Detail: "\xff"}
		},
		"free on alloc": func(b *stratav1.Batch) { b.Records[0].FreeReason = stratav1.FreeReason_FREE_REASON_EVICTED },
		"odd fault":     func(b *stratav1.Batch) { b.Records[0].FaultKind = 77 },
		"fault on read": func(b *stratav1.Batch) { b.Records[1].FaultKind = stratav1.FaultKind_FAULT_KIND_READ },
		"cpu node":      func(b *stratav1.Batch) { b.Records[0].CpuNumaNode = -2 },
		"record range":  func(b *stratav1.Batch) { b.Records[0].Length = ^uint64(0) },
		"zero count":    func(b *stratav1.Batch) { b.Records[0].Runs[1].Count = 0 },
		"long run":      func(b *stratav1.Batch) { b.Records[0].Runs[1].Count = stratav1.MaxRunPages + 1 },
		"no page size":  func(b *stratav1.Batch) { b.Records[0].PageSize = 0 },
		"odd page size": func(b *stratav1.Batch) { b.Records[0].PageSize = 4095 },
		"tiny page":     func(b *stratav1.Batch) { b.Records[0].PageSize = 2 },
		"page not node's": func(b *stratav1.Batch) {
			b.Node = &stratav1.NodeInfo{PageSize: 16384}
		},
		"wraps":           func(b *stratav1.Batch) { b.Records[0].Runs[0].Vaddr = ^uint64(0) &^ 4095 },
		"kernel address":  func(b *stratav1.Batch) { b.Records[0].Runs[0].Vaddr = 0xffff_8000_0000_0000 },
		"unaligned":       func(b *stratav1.Batch) { b.Records[0].Runs[0].Vaddr++ },
		"run node":        func(b *stratav1.Batch) { b.Records[0].Runs[0].NumaNode = 5000 },
		"folio":           func(b *stratav1.Batch) { b.Records[0].Runs[1].FolioPages = 500 },
		"present+swapped": func(b *stratav1.Batch) { b.Records[0].Runs[0].State |= swapped },
		"unmapped+present": func(b *stratav1.Batch) {
			b.Records[0].Runs[0].State |= uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
		},
		"hidden, absent": func(b *stratav1.Batch) {
			b.Records[0].Runs[2].State |= uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
		},
		"pfn, hidden": func(b *stratav1.Batch) {
			b.Records[0].Runs[0].State |= uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
		},
		"pfn, absent":       func(b *stratav1.Batch) { b.Records[0].Runs[0].State &^= present },
		"swap, not swapped": func(b *stratav1.Batch) { b.Records[0].Runs[0].SwapOffset = 9 },
		"swap type":         func(b *stratav1.Batch) { b.Records[0].Runs[2].SwapType = 32 },
		"swap offset":       func(b *stratav1.Batch) { b.Records[0].Runs[2].SwapOffset = 1<<50 - 1; b.Records[0].Runs[2].Count = 2 },
		"pfn beyond memory": func(b *stratav1.Batch) { b.Records[0].Runs[0].Pfn = 1 << 40 },
		"pfns beyond memory": func(b *stratav1.Batch) {
			b.Records[0].Runs[0].Pfn = 1<<40 - 2 // + 3 pages
		},
		"short deltas":     func(b *stratav1.Batch) { b.Records[0].Runs[0].PfnDeltas = []int64{5} },
		"long deltas":      func(b *stratav1.Batch) { b.Records[0].Runs[0].PfnDeltas = []int64{5, 6, 7} },
		"deltas, no pfn":   func(b *stratav1.Batch) { b.Records[0].Runs[2].Count = 2; b.Records[0].Runs[2].PfnDeltas = []int64{3} },
		"delta below zero": func(b *stratav1.Batch) { b.Records[0].Runs[0].PfnDeltas = []int64{-0x1000, 1} },
		"delta past memory": func(b *stratav1.Batch) {
			b.Records[0].Runs[0].PfnDeltas = []int64{1 << 40, 1}
		},
		"workload app":   func(b *stratav1.Batch) { b.Workloads[0].AppId = "" },
		"workload times": func(b *stratav1.Batch) { b.Workloads[0].EndUnixNano = b.Workloads[0].StartUnixNano - 1 },
		"node page":      func(b *stratav1.Batch) { b.Node = &stratav1.NodeInfo{PageSize: 3000} },
		"node count":     func(b *stratav1.Batch) { b.Node = &stratav1.NodeInfo{NumaNodes: 5000} },
	} {
		t.Run(name, func(t *testing.T) {
			b := Sample(1)
			mutate(b)
			if _, err := s.Append(context.Background(), b); !errors.Is(err, store.ErrInvalidBatch) {
				t.Fatalf("append: %v, want ErrInvalidBatch", err)
			}
		})
	}
	// Nothing of the refused batches was stored, and seq 1 is still free.
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != 0 {
		t.Fatalf("%d pages stored from refused batches", n)
	}
	if got := MustAppend(t, s, Sample(1)); got.Duplicate {
		t.Fatal("seq 1 reported duplicate after refusals")
	}
	// The edges of what is valid are stored.
	b := Sample(2)
	b.Node = &stratav1.NodeInfo{PageSize: PageSize, NumaNodes: 2}
	r := b.Records[0]
	r.Runs[0].Pfn, r.Runs[0].PfnDeltas = 1<<40-2, []int64{1, -(1<<40 - 3)} // the last PFN and PFN 1
	r.Runs[2].SwapType, r.Runs[2].SwapOffset = 31, 1<<50-1
	r.CpuNumaNode = -1
	r.Block.Column = proto.Int32(-1) // the hook's "every column": stored as none
	MustAppend(t, s, b)
	allocs := 0
	if err := s.Records(context.Background(), answer.RecordsQuery{AppID: App, BlockID: "rdd_7_3",
		Access: []stratav1.AccessKind{stratav1.AccessKind_ACCESS_KIND_ALLOC}}, func(r *stratav1.RecordRow) error {
		allocs++
		if r.GetBlock().Column != nil {
			t.Errorf("column -1 read back as %d, want none", r.GetBlock().GetColumn())
		}
		return nil
	}); err != nil || allocs != 2 {
		t.Fatalf("%d allocs of rdd_7_3 (seq 1 and the edges), %v", allocs, err)
	}
}

func testTracePages(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	rdd, part := int32(7), int32(3)
	pages := Trace(t, s, answer.TraceQuery{AppID: App, RDD: &rdd, Partition: &part, Limit: 6})
	const ps = PageSize
	base := KPF(3, 5, 12)
	thp := base | KPF(stratav1.KPFTHP)
	want := []struct {
		vaddr, pfn, flags uint64
		node              int32
		state             stratav1.PageState
	}{
		{BlockA, 0x1000, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{BlockA + ps, 0x1001, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{BlockA + 2*ps, 0x1002, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{BlockA + 3*ps, 0x2000, thp | KPF(stratav1.KPFCompoundHead), 1, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_THP},
		{BlockA + 4*ps, 0x2001, thp | KPF(stratav1.KPFCompoundTail), 1, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_THP},
		{BlockA + 5*ps, 0, 0, -1, stratav1.PageState_PAGE_STATE_SWAPPED},
	}
	if len(pages) != len(want) {
		t.Fatalf("got %d pages, want %d", len(pages), len(want))
	}
	for i, w := range want {
		p := pages[i]
		if p.GetVaddr() != w.vaddr || p.GetPfn() != w.pfn || p.GetPaddr() != w.pfn*ps || p.GetKpageflags() != w.flags ||
			p.GetNumaNode() != w.node || p.GetState() != uint32(w.state) {
			t.Errorf("page %d = vaddr %#x pfn %#x paddr %#x flags %#x node %d state %#x, want %+v",
				i, p.GetVaddr(), p.GetPfn(), p.GetPaddr(), p.GetKpageflags(), p.GetNumaNode(), p.GetState(), w)
		}
		if p.GetTimeUnixNano() != T0 || p.GetAccess() != stratav1.AccessKind_ACCESS_KIND_ALLOC || p.GetPid() != 100 {
			t.Errorf("page %d: time %d access %v pid %d, want the ALLOC record", i, p.GetTimeUnixNano(), p.GetAccess(), p.GetPid())
		}
		wantBlk := Sample(1).Records[0].Block
		if !proto.Equal(p.GetBlock(), wantBlk) {
			t.Errorf("page %d block = %v, want %v", i, p.GetBlock(), wantBlk)
		}
	}
	if got := stratav1.KPageFlagNames(pages[3].GetKpageflags()); len(got) != 5 || got[3] != "compound_head" || got[4] != "thp" {
		t.Errorf("flag names of THP head = %v", got)
	}
	// Without the limit the READ record's pages follow, and rdd 8 is filtered out.
	if all := Trace(t, s, answer.TraceQuery{AppID: App, RDD: &rdd}); len(all) != 12 ||
		all[6].GetAccess() != stratav1.AccessKind_ACCESS_KIND_READ {
		t.Fatalf("rdd 7 trace: %d pages", len(all))
	}
	if other := Trace(t, s, answer.TraceQuery{AppID: "other"}); len(other) != 0 {
		t.Fatalf("other app: %d pages", len(other))
	}
}

// testTraceScatteredPFNs: a run of 4 KiB pages whose PFNs are not
// consecutive is one row, and expands back to each page's own PFN.
func testTraceScatteredPFNs(t *testing.T, be Backend) {
	s := be.open(t)
	b := Sample(1)
	rec := b.Records[0]
	rec.Runs = []*stratav1.PageRun{{Vaddr: BlockA, Count: 4, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT),
		Pfn: 0x5000, PfnDeltas: []int64{9, -0x4000, 1}, Kpageflags: KPF(3, 5, 12), Kpagecount: 1}}
	b.Records = b.Records[:1]
	MustAppend(t, s, b)
	pages := Trace(t, s, answer.TraceQuery{AppID: App})
	want := []uint64{0x5000, 0x5009, 0x1009, 0x100a}
	if len(pages) != len(want) {
		t.Fatalf("%d pages, want %d", len(pages), len(want))
	}
	for i, w := range want {
		if p := pages[i]; p.GetPfn() != w || p.GetPaddr() != w*PageSize || p.GetVaddr() != BlockA+uint64(i)*PageSize {
			t.Errorf("page %d: vaddr %#x pfn %#x paddr %#x, want pfn %#x", i, p.GetVaddr(), p.GetPfn(), p.GetPaddr(), w)
		}
	}
	if limited := Trace(t, s, answer.TraceQuery{AppID: App, Limit: 3}); len(limited) != 3 || limited[2].GetPfn() != 0x1009 {
		t.Fatalf("limit 3: %d pages", len(limited))
	}
}

func testNuma(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	MustAppend(t, s, Sample(2)) // same blocks again: still distinct pages
	want := SampleNuma()
	wantNuma(t, s, want)

	// Freeing rdd_8_0 removes its pages.
	free := Sample(3)
	free.Records = []*stratav1.Record{proto.CloneOf(free.Records[2])}
	free.Records[0].Access = stratav1.AccessKind_ACCESS_KIND_FREE
	free.Records[0].TimeUnixNano += 1e9
	free.Records[0].Runs = nil
	free.Workloads = nil
	MustAppend(t, s, free)
	wantNuma(t, s, want[:3])
}

// Pages of different blocks that overlap in one process are counted once
// per (RDD, node): rdd_7_4 re-covers two pages of rdd_7_3 and adds one.
func testNumaOverlap(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	b := Sample(2)
	r := b.Records[0]
	r.Block.BlockId, r.Block.Partition, r.Block.HookBlockId = "rdd_7_4", 4, 12
	r.Runs = []*stratav1.PageRun{{Vaddr: BlockA + 4*PageSize, Count: 3,
		State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: 0x5000, NumaNode: 1}}
	b.Records, b.Workloads = b.Records[:1], nil
	MustAppend(t, s, b)
	wantNuma(t, s, []*stratav1.NumaRow{
		{RddId: 7, NumaNode: -1, Pages: 1, Bytes: 4096},
		{RddId: 7, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 7, NumaNode: 1, Pages: 4, Bytes: 4 * 4096},
		{RddId: 8, NumaNode: 1, Pages: 4, Bytes: 4 * 4096},
	})
}

func testFaultsLatestPerBlock(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	rows, err := s.Faults(context.Background(), App)
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, rows, SampleFaults())
}

// testFillFaults: FILL records (the faults of filling a block) add up per
// block, each put once, beside the block's latest counters, which a later
// FILL does not replace; a block with fills only gets a row of its own;
// the RDD report sums them per RDD.
func testFillFaults(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	MustAppend(t, s, FillBatch(2))
	ctx := context.Background()
	rows, err := s.Faults(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	want := SampleFaults()
	want[0].Fill = FillRDD7()
	want = append(want, &stratav1.FaultRow{ExecutorId: "2", RddId: 8, Partition: 5, BlockId: "rdd_8_5", Pid: 200,
		Faults: &stratav1.FaultCounts{}, Fill: &stratav1.FaultCounts{Write: 4, Unclassified: 1}})
	EqualRows(t, rows, want)
	rdds, err := s.RDDs(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	fills := map[int32]*stratav1.FaultCounts{}
	for _, r := range rdds {
		fills[r.GetRddId()] = r.GetFillFaults()
	}
	if !proto.Equal(fills[7], want[0].Fill) || !proto.Equal(fills[8], want[1].Fill) {
		t.Errorf("report fill faults: RDD 7 %v, RDD 8 %v; want %v and %v", fills[7], fills[8], want[0].Fill, want[1].Fill)
	}
}

func testOverhead(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	rows, err := s.Overhead(context.Background(), App)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	noPMU, pmu := rows[0], rows[1]
	if noPMU.GetCounters().GetPid() != 100 || noPMU.WalkPct != nil || noPMU.WalkPctRead != nil ||
		noPMU.GetCounters().GetPmuStatus() != "unavailable: no hardware PMU" {
		t.Errorf("pid 100 row = %v, want no walk share and the PMU reason", noPMU)
	}
	if noPMU.GetFaultRatePerSec() != 20 {
		t.Errorf("fault rate = %v, want 20/s", noPMU.GetFaultRatePerSec())
	}
	if !proto.Equal(noPMU.GetRddFaults(), &stratav1.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1}) {
		t.Errorf("rdd faults = %v", noPMU.GetRddFaults())
	}
	if pmu.GetCounters().GetPid() != 200 || pmu.WalkPct == nil || pmu.GetWalkPct() != 7.5 ||
		pmu.GetWalkPctRead() != 5 || pmu.GetWalkPctWrite() != 2.5 || pmu.GetWalkPctRdd() != 1 {
		t.Errorf("pid 200 row = %v, want walk 7.5%% (5 read, 2.5 write, 1 rdd)", pmu)
	}
}

func testJobs(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	for i, sev := range []stratav1.Severity{stratav1.Severity_SEVERITY_LOW, stratav1.Severity_SEVERITY_MODERATE, stratav1.Severity_SEVERITY_CRITICAL} {
		r := &stratav1.JobResult{JobId: "job_" + sev.String(), Severity: sev, FinishUnixMs: int64(1000 + i),
			Heuristics: []*stratav1.HeuristicResult{{Name: "Mapper Skew", Severity: sev}}}
		if err := s.PutJob(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Jobs(ctx, stratav1.Severity_SEVERITY_MODERATE, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GetJobId() != "job_SEVERITY_CRITICAL" || got[1].GetJobId() != "job_SEVERITY_MODERATE" {
		t.Fatalf("jobs >= MODERATE = %v", got)
	}
	if got, _ := s.Jobs(ctx, stratav1.Severity_SEVERITY_NONE, 1); len(got) != 1 {
		t.Fatalf("limit 1: %d jobs", len(got))
	}
	if ok, err := s.HasJob(ctx, "job_SEVERITY_LOW"); !ok || err != nil {
		t.Fatalf("has job: %v %v", ok, err)
	}
	if ok, _ := s.HasJob(ctx, "nope"); ok {
		t.Fatal("has unknown job")
	}
	// Put replaces.
	if err := s.PutJob(ctx, &stratav1.JobResult{JobId: "job_SEVERITY_LOW", Severity: stratav1.Severity_SEVERITY_SEVERE, Name: "again"}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(ctx, "job_SEVERITY_LOW")
	if err != nil || j.GetName() != "again" || j.GetSeverity() != stratav1.Severity_SEVERITY_SEVERE {
		t.Fatalf("job after replace = %v, %v", j, err)
	}
	if _, err := s.Job(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown job: %v, want ErrNotFound", err)
	}
}

// testHot: fault samples of two pages (3 on one, 1 on the other, one of
// them from a CPU of another node) rank the pages, with the flags of each
// page's latest sample.
func testHot(t *testing.T, be Backend) {
	s := be.open(t)
	b := Sample(1)
	blk := b.Records[0].Block
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	sample := func(ts int64, va, pfn uint64, flags uint64, kind stratav1.FaultKind, cpu int32) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: ts, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, PageSize: 4096,
			Block: blk, Vaddr: va + 0x18, Length: 1, CpuNumaNode: cpu, FaultKind: kind,
			Runs: []*stratav1.PageRun{{Vaddr: va, Count: 1, State: present, Pfn: pfn, Kpageflags: flags, NumaNode: 0}}}
	}
	hotVA, coldVA := uint64(BlockA), uint64(BlockA+0x3000)
	b.Records = append(b.Records,
		sample(10, hotVA, 0x111, KPF(12), stratav1.FaultKind_FAULT_KIND_READ, 0),
		sample(11, hotVA, 0x222, KPF(12, 2), stratav1.FaultKind_FAULT_KIND_WRITE, 1),
		sample(12, hotVA, 0x333, KPF(12, 2, 6), stratav1.FaultKind_FAULT_KIND_WRITE, 0),
		sample(13, coldVA, 0x444, KPF(12), stratav1.FaultKind_FAULT_KIND_READ, 0),
	)
	MustAppend(t, s, b)
	pages, err := s.Hot(context.Background(), answer.HotQuery{AppID: App})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 {
		t.Fatalf("%d hot pages, want 2", len(pages))
	}
	h, c := pages[0], pages[1]
	if h.GetVaddr() != hotVA || h.GetSamples() != 3 || h.GetReads() != 1 || h.GetWrites() != 2 || h.GetCrossNode() != 1 ||
		h.GetPfn() != 0x333 || h.GetKpageflags() != KPF(12, 2, 6) || h.GetBlock().GetBlockId() != blk.GetBlockId() {
		t.Fatalf("hottest = %v", h)
	}
	if c.GetVaddr() != coldVA || c.GetSamples() != 1 || c.GetPfn() != 0x444 {
		t.Fatalf("second = %v", c)
	}
	if top, _ := s.Hot(context.Background(), answer.HotQuery{AppID: App, Limit: 1}); len(top) != 1 || top[0].GetVaddr() != hotVA {
		t.Fatalf("limit 1 = %v", top)
	}
	other := int32(99)
	if none, _ := s.Hot(context.Background(), answer.HotQuery{AppID: App, RDD: &other}); len(none) != 0 {
		t.Fatalf("rdd 99 = %v", none)
	}
}

// ChunkBatch is one serialized Spark block, rdd_9_1, held in two buffers
// (the JVM hook reports each chunk of a ChunkedByteBuffer as its own hook
// block with the block's name), 3 pages on node 0 and 2 on node 1, put by
// stage 4 attempt 0, task attempt 42.
func ChunkBatch(seq uint64) *stratav1.Batch {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	rec := func(hook uint64, chunk uint32, vaddr uint64, pages uint32, pfn uint64, node int32) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: T0, Access: stratav1.AccessKind_ACCESS_KIND_WRITE, Pid: 300, Tid: 301,
			Block: &stratav1.SparkBlock{AppId: App, ExecutorId: "3", RddId: 9, Partition: 1, BlockId: "rdd_9_1",
				Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP,
				HookBlockId: hook, Kind: stratav1.BlockKind_BLOCK_KIND_RDD, Chunk: chunk, Chunks: 2,
				StageId: 4, StageAttempt: 0, TaskAttemptId: 42},
			Vaddr: vaddr, Length: uint64(pages) * PageSize, PageSize: PageSize,
			Runs: []*stratav1.PageRun{{Vaddr: vaddr, Count: pages, State: present, Pfn: pfn, NumaNode: node}}}
	}
	return &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: seq, Records: []*stratav1.Record{
		rec(31, 0, 0x7f0000000000, 3, 0x8000, 0),
		rec(32, 1, 0x7f0000100000, 2, 0x9000, 1),
	}}
}

// Both chunks of a block count: the latest lifecycle record is per chunk,
// not per Spark block name.
func testNumaCountsEveryChunk(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, ChunkBatch(1))
	wantNuma(t, s, []*stratav1.NumaRow{
		{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 9, NumaNode: 1, Pages: 2, Bytes: 2 * 4096},
	})

	// Freeing chunk 1 leaves chunk 0's pages.
	free := ChunkBatch(2)
	free.Records = free.Records[1:]
	free.Records[0].Access, free.Records[0].Runs = stratav1.AccessKind_ACCESS_KIND_FREE, nil
	free.Records[0].FreeReason = stratav1.FreeReason_FREE_REASON_EVICTED
	free.Records[0].TimeUnixNano++
	MustAppend(t, s, free)
	wantNuma(t, s, []*stratav1.NumaRow{{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096}})
}

// A record the agent split into sub-range records (same block, same time,
// possibly in different batches) counts whole.
func testNumaCountsSplitRecords(t *testing.T, be Backend) {
	s := be.open(t)
	b := ChunkBatch(1)
	first := b.Records[0]
	first.Block.Chunks, first.Block.Chunk = 1, 0
	second := proto.CloneOf(first)
	second.Vaddr += 3 * PageSize
	second.Runs[0].Vaddr, second.Runs[0].Pfn, second.Runs[0].NumaNode = second.Vaddr, 0xa000, 1
	b.Records = []*stratav1.Record{first}
	MustAppend(t, s, b)
	b2 := ChunkBatch(2)
	b2.Records = []*stratav1.Record{second}
	MustAppend(t, s, b2)
	wantNuma(t, s, []*stratav1.NumaRow{
		{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 9, NumaNode: 1, Pages: 3, Bytes: 3 * 4096},
	})
}

// Trace returns what the hook said of each block: kind, chunk, task.
func testTraceCarriesHookFields(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, ChunkBatch(1))
	pages := Trace(t, s, answer.TraceQuery{AppID: App})
	if len(pages) != 5 {
		t.Fatalf("%d pages, want 5", len(pages))
	}
	for i, p := range pages {
		b := p.GetBlock()
		chunk := uint32(0)
		if i >= 3 {
			chunk = 1
		}
		if b.GetKind() != stratav1.BlockKind_BLOCK_KIND_RDD || b.GetChunk() != chunk || b.GetChunks() != 2 ||
			b.GetStageId() != 4 || b.GetStageAttempt() != 0 || b.GetTaskAttemptId() != 42 || b.GetObjectGraph() {
			t.Fatalf("page %d block %v", i, b)
		}
	}
}

// Records lists a block's life without pages: every chunk's write, then the
// eviction of chunk 1 with its reason.
func testRecords(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, ChunkBatch(1))
	free := ChunkBatch(2)
	free.Records = free.Records[1:]
	free.Records[0].Access, free.Records[0].Runs = stratav1.AccessKind_ACCESS_KIND_FREE, nil
	free.Records[0].FreeReason = stratav1.FreeReason_FREE_REASON_EVICTED
	free.Records[0].TimeUnixNano++
	MustAppend(t, s, free)
	MustAppend(t, s, Sample(3))

	list := func(q answer.RecordsQuery) []*stratav1.RecordRow {
		t.Helper()
		var rows []*stratav1.RecordRow
		if err := s.Records(context.Background(), q, func(r *stratav1.RecordRow) error {
			rows = append(rows, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	rows := list(answer.RecordsQuery{AppID: App, BlockID: "rdd_9_1"})
	if len(rows) != 3 {
		t.Fatalf("%d records of rdd_9_1, want 3: %v", len(rows), rows)
	}
	for i, want := range []struct {
		access stratav1.AccessKind
		chunk  uint32
		pages  uint64
		why    stratav1.FreeReason
	}{
		{stratav1.AccessKind_ACCESS_KIND_WRITE, 0, 3, 0},
		{stratav1.AccessKind_ACCESS_KIND_WRITE, 1, 2, 0},
		{stratav1.AccessKind_ACCESS_KIND_FREE, 1, 0, stratav1.FreeReason_FREE_REASON_EVICTED},
	} {
		r := rows[i]
		b := r.GetBlock()
		if r.GetAccess() != want.access || b.GetChunk() != want.chunk || r.GetPages() != want.pages || r.GetFreeReason() != want.why ||
			b.GetKind() != stratav1.BlockKind_BLOCK_KIND_RDD || b.GetTaskAttemptId() != 42 || b.GetMode() != stratav1.MemoryMode_MEMORY_MODE_STORAGE ||
			b.GetLocation() != stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP || r.GetNodeName() != Node || r.GetPid() != 300 {
			t.Fatalf("record %d = %v, want %+v", i, r, want)
		}
	}
	frees := list(answer.RecordsQuery{AppID: App, Access: []stratav1.AccessKind{stratav1.AccessKind_ACCESS_KIND_FREE}})
	if len(frees) != 1 || frees[0].GetBlock().GetHookBlockId() != 32 {
		t.Fatalf("free records %v, want the eviction of hook block 32", frees)
	}
	rdd7 := int32(7)
	if n := len(list(answer.RecordsQuery{AppID: App, RDD: &rdd7})); n != 2 {
		t.Fatalf("%d records of RDD 7, want the sample's 2", n)
	}
	if n := len(list(answer.RecordsQuery{AppID: App, Limit: 4})); n != 4 {
		t.Fatalf("limit 4 gave %d", n)
	}
	withFaults := list(answer.RecordsQuery{AppID: App, BlockID: "rdd_7_3"})
	if len(withFaults) != 2 || withFaults[1].GetFaults().GetRead() != 9 || withFaults[1].GetFaults().GetUnclassified() != 4 {
		t.Fatalf("rdd_7_3 records %v, want the sample's counters", withFaults)
	}
}

// testShortDeltasRefused is issue 8's poisoned application: a run with
// fewer PFN steps than pages was stored, and from then on every trace of
// its application failed. It must be refused at the door, and what was
// stored before it must still trace.
func testShortDeltasRefused(t *testing.T, be Backend) {
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	bad := Sample(2)
	bad.Records[0].Runs[0].PfnDeltas = []int64{7} // 3 pages need 2 steps
	if _, err := s.Append(context.Background(), bad); !errors.Is(err, store.ErrInvalidBatch) ||
		!strings.Contains(err.Error(), "1 pfn_deltas for 3 pages") {
		t.Fatalf("append of a run with 1 PFN step for 3 pages: %v, want ErrInvalidBatch naming the steps", err)
	}
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != SamplePages {
		t.Fatalf("trace after the refusal: %d pages, want %d", n, SamplePages)
	}
}

// NodeInfo is kept per (node_name, boot_id) across restarts; a later batch
// with an unknown (zero) field keeps the known value; a machine whose agent
// never sent NodeInfo is listed with zeros and its records' page size; a
// machine holding only another app's records is not listed.
func testMachines(t *testing.T, be Backend) {
	ctx := context.Background()
	s, reopen := be.New(t, Env{})
	batch := func(node, boot string, seq uint64, ni *stratav1.NodeInfo) *stratav1.Batch {
		b := Sample(seq)
		b.NodeName, b.BootId, b.Node = node, boot, ni
		return b
	}
	MustAppend(t, s, batch("a", "boot-1", 1, &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096, MemTotalBytes: 64 << 30}))
	MustAppend(t, s, batch("a", "boot-1", 2, &stratav1.NodeInfo{NumaNodes: 2, PageSize: 4096})) // memory unknown this time
	MustAppend(t, s, batch("a", "boot-2", 1, &stratav1.NodeInfo{NumaNodes: 4, PageSize: 4096, MemTotalBytes: 128 << 30}))
	MustAppend(t, s, batch("b", "boot-9", 1, nil))
	other := batch("c", "boot-3", 1, &stratav1.NodeInfo{NumaNodes: 8, PageSize: 4096})
	for _, r := range other.Records {
		r.Block.AppId = "application_other"
	}
	other.Workloads = nil
	MustAppend(t, s, other)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen()
	got, err := s.Machines(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Machine{
		{NodeName: "a", BootID: "boot-1", NUMANodes: 2, PageSize: 4096, MemTotalBytes: 64 << 30},
		{NodeName: "a", BootID: "boot-2", NUMANodes: 4, PageSize: 4096, MemTotalBytes: 128 << 30},
		{NodeName: "b", BootID: "boot-9", PageSize: PageSize},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("machines after reopen = %+v\nwant %+v", got, want)
	}
	if got, err := s.Machines(ctx, "application_none"); err != nil || len(got) != 0 {
		t.Fatalf("machines of an unknown app = %+v, %v", got, err)
	}
}

// testCorruptStoredRows: rows a collector that validated less may have
// stored (a run with short PFN steps, counters near 2^64) cost only
// themselves. Trace skips the run it cannot expand and says so in one
// warning with the count, and returns every other page; the summing
// queries saturate instead of failing.
func testCorruptStoredRows(t *testing.T, be Backend) {
	var logs testenv.Output // the store's goroutines log into it
	s, _ := be.New(t, Env{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	MustAppend(t, s, Sample(1))
	bad := Sample(2)
	bad.Records[0].Runs[0].PfnDeltas = []int64{7}                     // 3 pages, 1 step
	bad.Records[1].Faults.Read = math.MaxUint64                       // summed with…
	bad.Workloads[0].TaskClockNs = math.MaxUint64                     // …
	bad.Workloads[0].StartUnixNano = bad.Workloads[0].EndUnixNano - 1 // a second interval
	if err := be.AppendUnchecked(s, bad); err != nil {
		t.Fatal(err)
	}
	re := Sample(3) // rdd_7_3 registered again: its fault counters are summed
	re.Records = re.Records[1:2]
	re.Records[0].Block.HookBlockId = 99
	re.Records[0].Faults.Read = math.MaxUint64
	re.Workloads = nil
	MustAppend(t, s, re)

	// Sample 1 and 3 whole, sample 2 without its 3-page run.
	want := 2*SamplePages + 6 - 3
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != want {
		t.Fatalf("trace: %d pages, want %d (all but the corrupt run)", n, want)
	}
	if !strings.Contains(logs.String(), "trace skipped stored runs") || !strings.Contains(logs.String(), "runs=1 ") ||
		!strings.Contains(logs.String(), "1 steps for 3 pages") {
		t.Fatalf("no warning counting the skipped run:\n%s", logs.String())
	}

	faults, err := s.Faults(context.Background(), App)
	if err != nil {
		t.Fatalf("faults: %v", err)
	}
	if len(faults) != 1 || faults[0].GetFaults().GetRead() != math.MaxUint64 {
		t.Fatalf("faults = %v, want rdd_7_3's reads saturated at 2^64-1", faults)
	}
	over, err := s.Overhead(context.Background(), App)
	if err != nil {
		t.Fatalf("overhead: %v", err)
	}
	if len(over) != 2 || over[0].GetCounters().GetTaskClockNs() != math.MaxUint64 {
		t.Fatalf("overhead = %v, want executor 1's task clock saturated", over)
	}
	if _, err := s.Numa(context.Background(), App); err != nil {
		t.Fatalf("numa: %v", err)
	}
}

func testAppendDuplicateAndReopen(t *testing.T, be Backend) {
	ctx := context.Background()
	s, reopen := be.New(t, Env{})
	if got := MustAppend(t, s, Sample(1)); got != (store.AppendResult{Records: 3}) {
		t.Fatalf("first append = %+v", got)
	}
	if got := MustAppend(t, s, Sample(1)); got != (store.AppendResult{Duplicate: true, Records: 3}) {
		t.Fatalf("replayed append = %+v, want duplicate", got)
	}
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != SamplePages {
		t.Fatalf("after replay: %d pages, want %d (stored once)", n, SamplePages)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.Append(ctx, Sample(2)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}

	s = reopen()
	if got := MustAppend(t, s, Sample(1)); !got.Duplicate {
		t.Fatalf("replay after reopen = %+v, want duplicate", got)
	}
	MustAppend(t, s, Sample(2))
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != 2*SamplePages {
		t.Fatalf("after reopen and seq 2: %d pages, want %d", n, 2*SamplePages)
	}
	// Out of order, as a spool replays around a gap: a seq below the last
	// stored is new once, then a duplicate, and so is the last again.
	for _, c := range []struct {
		seq uint64
		dup bool
	}{{4, false}, {3, false}, {3, true}, {4, true}, {2, true}} {
		if got := MustAppend(t, s, Sample(c.seq)); got.Duplicate != c.dup {
			t.Fatalf("seq %d after 4: duplicate = %v, want %v", c.seq, got.Duplicate, c.dup)
		}
	}
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != 4*SamplePages {
		t.Fatalf("after seqs 1-4: %d pages, want %d", n, 4*SamplePages)
	}
}

// Eight machines append their batches at once, and each batch is sent
// again, concurrently, as a failover replays it: every batch is stored
// exactly once, and exactly one of its appends is not a duplicate.
func testConcurrentAppends(t *testing.T, be Backend) {
	s := be.open(t)
	const nodes, seqs = 8, 5
	type key struct {
		node string
		seq  uint64
	}
	var (
		mu     sync.Mutex
		stored = map[key]int{}
		wg     sync.WaitGroup
	)
	for n := range nodes {
		for copyNo := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := uint64(1); seq <= seqs; seq++ {
					b := Sample(seq)
					b.NodeName = "node-" + string(rune('a'+n))
					res, err := s.Append(context.Background(), b)
					if err != nil {
						t.Errorf("append %s/%d (copy %d): %v", b.NodeName, seq, copyNo, err)
						return
					}
					if res.Records != 3 {
						t.Errorf("append %s/%d: %d records, want 3", b.NodeName, seq, res.Records)
					}
					if !res.Duplicate {
						mu.Lock()
						stored[key{b.NodeName, seq}]++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(stored) != nodes*seqs {
		t.Fatalf("%d batches stored, want %d", len(stored), nodes*seqs)
	}
	for k, n := range stored {
		if n != 1 {
			t.Errorf("%v stored %d times", k, n)
		}
	}
	if n := len(Trace(t, s, answer.TraceQuery{AppID: App})); n != nodes*seqs*SamplePages {
		t.Fatalf("%d pages, want %d (every batch once)", n, nodes*seqs*SamplePages)
	}
}

// The cross-layer summary of the sample: cached pages per RDD and node
// from each block's latest record, and sampled faults in cached blocks
// split local and remote (by node numbers or the agent's CROSS_NODE mark);
// samples of execution memory or of pages whose PFN is hidden do not count.
func testSummary(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	b := Sample(1)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	sample := func(blk *stratav1.SparkBlock, state uint32, pfn uint64, node, cpu int32) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: T0 + 5e9, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, PageSize: PageSize,
			Block: blk, Vaddr: BlockA + 0x18, Length: 1, CpuNumaNode: cpu, FaultKind: stratav1.FaultKind_FAULT_KIND_READ,
			Runs: []*stratav1.PageRun{{Vaddr: BlockA, Count: 1, State: state, Pfn: pfn, NumaNode: node}}}
	}
	cached := b.Records[0].Block
	exec := proto.CloneOf(cached)
	exec.Mode, exec.BlockId, exec.RddId, exec.Partition = stratav1.MemoryMode_MEMORY_MODE_EXECUTION, "page_1_0", -1, -1
	b.Records = append(b.Records,
		sample(cached, present, 0x1000, 0, 0),                                                  // local
		sample(cached, present, 0x1000, 0, 1),                                                  // remote by node numbers
		sample(cached, present|uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE), 0x1000, 0, 0), // remote by mark
		sample(cached, present|uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN), 0, -1, 0),     // node unknown
		sample(exec, present, 0x1000, 0, 1),                                                    // execution memory
	)
	MustAppend(t, s, b)
	got, err := s.Cached(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.CachedPages{
		{RDDID: 7, Node: -1, Pages: 1, Swapped: 1},
		{RDDID: 7, Node: 0, Pages: 3, Present: 3},
		{RDDID: 7, Node: 1, Pages: 2, Present: 2, THP: 2},
		{RDDID: 8, Node: 1, Pages: 4, Present: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached = %+v\nwant %+v", got, want)
	}
	local, remote, err := s.FaultNodes(ctx, App)
	if err != nil || local != 1 || remote != 2 {
		t.Fatalf("fault nodes = local %d remote %d (%v), want 1 and 2", local, remote, err)
	}
	if local, remote, err := s.FaultNodes(ctx, "application_none"); err != nil || local+remote != 0 {
		t.Fatalf("fault nodes of an unknown app = %d %d %v", local, remote, err)
	}
	if c, err := s.Cached(ctx, "application_none"); err != nil || len(c) != 0 {
		t.Fatalf("cached of an unknown app = %v %v", c, err)
	}
}

// Four days of traces, received a day apart: age retention drops the days
// older than the bound, size retention drops the oldest day at a time but
// keeps the newest, and what a drop forgot is stored again when replayed
// while what was kept is still a duplicate. (How much a drop frees is
// backend-specific: see each backend's own retention test.)
func testRetention(t *testing.T, be Backend) {
	ctx := context.Background()
	base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	s, _ := be.New(t, Env{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	const days, perDay = 4, 2
	batches := RetentionDays(s, t, days, perDay, 10, base, &now)
	now.Store(base.UnixNano())
	WantDays(t, s, days, perDay*10, 0, "before")
	r0, err := s.Retain(ctx, store.Retention{})
	if err != nil || r0.Dropped != 0 || r0.BytesBefore <= 0 || r0.BytesAfter != r0.BytesBefore {
		t.Fatalf("retain without bounds = %+v, %v", r0, err)
	}
	WantDays(t, s, days, perDay*10, 0, "no bounds")
	if r, err := s.Retain(ctx, store.Retention{MaxAge: 36 * time.Hour}); err != nil || r.Dropped == 0 {
		t.Fatalf("retain 36h = %+v, %v", r, err)
	}
	WantDays(t, s, days, perDay*10, 2, "age 36h")
	if r, err := s.Retain(ctx, store.Retention{MaxBytes: 1}); err != nil || !r.KeptOverSize || r.Dropped == 0 {
		t.Fatalf("retain to 1 byte = %+v, %v", r, err)
	}
	WantDays(t, s, days, perDay*10, 3, "size 1 byte")
	if res := MustAppend(t, s, batches[days*perDay-1]); !res.Duplicate {
		t.Fatal("a kept batch replayed was stored again")
	}
	if res := MustAppend(t, s, batches[0]); res.Duplicate {
		t.Fatal("a dropped batch replayed was reported stored")
	}
}

// RetentionDays appends days×perDay BenchBatches of recs records, each
// with a memory sample of process 1000+d (executor "mem"), the batches of
// day d (machine "day-d") received at base-(days-1-d) days by the clock
// now, which it moves. It returns the batches.
func RetentionDays(s store.BatchAppender, tb testing.TB, days, perDay, recs int, base time.Time, now *atomic.Int64) []*stratav1.Batch {
	tb.Helper()
	batches, _, _ := BenchBatches(days*perDay, recs)
	for i, b := range batches {
		d := i / perDay
		now.Store(base.Add(time.Duration(d-days+1) * 24 * time.Hour).UnixNano())
		b.NodeName = fmt.Sprintf("day-%d", d)
		b.Processes = []*stratav1.ProcessMemory{{AppId: "app-bench", ExecutorId: "mem", Pid: uint32(1000 + d),
			TimeUnixNano: int64(i), RssBytes: 1 << 20, HwmBytes: 1 << 20}}
		b.Heat = []*stratav1.HeatSample{{AppId: "app-bench", ExecutorId: "heat", Pid: uint32(1000 + d), RddId: 0,
			BlockId: fmt.Sprintf("rdd_0_%d", d), TimeUnixNano: int64(i), ResolvedBytes: 1 << 20, CoveredBytes: 1 << 20}}
		MustAppend(tb, s, b)
	}
	return batches
}

// RetainOneByteLess stores three days of RetentionDays (two batches of
// recs records a day) in the store open returns for a clock of its own,
// then retains to one byte below the store's size: it fails tb unless that
// drops the oldest day alone and leaves the store within the bound. It
// returns the store, and what a Retain without bounds and the bounded one
// said.
func RetainOneByteLess(tb testing.TB, open func(Env) store.Store, recs int) (s store.Store, r0, r1 store.RetainResult) {
	tb.Helper()
	ctx := context.Background()
	base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	s = open(Env{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	const days, perDay = 3, 2
	RetentionDays(s, tb, days, perDay, recs, base, &now)
	now.Store(base.UnixNano())
	r0, err := s.Retain(ctx, store.Retention{})
	if err != nil {
		tb.Fatal(err)
	}
	r1, err = s.Retain(ctx, store.Retention{MaxBytes: r0.BytesBefore - 1})
	if err != nil || r1.BytesAfter > r0.BytesBefore-1 || r1.KeptOverSize {
		tb.Fatalf("retain to %d bytes = %+v, %v", r0.BytesBefore-1, r1, err)
	}
	WantDays(tb, s, days, perDay*recs, 1, "size one byte less")
	return s, r0, r1
}

// AppendFailing appends b while the write hook that set installs fails
// the write at step, and fails tb unless Append returns that failure,
// which it returns; the hook is removed before it returns.
func AppendFailing(tb testing.TB, s store.BatchAppender, b *stratav1.Batch, step string, set func(hook func(string) error)) error {
	tb.Helper()
	injected := fmt.Errorf("injected failure at %s", step)
	set(func(at string) error {
		if at == step {
			return injected
		}
		return nil
	})
	_, err := s.Append(context.Background(), b)
	set(nil)
	if !errors.Is(err, injected) {
		tb.Fatalf("step %s: append = %v, want the injected failure", step, err)
	}
	return injected
}

// WantDays fails tb unless the store holds recs records of "app-bench"
// and the memory and heat samples of RetentionDays for each day from first on
// (machine "day-d") and none of the days before.
func WantDays(tb testing.TB, s answer.TraceReader, days, recs, first int, step string) {
	tb.Helper()
	got := map[string]int{}
	if err := s.Records(context.Background(), answer.RecordsQuery{AppID: "app-bench"}, func(r *stratav1.RecordRow) error {
		got[r.GetNodeName()]++
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	for d := range days {
		n := 0
		if d >= first {
			n = recs
		}
		if got[fmt.Sprintf("day-%d", d)] != n {
			tb.Fatalf("%s: records per day %v, want days %d.. with %d records each", step, got, first, recs)
		}
	}
	occ, err := s.Occupation(context.Background(), "app-bench")
	if err != nil {
		tb.Fatal(err)
	}
	var pids, want []uint32
	for _, o := range occ {
		if o.GetExecutorId() == "mem" && o.GetRssSamples() > 0 {
			pids = append(pids, o.GetPid())
		}
	}
	for d := first; d < days; d++ {
		want = append(want, uint32(1000+d))
	}
	if !reflect.DeepEqual(pids, want) {
		tb.Fatalf("%s: processes with memory samples %v, want %v", step, pids, want)
	}
	heat, err := s.Heat(context.Background(), answer.HeatQuery{AppID: "app-bench"})
	if err != nil {
		tb.Fatal(err)
	}
	var heatPids []uint32
	for _, r := range heat.RDDs {
		for _, b := range r.Blocks {
			heatPids = append(heatPids, b.Latest().GetPid())
		}
	}
	if !reflect.DeepEqual(heatPids, want) {
		tb.Fatalf("%s: processes with heat samples %v, want %v", step, heatPids, want)
	}
}

func testSearchJobs(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	jobs := UIJobs()
	for _, j := range jobs {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		q     answer.JobQuery
		want  []string
		total uint64
	}{
		{"all newest first", answer.JobQuery{}, JobIDs([]*stratav1.JobResult{jobs[3], jobs[2], jobs[1], jobs[0]}), 4},
		{"worst first", answer.JobQuery{Order: answer.JobsWorst}, JobIDs([]*stratav1.JobResult{jobs[2], jobs[3], jobs[1], jobs[0]}), 4},
		{"moderate and worse, second page of 2", answer.JobQuery{MinSeverity: stratav1.Severity_SEVERITY_MODERATE, Offset: 2, Limit: 2},
			JobIDs(jobs[1:2]), 3},
		{"user", answer.JobQuery{User: "bob"}, JobIDs(jobs[3:]), 1},
		{"queue and type", answer.JobQuery{Queue: "default", Type: "spark", Limit: 1}, JobIDs(jobs[2:3]), 3},
		{"type", answer.JobQuery{Type: "mapreduce"}, JobIDs(jobs[3:]), 1},
		{"finish window", answer.JobQuery{FinishedFrom: 2001, FinishedTo: 2002}, JobIDs(jobs[1:2]), 1},
		{"app", answer.JobQuery{AppID: App, Order: answer.JobsWorst}, JobIDs([]*stratav1.JobResult{jobs[2], jobs[1], jobs[0]}), 3},
		{"no match", answer.JobQuery{User: "carol"}, nil, 0},
		{"past the end", answer.JobQuery{Offset: 10}, nil, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, err := s.SearchJobs(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := JobIDs(page.Jobs); !reflect.DeepEqual(got, c.want) || page.Total != c.total {
				t.Fatalf("jobs %v total %d, want %v total %d", got, page.Total, c.want, c.total)
			}
		})
	}
	if _, err := s.SearchJobs(ctx, answer.JobQuery{MinSeverity: 9}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("unknown severity: %v", err)
	}
	if _, err := s.SearchJobs(ctx, answer.JobQuery{FinishedFrom: 5, FinishedTo: 5}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("empty window: %v", err)
	}

	tl, err := s.JobTimeline(ctx, answer.JobQuery{}, 86_400_000)
	if err != nil {
		t.Fatal(err)
	}
	want := []answer.SeverityBucket{{StartMs: 0, Counts: [5]uint64{0, 1, 1, 0, 1}}, {StartMs: 86_400_000, Counts: [5]uint64{0, 0, 0, 1, 0}}}
	if !reflect.DeepEqual(tl, want) {
		t.Fatalf("timeline = %+v, want %+v", tl, want)
	}
	tl, err = s.JobTimeline(ctx, answer.JobQuery{User: "alice", MinSeverity: stratav1.Severity_SEVERITY_MODERATE}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []answer.SeverityBucket{{StartMs: 2000, Counts: [5]uint64{0, 0, 1, 0, 1}}}; !reflect.DeepEqual(tl, want) {
		t.Fatalf("alice's moderate+ timeline = %+v, want %+v", tl, want)
	}
}

func testAppsRDDsOccupancy(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	MustAppend(t, s, Sample(1))
	apps, err := s.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantApps := []answer.AppSummary{{AppID: App, Machines: []string{Node}, Executors: 2, Records: 3,
		FirstNs: T0, LastNs: T0 + 2e9, LiveBlocks: 2}}
	if !reflect.DeepEqual(apps, wantApps) {
		t.Fatalf("apps = %+v, want %+v", apps, wantApps)
	}
	// Its analysed jobs name it: the latest to finish (Jobs' CRITICAL);
	// a job of an application without records names none.
	for _, j := range append(Jobs(), &stratav1.JobResult{JobId: "job_other", AppId: "app-other", Name: "other", FinishUnixMs: 9000}) {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if apps, err = s.Apps(ctx); err != nil {
		t.Fatal(err)
	}
	wantApps[0].Name = "etl-SEVERITY_CRITICAL"
	if !reflect.DeepEqual(apps, wantApps) {
		t.Fatalf("apps with jobs = %+v, want %+v", apps, wantApps)
	}
	rdds, err := s.RDDs(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	// The UI's RDD table is the report's RDDs: both blocks live.
	type row struct{ rdd, blocks, live, bytes, reads, writes uint64 }
	rowsOf := func(rs []*stratav1.RddReport) []row {
		var out []row
		for _, r := range rs {
			out = append(out, row{uint64(r.GetRddId()), r.GetBlocks(), r.GetLiveBlocks(), r.GetBytes(), r.GetReads(), r.GetWrites()})
		}
		return out
	}
	wantRDDs := []row{{7, 1, 1, 6 * PageSize, 1, 1}, {8, 1, 1, 4 * PageSize, 0, 1}}
	if got := rowsOf(rdds); !reflect.DeepEqual(got, wantRDDs) {
		t.Fatalf("rdds = %+v, want %+v", got, wantRDDs)
	}
	// Two buckets over [T0, T0+2s]: rdd 7's 5 present pages (its read
	// changes nothing) in the first, rdd 8's 4 in the second.
	wantOccupancy(t, s, 2, []answer.OccupancyPoint{
		{RDDID: 7, TimeNs: T0 + 1e9, Pages: 5, Bytes: 5 * PageSize},
		{RDDID: 8, TimeNs: T0 + 2e9, Pages: 4, Bytes: 4 * PageSize},
	})

	// rdd_7_3 is freed: it no longer occupies memory nor counts as live.
	free := &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 2, Records: []*stratav1.Record{{
		TimeUnixNano: T0 + 3e9, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Pid: 100, PageSize: PageSize,
		Block: Sample(1).GetRecords()[0].GetBlock(), Vaddr: BlockA, Length: 6 * PageSize,
		FreeReason: stratav1.FreeReason_FREE_REASON_REMOVED}}}
	MustAppend(t, s, free)
	rdds, err = s.RDDs(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	// rdd_7_3 is no longer live; its bytes are still what it held.
	wantRDDs[0].live = 0
	if got := rowsOf(rdds); !reflect.DeepEqual(got, wantRDDs) {
		t.Fatalf("rdds after free = %+v, want %+v", got, wantRDDs)
	}
	occ, err := s.Occupancy(ctx, App, 3)
	if err != nil {
		t.Fatal(err)
	}
	if last := occ[len(occ)-1]; last.RDDID != 7 || last.Pages != 0 || last.TimeNs != T0+3e9 {
		t.Fatalf("occupancy after free: %+v", occ)
	}
	if _, err := s.Occupancy(ctx, App, 0); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("0 buckets: %v", err)
	}
}

func testPhysMap(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	b := Sample(1)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	// rdd_9_0: four scattered pages stored as one run with PFN steps
	// (0x5000, 0x5001, 0x500b, 0x500c on node 0), and a sampled fault on
	// 0x500b; machine info says 128 MiB of memory.
	blk := &stratav1.SparkBlock{AppId: App, ExecutorId: "1", RddId: 9, BlockId: "rdd_9_0", HookBlockId: 31,
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}
	b.Records = append(b.Records,
		&stratav1.Record{TimeUnixNano: T0 + 3e9, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 100, Block: blk,
			Vaddr: 0x7f20_0000_0000, Length: 4 * PageSize, PageSize: PageSize,
			Runs: []*stratav1.PageRun{{Vaddr: 0x7f20_0000_0000, Count: 4, State: present, Pfn: 0x5000, PfnDeltas: []int64{1, 10, 1},
				Kpagecount: 1, NumaNode: 0}}},
		&stratav1.Record{TimeUnixNano: T0 + 4e9, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, Block: blk,
			Vaddr: 0x7f20_0000_2000, PageSize: PageSize, FaultKind: stratav1.FaultKind_FAULT_KIND_READ, CpuNumaNode: 0,
			Runs: []*stratav1.PageRun{{Vaddr: 0x7f20_0000_2000, Count: 1, State: present, Pfn: 0x500b, Kpagecount: 1, NumaNode: 0}}})
	b.Node = &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize, MemTotalBytes: 128 << 20}
	MustAppend(t, s, b)

	m, err := s.PhysMap(ctx, answer.PhysMapQuery{AppID: App, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	if m.Machine != Node || m.PageSize != PageSize || m.Limit != 32768 || m.From != 0 || m.To != 32768 ||
		m.BucketPages != 2048 || m.Pages != 13 || m.Hidden != 0 {
		t.Fatalf("whole map = %+v", m)
	}
	wantRDDs := []answer.RDDPages{{RDDID: 7, Present: 5, Swapped: 1}, {RDDID: 8, Present: 4}, {RDDID: 9, Present: 4}}
	wantNodes := []answer.NodeSpan{{Node: 0, FirstPFN: 0x1000, LastPFN: 0x500c, Pages: 7}, {Node: 1, FirstPFN: 0x2000, LastPFN: 0x3003, Pages: 6}}
	if !reflect.DeepEqual(m.RDDs, wantRDDs) || !reflect.DeepEqual(m.Nodes, wantNodes) {
		t.Fatalf("rdds %+v nodes %+v", m.RDDs, m.Nodes)
	}
	// 2048 pages a bucket: 0x1000 (rdd 7, 3 pages node 0), 0x2000 (rdd 7,
	// 2 THP pages node 1), 0x3000 (rdd 8), 0x5000 (rdd 9, one hot sample).
	wantBuckets := []answer.PFNBucket{
		{Start: 0x1000, End: 0x1800, RDDs: []answer.RDDCount{{RDDID: 7, Pages: 3}}, Nodes: 1,
			Block: &answer.BlockRef{ExecutorID: "1", BlockID: "rdd_7_3", RDDID: 7}},
		{Start: 0x2000, End: 0x2800, RDDs: []answer.RDDCount{{RDDID: 7, Pages: 2}}, THP: 2, Nodes: 2,
			Block: &answer.BlockRef{ExecutorID: "1", BlockID: "rdd_7_3", RDDID: 7}},
		{Start: 0x3000, End: 0x3800, RDDs: []answer.RDDCount{{RDDID: 8, Pages: 4}}, Nodes: 2,
			Block: &answer.BlockRef{ExecutorID: "2", BlockID: "rdd_8_0", RDDID: 8}},
		{Start: 0x5000, End: 0x5800, RDDs: []answer.RDDCount{{RDDID: 9, Pages: 4}}, Hot: 1, Nodes: 1,
			Block: &answer.BlockRef{ExecutorID: "1", BlockID: "rdd_9_0", RDDID: 9}},
	}
	if !reflect.DeepEqual(m.Buckets, wantBuckets) {
		t.Fatalf("buckets = %+v\nwant %+v", m.Buckets, wantBuckets)
	}

	// Page by page around the scattered run: each PFN step lands where
	// the run says.
	m, err = s.PhysMap(ctx, answer.PhysMapQuery{AppID: App, Machine: Node, From: 0x5000, To: 0x5010})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, bk := range m.Buckets {
		if bk.End != bk.Start+1 || bk.RDDs[0].RDDID != 9 {
			t.Fatalf("bucket %+v", bk)
		}
		got = append(got, bk.Start)
		if (bk.Hot == 1) != (bk.Start == 0x500b) {
			t.Fatalf("hot mark on %#x: %+v", bk.Start, bk)
		}
	}
	if want := []uint64{0x5000, 0x5001, 0x500b, 0x500c}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pages at %x, want %x", got, want)
	}
	// At a moment, the faults sampled up to it: none before T0+4s.
	for at, hot := range map[int64]uint64{T0 + 35e8: 0, T0 + 4e9: 1} {
		m, err = s.PhysMap(ctx, answer.PhysMapQuery{AppID: App, From: 0x500b, To: 0x500c, At: at})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Buckets) != 1 || m.Buckets[0].Hot != hot {
			t.Fatalf("at T0%+d: buckets %+v, want one with %d sampled faults", at-T0, m.Buckets, hot)
		}
	}

	// Two RDDs in one bucket: most pages first.
	m, err = s.PhysMap(ctx, answer.PhysMapQuery{AppID: App, From: 0x2000, To: 0x4000, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Buckets) != 1 || !reflect.DeepEqual(m.Buckets[0].RDDs, []answer.RDDCount{{RDDID: 8, Pages: 4}, {RDDID: 7, Pages: 2}}) ||
		m.Buckets[0].Block != nil {
		t.Fatalf("mixed bucket = %+v", m.Buckets)
	}

	// A later batch invalidates the cached index: rdd_8_0 is freed.
	MustAppend(t, s, &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 2, Records: []*stratav1.Record{{
		TimeUnixNano: T0 + 5e9, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Pid: 200, PageSize: PageSize,
		Block: proto.Clone(Sample(1).GetRecords()[2].GetBlock()).(*stratav1.SparkBlock), Vaddr: BlockB,
		Length: 4 * PageSize}}})
	m, err = s.PhysMap(ctx, answer.PhysMapQuery{AppID: App, From: 0x3000, To: 0x3004})
	if err != nil || len(m.Buckets) != 0 || m.Pages != 9 {
		t.Fatalf("after free: %+v, %v", m, err)
	}

	for name, q := range map[string]answer.PhysMapQuery{
		"empty window":  {AppID: App, From: 10, To: 10},
		"many buckets":  {AppID: App, Buckets: 5000},
		"other machine": {AppID: App, Machine: "node-z"},
		"no app":        {},
	} {
		if _, err := s.PhysMap(ctx, q); !errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", name, err)
		}
	}
	if _, err := s.PhysMap(ctx, answer.PhysMapQuery{AppID: "app-none"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown app: %v, want ErrNotFound", err)
	}
}

// testUIChunksAndSplits: a block held in two buffers (chunks), one of them
// sent as two sub-range records of one time, counts once per buffer and
// time in RDDs and Occupancy, and a freed buffer leaves the block live
// while its other buffer is; RDDs still counts what the freed buffer held.
func testUIChunksAndSplits(t *testing.T, be Backend) {
	ctx := context.Background()
	s := be.open(t)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	blk := func(chunk uint32) *stratav1.SparkBlock {
		return &stratav1.SparkBlock{AppId: App, ExecutorId: "1", RddId: 5, BlockId: "rdd_5_0", HookBlockId: 51,
			Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Chunk: chunk, Chunks: 2}
	}
	const base = uint64(0x7f30_0000_0000)
	rec := func(t int64, access stratav1.AccessKind, chunk uint32, vaddr uint64, pages uint32, pfn uint64) *stratav1.Record {
		r := &stratav1.Record{TimeUnixNano: t, Access: access, Pid: 300, Block: blk(chunk), Vaddr: vaddr,
			Length: uint64(pages) * PageSize, PageSize: PageSize}
		if access == stratav1.AccessKind_ACCESS_KIND_FREE {
			r.FreeReason = stratav1.FreeReason_FREE_REASON_REMOVED
		} else {
			r.Runs = []*stratav1.PageRun{{Vaddr: vaddr, Count: pages, State: present, Pfn: pfn, Kpagecount: 1}}
		}
		return r
	}
	alloc, write, free := stratav1.AccessKind_ACCESS_KIND_ALLOC, stratav1.AccessKind_ACCESS_KIND_WRITE, stratav1.AccessKind_ACCESS_KIND_FREE
	MustAppend(t, s, &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 1, Records: []*stratav1.Record{
		rec(T0, alloc, 0, base, 2, 0x100),         // chunk 0: 2 pages
		rec(T0, alloc, 1, base+0x10000, 1, 0x200), // chunk 1, first sub-range
		rec(T0, alloc, 1, base+0x11000, 1, 0x201), // chunk 1, second sub-range
		rec(T0+1e9, write, 0, base, 3, 0x100),     // chunk 0 grows to 3 pages
		rec(T0+2e9, free, 1, base+0x10000, 2, 0),  // chunk 1 freed
	}})
	apps, err := s.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []answer.AppSummary{{AppID: App, Machines: []string{Node}, Executors: 1, Records: 5, FirstNs: T0,
		LastNs: T0 + 2e9, LiveBlocks: 1}}; !reflect.DeepEqual(apps, want) {
		t.Fatalf("apps = %+v, want %+v", apps, want)
	}
	rdds, err := s.RDDs(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	// One block, live by chunk 0; as last resolved while live: chunk 0's
	// 3 pages after the write, chunk 1's two sub-ranges before its free.
	// Writes: the alloc and the write, each once for the block.
	EqualRows(t, rdds, []*stratav1.RddReport{{RddId: 5, Blocks: 1, Partitions: 1, LiveBlocks: 1, Bytes: 5 * PageSize,
		Pages: 5, Present: 5, Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 5}}, Writes: 2,
		Faults: &stratav1.FaultCounts{}, PageSize: PageSize,
		Parts: []*stratav1.ResolvedPart{{Blocks: 1, Buffers: 2, Bytes: 5 * PageSize}}}})
	// Three buckets over [T0, T0+2s] (2e9+1 ns, a third is 666,666,667):
	// 2+1+1 pages at T0, 3+2 after the write, 3 after the free.
	wantOccupancy(t, s, 3, []answer.OccupancyPoint{
		{RDDID: 5, TimeNs: T0 + 666_666_666, Pages: 4, Bytes: 4 * PageSize},
		{RDDID: 5, TimeNs: T0 + 1_333_333_333, Pages: 5, Bytes: 5 * PageSize},
		{RDDID: 5, TimeNs: T0 + 2e9, Pages: 3, Bytes: 3 * PageSize},
	})
	// One bucket: the value at the last time.
	wantOccupancy(t, s, 1, []answer.OccupancyPoint{{RDDID: 5, TimeNs: T0 + 2e9, Pages: 3, Bytes: 3 * PageSize}})
}

// testReport: the report scenario's RDDs and occupation (storetest's
// report.go works them out by hand): last-live pages per block buffer,
// accesses counted once per block, execution memory left out, fault
// counters from whichever record carries them (a free's final counters
// too), the peak of what the blocks held against the peak resident set
// and the node's memory. Cached takes the blocks as RDDs does, though all
// are freed at the end.
func testReport(t *testing.T, be Backend) {
	s := be.open(t)
	for _, b := range ReportBatches() {
		MustAppend(t, s, b)
	}
	ctx := context.Background()
	rdds, err := s.RDDs(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, rdds, ReportRDDs())
	occ, err := s.Occupation(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	EqualRows(t, occ, ReportOccupation())
	cached, err := s.Cached(ctx, App)
	if err != nil {
		t.Fatal(err)
	}
	// rdd_7_0 chunk 0 after its move: 1 page on node 0, 3 neither present
	// nor swapped; chunk 1: 2 THP pages on node 1; rdd_7_1 again: 3 on
	// node 0; rdd_9_0: 1 on node 0.
	wantCached := []store.CachedPages{
		{RDDID: 7, Node: -1, Pages: 3},
		{RDDID: 7, Node: 0, Pages: 4, Present: 4},
		{RDDID: 7, Node: 1, Pages: 2, Present: 2, THP: 2},
		{RDDID: 9, Node: 0, Pages: 1, Present: 1},
	}
	if !reflect.DeepEqual(cached, wantCached) {
		t.Errorf("cached = %+v\nwant %+v", cached, wantCached)
	}
	// Occupancy counts what Occupation counts, per RDD: in nine buckets
	// over [t0, t8], one per record time, RDD 7 holds 6, 8, 8 (the reads),
	// 8, 6 (the eviction), 9, 6 (the move) and 0 present pages, RDD 9 one
	// at t7 and none at t8.
	points, err := s.Occupancy(ctx, App, 9)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		got = append(got, fmt.Sprintf("%d@%d:%d", p.RDDID, (p.TimeNs-T0)/1e9, p.Pages))
	}
	want := "7@0:6 7@1:8 7@2:8 7@3:8 7@4:6 7@5:9 7@6:6 9@7:1 7@8:0 9@8:0"
	if strings.Join(got, " ") != want {
		t.Errorf("occupancy = %s\nwant %s", strings.Join(got, " "), want)
	}
	// An app without records has no rows; an empty app id is refused.
	if r, err := s.RDDs(ctx, "application_0_0"); err != nil || len(r) != 0 {
		t.Errorf("RDDs of an unknown app: %v %v", r, err)
	}
	if o, err := s.Occupation(ctx, "application_0_0"); err != nil || len(o) != 0 {
		t.Errorf("Occupation of an unknown app: %v %v", o, err)
	}
	if _, err := s.Occupation(ctx, ""); err == nil {
		t.Errorf("Occupation of an empty app id: no error")
	}
}

// testProcessMemoryValidated: a batch whose process memory sample names no
// app or pid, or not in UTF-8, is refused.
func testProcessMemoryValidated(t *testing.T, be Backend) {
	s := be.open(t)
	for _, bad := range []*stratav1.ProcessMemory{{Pid: 1}, {AppId: App}, {AppId: "\xff", Pid: 1}} {
		b := Sample(1)
		b.Processes = []*stratav1.ProcessMemory{bad}
		if _, err := s.Append(context.Background(), b); !errors.Is(err, store.ErrInvalidBatch) {
			t.Errorf("append of %v: %v, want ErrInvalidBatch", bad, err)
		}
	}
}

// testQuoting: names the questions take from their caller (a block, an
// application, a job) are literals, whatever quotes and backslashes they
// hold, never SQL.
func testQuoting(t *testing.T, be Backend) {
	st := be.open(t)
	ctx := context.Background()
	b := Sample(1)
	const odd = `rdd_7_3' OR '1'='1 \' \\`
	b.Records[0].Block.BlockId = odd
	MustAppend(t, st, b)
	var got []*stratav1.RecordRow
	if err := st.Records(ctx, answer.RecordsQuery{AppID: App, BlockID: odd}, func(r *stratav1.RecordRow) error {
		got = append(got, r)
		return nil
	}); err != nil || len(got) != 1 || got[0].GetBlock().GetBlockId() != odd {
		t.Fatalf("records of %q = %v, %v", odd, got, err)
	}
	if n := len(Trace(t, st, answer.TraceQuery{AppID: App + `' OR '1'='1`})); n != 0 {
		t.Fatalf("%d pages for a quoted app id", n)
	}
	if err := st.PutJob(ctx, &stratav1.JobResult{JobId: "job_1", Severity: stratav1.Severity_SEVERITY_LOW}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"job_1' OR '1'='1", `job_1\`, odd} {
		if has, err := st.HasJob(ctx, id); err != nil || has {
			t.Fatalf("HasJob(%q) = %v, %v; want false", id, has, err)
		}
	}
	if has, err := st.HasJob(ctx, "job_1"); err != nil || !has {
		t.Fatalf("HasJob(job_1) = %v, %v; want true", has, err)
	}
}
