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
