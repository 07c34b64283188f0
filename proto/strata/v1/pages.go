package stratav1

// This file is hand-written: helpers on the generated types that both the
// agent and the collector need, so neither has to import the other.

// kpageflags bit numbers (include/uapi/linux/kernel-page-flags.h).
const (
	KPFCompoundHead = 15
	KPFCompoundTail = 16
	KPFTHP          = 22
)

// kpageflagNames are the stable /proc/kpageflags bits, lowercase, by bit number.
var kpageflagNames = [...]string{
	"locked", "error", "referenced", "uptodate", "dirty", "lru", "active", "slab",
	"writeback", "reclaim", "buddy", "mmap", "anon", "swapcache", "swapbacked",
	"compound_head", "compound_tail", "huge", "unevictable", "hwpoison", "nopage",
	"ksm", "thp", "offline", "zero_page", "idle", "pgtable",
}

// KPageFlagNames returns the lowercase names of the stable kpageflags bits set
// in f, in bit order. Bits above 26 (kernel-hacking flags) are not named.
func KPageFlagNames(f uint64) []string {
	names := make([]string, 0, 8)
	for bit, name := range kpageflagNames {
		if f&(1<<uint(bit)) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// Page is one base page of a PageRun.
type Page struct {
	VAddr      uint64
	State      uint32 // PageState bits
	PFN        uint64 // 0 unless present with a visible PFN
	KPageFlags uint64
	KPageCount uint64
	NUMANode   int32
	SwapType   uint32
	SwapOffset uint64
}

// PAddr is the page's physical address, 0 when the PFN is unknown.
func (p Page) PAddr(pageSize uint64) uint64 { return p.PFN * pageSize }

// Is reports whether every bit of s is set in the page's state.
func (p Page) Is(s PageState) bool { return p.State&uint32(s) == uint32(s) }

// Page returns page i (0 <= i < Count) of the run, restoring the per-page
// fields a run shares by rule: PFNs (consecutive, or by pfn_deltas), swap
// offsets, and the compound head/tail bits from the folio size. With
// pfn_deltas it costs O(i); ForEachPage walks a whole run in O(Count).
func (r *PageRun) Page(i uint32, pageSize uint64) Page {
	pfn := r.GetPfn()
	if d := r.GetPfnDeltas(); len(d) > 0 {
		for _, x := range d[:i] {
			pfn += uint64(x)
		}
	} else if pfn != 0 {
		pfn += uint64(i)
	}
	return r.page(i, pfn, pageSize)
}

// ForEachPage calls fn for every page of the run in order until fn returns
// false.
func (r *PageRun) ForEachPage(pageSize uint64, fn func(i uint32, p Page) bool) {
	pfn, d := r.GetPfn(), r.GetPfnDeltas()
	for i := uint32(0); i < r.GetCount(); i++ {
		if i > 0 && pfn != 0 {
			if len(d) > 0 {
				pfn += uint64(d[i-1])
			} else {
				pfn++
			}
		}
		if !fn(i, r.page(i, pfn, pageSize)) {
			return
		}
	}
}

func (r *PageRun) page(i uint32, pfn, pageSize uint64) Page {
	p := Page{
		VAddr:      r.GetVaddr() + uint64(i)*pageSize,
		State:      r.GetState(),
		KPageFlags: r.GetKpageflags(),
		KPageCount: r.GetKpagecount(),
		NUMANode:   r.GetNumaNode(),
	}
	if r.GetPfn() != 0 {
		p.PFN = pfn
		if fp := uint64(r.GetFolioPages()); fp > 1 {
			if p.PFN%fp == 0 {
				p.KPageFlags |= 1 << KPFCompoundHead
			} else {
				p.KPageFlags |= 1 << KPFCompoundTail
			}
		}
	}
	if p.State&uint32(PageState_PAGE_STATE_SWAPPED) != 0 {
		p.SwapType = r.GetSwapType()
		p.SwapOffset = r.GetSwapOffset() + uint64(i)
	}
	return p
}
