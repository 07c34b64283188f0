package fit

import (
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

const ps = 4096

// pages expands runs into their pages, the collector's way.
func pages(runs []*stratav1.PageRun) []stratav1.Page {
	var out []stratav1.Page
	for _, r := range runs {
		r.ForEachPage(ps, func(_ uint32, p stratav1.Page) bool { out = append(out, p); return true })
	}
	return out
}

// scattered is n runs of random length whose PFNs step randomly, as the
// pages of a block faulted in out of order look.
func scattered(rng *rand.Rand, vaddr uint64, n int) []*stratav1.PageRun {
	var runs []*stratav1.PageRun
	for range n {
		c := uint32(1 + rng.IntN(300))
		r := &stratav1.PageRun{Vaddr: vaddr, Count: c, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT),
			Pfn: 1 + rng.Uint64N(1<<30), Kpageflags: 1 << 12, NumaNode: 0}
		for range c - 1 {
			r.PfnDeltas = append(r.PfnDeltas, int64(rng.IntN(1<<20))-(1<<19))
		}
		runs = append(runs, r)
		vaddr += uint64(c) * ps
	}
	return runs
}

func TestRunsSplitAtMaxRunPages(t *testing.T) {
	tests := []struct {
		name string
		run  *stratav1.PageRun
		want []uint32
	}{
		// The block: 2 GiB never touched, one run as folded.
		{"untouched 2 GiB", &stratav1.PageRun{Vaddr: 0x7f0000000000, Count: 1 << 19, NumaNode: -1}, []uint32{1 << 18, 1 << 18}},
		{"consecutive PFNs", &stratav1.PageRun{Vaddr: 0x10000000, Count: 1<<18 + 7, State: 1, Pfn: 0x100000, NumaNode: 0}, []uint32{1 << 18, 7}},
		{"swapped", &stratav1.PageRun{Vaddr: 0x10000000, Count: 3<<18 - 1, State: 2, SwapType: 1, SwapOffset: 900, NumaNode: -1}, []uint32{1 << 18, 1 << 18, 1<<18 - 1}},
		{"at the limit", &stratav1.PageRun{Vaddr: 0x10000000, Count: 1 << 18, NumaNode: -1}, []uint32{1 << 18}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := []*stratav1.PageRun{tc.run}
			before := proto.CloneOf(tc.run)
			got := Runs(in, ps)
			var counts []uint32
			for _, r := range got {
				counts = append(counts, r.GetCount())
			}
			if !slices.Equal(counts, tc.want) {
				t.Fatalf("run counts = %v, want %v", counts, tc.want)
			}
			if !slices.Equal(pages(got), pages(in)) {
				t.Fatal("split runs expand to other pages than the run")
			}
			if !proto.Equal(tc.run, before) {
				t.Fatal("input run modified")
			}
		})
	}
}

func TestSplitRunKeepsEveryPage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	thp := &stratav1.PageRun{Vaddr: 0x200000, Count: 512, State: 33, Pfn: 0x40000, FolioPages: 512, Kpageflags: 1 << stratav1.KPFTHP, NumaNode: 0}
	for _, r := range append(scattered(rng, 0x1000000, 20), thp) {
		for _, at := range []uint32{1, r.GetCount() / 2, r.GetCount() - 1} {
			if at == 0 || at >= r.GetCount() {
				continue
			}
			h, tl := SplitRun(r, at, ps)
			if got := pages([]*stratav1.PageRun{h, tl}); !slices.Equal(got, pages([]*stratav1.PageRun{r})) {
				t.Fatalf("split of %d-page run at %d changes its pages", r.GetCount(), at)
			}
			for _, x := range []*stratav1.PageRun{h, tl} {
				if n := len(x.GetPfnDeltas()); n != 0 && n != int(x.GetCount())-1 {
					t.Fatalf("piece of %d pages has %d deltas", x.GetCount(), n)
				}
			}
		}
	}
}

// split cuts rec with a budget of an nth of its size, checks that it
// makes n pieces or more, each within the budget, and returns them and
// their runs in order.
func split(t *testing.T, rec *stratav1.Record, n int) ([]*stratav1.Record, []*stratav1.PageRun) {
	t.Helper()
	budget := RecordSize(rec) / n
	got := Record(rec, budget, ps)
	if len(got) < n {
		t.Fatalf("%d pieces, want at least %d", len(got), n)
	}
	var all []*stratav1.PageRun
	for i, p := range got {
		if size := RecordSize(p); size > budget {
			t.Errorf("piece %d is %d bytes, budget %d", i, size, budget)
		}
		all = append(all, p.GetRuns()...)
	}
	return got, all
}

func TestRecordSplitsIntoSubRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const vaddr = 0x7f0000000010 // not page aligned: the first piece keeps it
	runs := scattered(rng, vaddr&^(ps-1), 400)
	var npages uint64
	for _, r := range runs {
		npages += uint64(r.GetCount())
	}
	rec := &stratav1.Record{TimeUnixNano: 42, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 7,
		Block: &stratav1.SparkBlock{AppId: "app", BlockId: "rdd_1_1"}, Vaddr: vaddr, Length: npages*ps - 0x10,
		PageSize: ps, Runs: runs, CpuNumaNode: -1, Faults: &stratav1.FaultCounts{Read: 5},
		Coverage: &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_REFERENCES, Bytes: npages*ps - 0x10, Detail: "walk pending"}}
	before := proto.CloneOf(rec)
	got, all := split(t, rec, 7)
	next := rec.GetVaddr()
	for i, p := range got {
		if p.GetVaddr() != next {
			t.Errorf("piece %d starts at %#x, want %#x (contiguous)", i, p.GetVaddr(), next)
		}
		next = p.GetVaddr() + p.GetLength()
		if (p.GetFaults() != nil) != (i == 0) {
			t.Errorf("piece %d faults = %v; only the first carries them", i, p.GetFaults())
		}
		if p.GetBlock().GetBlockId() != "rdd_1_1" || p.GetTimeUnixNano() != 42 || p.GetAccess() != rec.GetAccess() {
			t.Errorf("piece %d lost the record's identity: %v", i, p)
		}
		if c := p.GetCoverage(); c.GetResolution() != stratav1.Resolution_RESOLUTION_REFERENCES || c.GetBytes() != p.GetLength() || c.GetDetail() != "walk pending" {
			t.Errorf("piece %d of %d bytes has coverage %v, want its own bytes", i, p.GetLength(), c)
		}
	}
	if end := rec.GetVaddr() + rec.GetLength(); next != end {
		t.Errorf("pieces end at %#x, want %#x", next, end)
	}
	if !slices.Equal(pages(all), pages(runs)) {
		t.Error("pieces expand to other pages than the record")
	}
	if !proto.Equal(rec, before) {
		t.Error("input record modified")
	}
	if one := Record(before, RecordSize(before), ps); len(one) != 1 || one[0] != before {
		t.Error("a record within budget must come back alone and unchanged")
	}
}

// TestWalkedRecordSplitsByRuns: a walked record's runs are its objects'
// pages, below and above its range (the array of references). Its pieces
// all keep the range and the coverage's resolution and epoch; the walk's
// counts and the faults go with the first, so sums over the pieces are the
// record's; every page is kept, in order. A cached batch column's record
// (BUFFERS, its runs the pages of every batch's buffer) splits the same way.
func TestWalkedRecordSplitsByRuns(t *testing.T) {
	for _, cov := range []*stratav1.Coverage{
		{Resolution: stratav1.Resolution_RESOLUTION_WALK_CUT, Bytes: 123456789, Objects: 1e6, SharedObjects: 30,
			SharedBytes: 960, OpaqueObjects: 2, GcEpoch: 17, Extents: 301},
		{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: 98765432, Objects: 260, GcEpoch: 17, Extents: 260},
	} {
		t.Run(cov.GetResolution().String(), func(t *testing.T) { splitByRuns(t, cov) })
	}
}

func splitByRuns(t *testing.T, cov *stratav1.Coverage) {
	rng := rand.New(rand.NewPCG(7, 8))
	const array = 0x7f0040000000
	var runs []*stratav1.PageRun
	for _, at := range []uint64{0x7f0000000000, 0x7f0020000000, 0x7f0080000000} {
		for _, r := range scattered(rng, at, 150) {
			if rng.IntN(3) == 0 {
				continue // a gap between extents
			}
			runs = append(runs, r)
		}
	}
	rec := &stratav1.Record{TimeUnixNano: 42, Access: stratav1.AccessKind_ACCESS_KIND_MOVE, Pid: 7, Block: &stratav1.SparkBlock{BlockId: "rdd_2_0"},
		Vaddr: array, Length: 8 << 20, PageSize: ps, Runs: runs, Faults: &stratav1.FaultCounts{Write: 3}, Coverage: cov}
	before := proto.CloneOf(rec)
	got, all := split(t, rec, 9)
	sum := &stratav1.Coverage{}
	for i, p := range got {
		if p.GetVaddr() != array || p.GetLength() != 8<<20 {
			t.Errorf("piece %d covers %#x+%#x, want the array %#x+%#x", i, p.GetVaddr(), p.GetLength(), uint64(array), 8<<20)
		}
		c := p.GetCoverage()
		if c.GetResolution() != cov.GetResolution() || c.GetGcEpoch() != 17 || (p.GetFaults() != nil) != (i == 0) {
			t.Errorf("piece %d: coverage %v, faults %v", i, c, p.GetFaults())
		}
		sum.Bytes += c.GetBytes()
		sum.Objects += c.GetObjects()
		sum.SharedObjects += c.GetSharedObjects()
		sum.SharedBytes += c.GetSharedBytes()
		sum.OpaqueObjects += c.GetOpaqueObjects()
		sum.Extents += c.GetExtents()
	}
	sum.Resolution, sum.GcEpoch = cov.GetResolution(), cov.GetGcEpoch()
	if !proto.Equal(sum, cov) {
		t.Errorf("coverage summed over the pieces %v, want %v", sum, cov)
	}
	if !slices.Equal(pages(all), pages(runs)) {
		t.Error("pieces expand to other pages than the record")
	}
	if !proto.Equal(rec, before) {
		t.Error("input record modified")
	}
}

func TestRecordSplitsASingleHugeRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := &stratav1.PageRun{Vaddr: 0x10000000, Count: 60000, State: 1, Pfn: 5}
	for range r.Count - 1 {
		r.PfnDeltas = append(r.PfnDeltas, int64(rng.IntN(1<<24)))
	}
	rec := &stratav1.Record{Block: &stratav1.SparkBlock{AppId: "a"}, Vaddr: r.Vaddr, Length: 60000 * ps, PageSize: ps, Runs: []*stratav1.PageRun{r}}
	got := Record(rec, 64<<10, ps)
	var all []*stratav1.PageRun
	for _, p := range got {
		if RecordSize(p) > 64<<10 {
			t.Fatalf("piece of %d bytes over 64 KiB", RecordSize(p))
		}
		all = append(all, p.GetRuns()...)
	}
	if !slices.Equal(pages(all), pages(rec.GetRuns())) {
		t.Fatal("pieces lost pages")
	}
}

func TestHalveAndRepair(t *testing.T) {
	b := &stratav1.Batch{NodeName: "n", BootId: "b", Seq: 9, Node: &stratav1.NodeInfo{PageSize: ps}}
	for i := range 5 {
		b.Records = append(b.Records, &stratav1.Record{Pid: uint32(i)})
	}
	b.Workloads = []*stratav1.WorkloadCounters{{AppId: "w"}}
	x, y, ok := Halve(b)
	if !ok || len(x.Records) != 3 || len(y.Records) != 2 || len(y.Workloads) != 1 || x.GetNodeName() != "n" || y.GetNode().GetPageSize() != ps {
		t.Fatalf("halves = %v / %v", x, y)
	}
	if _, _, ok := Halve(y); !ok {
		t.Fatal("a record and a workload are two items")
	}
	if _, _, ok := Halve(&stratav1.Batch{Records: b.Records[:1]}); ok {
		t.Fatal("one item cannot be halved")
	}
	// Process memory and heat samples ride along: none is lost in halves.
	all := &stratav1.Batch{Records: b.Records[:2], Workloads: b.Workloads,
		Processes: []*stratav1.ProcessMemory{{Pid: 1}, {Pid: 2}}, Heat: []*stratav1.HeatSample{{Pid: 3}, {Pid: 4}, {Pid: 5}}}
	x, y, ok = Halve(all)
	if !ok || Items(all) != 8 || Items(x) != 4 || Items(y) != 4 || len(x.Processes) != 1 || len(y.Processes) != 1 ||
		len(y.Heat) != 3 || y.Heat[0].GetPid() != 3 {
		t.Fatalf("halves of records, workloads, processes and heat = %v / %v", x, y)
	}
	if Repair(b, BatchBudget) != b {
		t.Fatal("a batch that fits must come back as is")
	}
	long := &stratav1.Batch{NodeName: "n", BootId: "b", Seq: 3, Node: &stratav1.NodeInfo{PageSize: ps},
		Records:   []*stratav1.Record{{PageSize: ps, Runs: []*stratav1.PageRun{{Count: 1 << 19}}}},
		Workloads: all.Workloads, Processes: all.Processes, Heat: all.Heat}
	if Fits(long) {
		t.Fatal("a run of 2^19 pages must not fit")
	}
	fixed := Repair(long, BatchBudget)
	if !Fits(fixed) || len(fixed.Records[0].Runs) != 2 {
		t.Fatalf("repaired = %v", fixed)
	}
	// Everything but the records comes through a repair as it was.
	fixed.Records, long.Records = nil, nil
	if !proto.Equal(fixed, long) {
		t.Fatalf("repair changed the batch's other fields: %v, want %v", fixed, long)
	}
}
