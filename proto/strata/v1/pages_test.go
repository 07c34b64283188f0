package stratav1

import (
	"slices"
	"testing"
)

func TestPageExpandsTHPRun(t *testing.T) {
	r := &PageRun{Vaddr: 0x7f0000200000, Count: 512, State: uint32(PageState_PAGE_STATE_PRESENT | PageState_PAGE_STATE_THP),
		Pfn: 0x40000, Kpageflags: 1<<KPFTHP | 1<<12, FolioPages: 512, Kpagecount: 1, NumaNode: 0}
	head := r.Page(0, 4096)
	if head.PFN != 0x40000 || head.VAddr != 0x7f0000200000 || head.KPageFlags&(1<<KPFCompoundHead) == 0 {
		t.Fatalf("head = %+v", head)
	}
	tail := r.Page(511, 4096)
	if tail.PFN != 0x401ff || tail.VAddr != 0x7f0000200000+511*4096 || tail.KPageFlags&(1<<KPFCompoundTail) == 0 || tail.KPageFlags&(1<<KPFCompoundHead) != 0 {
		t.Fatalf("tail = %+v", tail)
	}
	if got := tail.PAddr(4096); got != 0x401ff000 {
		t.Fatalf("paddr = %#x", got)
	}
	if got, want := KPageFlagNames(tail.KPageFlags), []string{"anon", "compound_tail", "thp"}; !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
}

func TestPageNotPresentHasNoPFN(t *testing.T) {
	r := &PageRun{Vaddr: 0x1000, Count: 3, State: uint32(PageState_PAGE_STATE_SWAPPED), SwapType: 1, SwapOffset: 100, NumaNode: -1}
	p := r.Page(2, 4096)
	if p.PFN != 0 || p.SwapOffset != 102 || p.SwapType != 1 || p.Is(PageState_PAGE_STATE_PRESENT) || !p.Is(PageState_PAGE_STATE_SWAPPED) {
		t.Fatalf("page = %+v", p)
	}
}

func TestPageDeltas(t *testing.T) {
	r := &PageRun{Vaddr: 0x10000, Count: 4, State: uint32(PageState_PAGE_STATE_PRESENT), Pfn: 1000, PfnDeltas: []int64{7, -500, 1}}
	want := []uint64{1000, 1007, 507, 508}
	for i, w := range want {
		if got := r.Page(uint32(i), 4096).PFN; got != w {
			t.Fatalf("Page(%d).PFN = %d, want %d", i, got, w)
		}
	}
	var got []uint64
	r.ForEachPage(4096, func(i uint32, p Page) bool {
		if p.VAddr != 0x10000+uint64(i)*4096 {
			t.Fatalf("page %d vaddr %#x", i, p.VAddr)
		}
		got = append(got, p.PFN)
		return true
	})
	if !slices.Equal(got, want) {
		t.Fatalf("ForEachPage PFNs = %v, want %v", got, want)
	}
	// Without deltas, consecutive; not present, zero.
	c := &PageRun{Count: 3, Pfn: 5}
	var cs []uint64
	c.ForEachPage(4096, func(_ uint32, p Page) bool { cs = append(cs, p.PFN); return len(cs) < 2 })
	if !slices.Equal(cs, []uint64{5, 6}) {
		t.Fatalf("consecutive = %v", cs)
	}
	h := &PageRun{Count: 2}
	h.ForEachPage(4096, func(_ uint32, p Page) bool {
		if p.PFN != 0 {
			t.Fatalf("hole page has pfn %d", p.PFN)
		}
		return true
	})
}
