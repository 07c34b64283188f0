package store_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func trace(t *testing.T, s store.Store, q store.TraceQuery) []*stratav1.TracePage {
	t.Helper()
	var pages []*stratav1.TracePage
	if err := s.Trace(context.Background(), q, func(p *stratav1.TracePage) error {
		pages = append(pages, p)
		return nil
	}); err != nil {
		t.Fatalf("trace: %v", err)
	}
	return pages
}

func mustAppend(t *testing.T, s store.Store, b *stratav1.Batch) store.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), b)
	if err != nil {
		t.Fatalf("append seq %d: %v", b.GetSeq(), err)
	}
	return res
}

func TestAppendDuplicateAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustAppend(t, s, storetest.Sample(1)); got != (store.AppendResult{Records: 3}) {
		t.Fatalf("first append = %+v", got)
	}
	if got := mustAppend(t, s, storetest.Sample(1)); got != (store.AppendResult{Duplicate: true, Records: 3}) {
		t.Fatalf("replayed append = %+v, want duplicate", got)
	}
	if n := len(trace(t, s, store.TraceQuery{AppID: storetest.App})); n != storetest.SamplePages {
		t.Fatalf("after replay: %d pages, want %d (stored once)", n, storetest.SamplePages)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.Append(ctx, storetest.Sample(2)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}

	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := mustAppend(t, s, storetest.Sample(1)); !got.Duplicate {
		t.Fatalf("replay after reopen = %+v, want duplicate", got)
	}
	mustAppend(t, s, storetest.Sample(2))
	if n := len(trace(t, s, store.TraceQuery{AppID: storetest.App})); n != 2*storetest.SamplePages {
		t.Fatalf("after reopen and seq 2: %d pages, want %d", n, 2*storetest.SamplePages)
	}
}

func TestAppendInvalid(t *testing.T) {
	s := storetest.Open(t)
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
			b := storetest.Sample(1)
			mutate(b)
			if _, err := s.Append(context.Background(), b); !errors.Is(err, store.ErrInvalidBatch) {
				t.Fatalf("append: %v, want ErrInvalidBatch", err)
			}
		})
	}
	// Nothing of the refused batches was stored, and seq 1 is still free.
	if n := len(trace(t, s, store.TraceQuery{AppID: storetest.App})); n != 0 {
		t.Fatalf("%d pages stored from refused batches", n)
	}
	if got := mustAppend(t, s, storetest.Sample(1)); got.Duplicate {
		t.Fatal("seq 1 reported duplicate after refusals")
	}
	// The edges of what is valid are stored.
	b := storetest.Sample(2)
	b.Node = &stratav1.NodeInfo{PageSize: storetest.PageSize, NumaNodes: 2}
	r := b.Records[0]
	r.Runs[0].Pfn, r.Runs[0].PfnDeltas = 1<<40-2, []int64{1, -(1<<40 - 3)} // the last PFN and PFN 1
	r.Runs[2].SwapType, r.Runs[2].SwapOffset = 31, 1<<50-1
	r.CpuNumaNode = -1
	mustAppend(t, s, b)
}

func TestTracePages(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	rdd, part := int32(7), int32(3)
	pages := trace(t, s, store.TraceQuery{AppID: storetest.App, RDD: &rdd, Partition: &part, Limit: 6})
	const ps = storetest.PageSize
	base := storetest.KPF(3, 5, 12)
	thp := base | storetest.KPF(stratav1.KPFTHP)
	want := []struct {
		vaddr, pfn, flags uint64
		node              int32
		state             stratav1.PageState
	}{
		{storetest.BlockA, 0x1000, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{storetest.BlockA + ps, 0x1001, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{storetest.BlockA + 2*ps, 0x1002, base, 0, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE},
		{storetest.BlockA + 3*ps, 0x2000, thp | storetest.KPF(stratav1.KPFCompoundHead), 1, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_THP},
		{storetest.BlockA + 4*ps, 0x2001, thp | storetest.KPF(stratav1.KPFCompoundTail), 1, stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_THP},
		{storetest.BlockA + 5*ps, 0, 0, -1, stratav1.PageState_PAGE_STATE_SWAPPED},
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
		if p.GetTimeUnixNano() != storetest.T0 || p.GetAccess() != stratav1.AccessKind_ACCESS_KIND_ALLOC || p.GetPid() != 100 {
			t.Errorf("page %d: time %d access %v pid %d, want the ALLOC record", i, p.GetTimeUnixNano(), p.GetAccess(), p.GetPid())
		}
		wantBlk := storetest.Sample(1).Records[0].Block
		if !proto.Equal(p.GetBlock(), wantBlk) {
			t.Errorf("page %d block = %v, want %v", i, p.GetBlock(), wantBlk)
		}
	}
	if got := stratav1.KPageFlagNames(pages[3].GetKpageflags()); len(got) != 5 || got[3] != "compound_head" || got[4] != "thp" {
		t.Errorf("flag names of THP head = %v", got)
	}
	// Without the limit the READ record's pages follow, and rdd 8 is filtered out.
	if all := trace(t, s, store.TraceQuery{AppID: storetest.App, RDD: &rdd}); len(all) != 12 ||
		all[6].GetAccess() != stratav1.AccessKind_ACCESS_KIND_READ {
		t.Fatalf("rdd 7 trace: %d pages", len(all))
	}
	if other := trace(t, s, store.TraceQuery{AppID: "other"}); len(other) != 0 {
		t.Fatalf("other app: %d pages", len(other))
	}
}

func TestNuma(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	mustAppend(t, s, storetest.Sample(2)) // same blocks again: still distinct pages
	rows, err := s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	want := storetest.SampleNuma()
	equalRows(t, rows, want)

	// Freeing rdd_8_0 removes its pages.
	free := storetest.Sample(3)
	free.Records = []*stratav1.Record{proto.CloneOf(free.Records[2])}
	free.Records[0].Access = stratav1.AccessKind_ACCESS_KIND_FREE
	free.Records[0].TimeUnixNano += 1e9
	free.Records[0].Runs = nil
	free.Workloads = nil
	mustAppend(t, s, free)
	rows, err = s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, want[:3])
}

// Pages of different blocks that overlap in one process are counted once
// per (RDD, node): rdd_7_4 re-covers two pages of rdd_7_3 and adds one.
func TestNumaOverlap(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	b := storetest.Sample(2)
	r := b.Records[0]
	r.Block.BlockId, r.Block.Partition, r.Block.HookBlockId = "rdd_7_4", 4, 12
	r.Runs = []*stratav1.PageRun{{Vaddr: storetest.BlockA + 4*storetest.PageSize, Count: 3,
		State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: 0x5000, NumaNode: 1}}
	b.Records, b.Workloads = b.Records[:1], nil
	mustAppend(t, s, b)
	rows, err := s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, []*stratav1.NumaRow{
		{RddId: 7, NumaNode: -1, Pages: 1, Bytes: 4096},
		{RddId: 7, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 7, NumaNode: 1, Pages: 4, Bytes: 4 * 4096},
		{RddId: 8, NumaNode: 1, Pages: 4, Bytes: 4 * 4096},
	})
}

func TestFaultsLatestPerBlock(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	rows, err := s.Faults(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, storetest.SampleFaults())
}

func TestOverhead(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	rows, err := s.Overhead(context.Background(), storetest.App)
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

func TestJobs(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
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

func equalRows[T proto.Message](t *testing.T, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestTraceScatteredPFNs: a run of 4 KiB pages whose PFNs are not
// consecutive is one row, and expands back to each page's own PFN.
func TestTraceScatteredPFNs(t *testing.T) {
	s := storetest.Open(t)
	b := storetest.Sample(1)
	rec := b.Records[0]
	rec.Runs = []*stratav1.PageRun{{Vaddr: storetest.BlockA, Count: 4, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT),
		Pfn: 0x5000, PfnDeltas: []int64{9, -0x4000, 1}, Kpageflags: storetest.KPF(3, 5, 12), Kpagecount: 1}}
	b.Records = b.Records[:1]
	mustAppend(t, s, b)
	pages := trace(t, s, store.TraceQuery{AppID: storetest.App})
	want := []uint64{0x5000, 0x5009, 0x1009, 0x100a}
	if len(pages) != len(want) {
		t.Fatalf("%d pages, want %d", len(pages), len(want))
	}
	for i, w := range want {
		if p := pages[i]; p.GetPfn() != w || p.GetPaddr() != w*storetest.PageSize || p.GetVaddr() != storetest.BlockA+uint64(i)*storetest.PageSize {
			t.Errorf("page %d: vaddr %#x pfn %#x paddr %#x, want pfn %#x", i, p.GetVaddr(), p.GetPfn(), p.GetPaddr(), w)
		}
	}
	if limited := trace(t, s, store.TraceQuery{AppID: storetest.App, Limit: 3}); len(limited) != 3 || limited[2].GetPfn() != 0x1009 {
		t.Fatalf("limit 3: %d pages", len(limited))
	}
}

// TestHot: fault samples of two pages (3 on one, 1 on the other, one of
// them from a CPU of another node) rank the pages, with the flags of each
// page's latest sample.
func TestHot(t *testing.T) {
	s := storetest.Open(t)
	b := storetest.Sample(1)
	blk := b.Records[0].Block
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	sample := func(ts int64, va, pfn uint64, flags uint64, kind stratav1.FaultKind, cpu int32) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: ts, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, PageSize: 4096,
			Block: blk, Vaddr: va + 0x18, Length: 1, CpuNumaNode: cpu, FaultKind: kind,
			Runs: []*stratav1.PageRun{{Vaddr: va, Count: 1, State: present, Pfn: pfn, Kpageflags: flags, NumaNode: 0}}}
	}
	hotVA, coldVA := uint64(storetest.BlockA), uint64(storetest.BlockA+0x3000)
	b.Records = append(b.Records,
		sample(10, hotVA, 0x111, storetest.KPF(12), stratav1.FaultKind_FAULT_KIND_READ, 0),
		sample(11, hotVA, 0x222, storetest.KPF(12, 2), stratav1.FaultKind_FAULT_KIND_WRITE, 1),
		sample(12, hotVA, 0x333, storetest.KPF(12, 2, 6), stratav1.FaultKind_FAULT_KIND_WRITE, 0),
		sample(13, coldVA, 0x444, storetest.KPF(12), stratav1.FaultKind_FAULT_KIND_READ, 0),
	)
	mustAppend(t, s, b)
	pages, err := s.Hot(context.Background(), store.HotQuery{AppID: storetest.App})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 {
		t.Fatalf("%d hot pages, want 2", len(pages))
	}
	h, c := pages[0], pages[1]
	if h.GetVaddr() != hotVA || h.GetSamples() != 3 || h.GetReads() != 1 || h.GetWrites() != 2 || h.GetCrossNode() != 1 ||
		h.GetPfn() != 0x333 || h.GetKpageflags() != storetest.KPF(12, 2, 6) || h.GetBlock().GetBlockId() != blk.GetBlockId() {
		t.Fatalf("hottest = %v", h)
	}
	if c.GetVaddr() != coldVA || c.GetSamples() != 1 || c.GetPfn() != 0x444 {
		t.Fatalf("second = %v", c)
	}
	if top, _ := s.Hot(context.Background(), store.HotQuery{AppID: storetest.App, Limit: 1}); len(top) != 1 || top[0].GetVaddr() != hotVA {
		t.Fatalf("limit 1 = %v", top)
	}
	other := int32(99)
	if none, _ := s.Hot(context.Background(), store.HotQuery{AppID: storetest.App, RDD: &other}); len(none) != 0 {
		t.Fatalf("rdd 99 = %v", none)
	}
}
