package stratav1

import (
	"encoding/binary"
	"fmt"
)

// This file is hand-written: helpers on the generated types that both the
// agent and the collector need, so neither has to import the other, and
// the one statement of a run's PFN rule (below Page).

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
// fields a run shares by rule: PFNs (PFNAt), swap offsets, and the compound
// head/tail bits from the folio size. With pfn_deltas it costs O(i);
// ForEachPage walks a whole run in O(Count).
func (r *PageRun) Page(i uint32, pageSize uint64) Page {
	return r.page(i, r.PFNAt(i), pageSize)
}

// ForEachPage calls fn for every page of the run in order until fn returns
// false.
func (r *PageRun) ForEachPage(pageSize uint64, fn func(i uint32, p Page) bool) {
	r.ForEachPFN(func(i uint32, pfn uint64) bool { return fn(i, r.page(i, pfn, pageSize)) })
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

// The PFN rule of a PageRun (record.proto): page i of a run with a PFN has
// PFN pfn + i or, when pfn_deltas is set, pfn + pfn_deltas[0] + ... +
// pfn_deltas[i-1]. A run has count-1 steps or none, none when every PFN
// follows the one before (the canonical form every builder here makes);
// a run without a PFN (pfn 0) has no steps, and its pages have no PFN.
// The functions below are the rule's one statement: building the fields
// (PFNSteps, EncodePFNs), reading them (PFNAt, ForEachPFN, ForEachPFNSpan),
// cutting and joining runs (SubPFNs, JoinPFNs), checking them
// (ValidatePFNs) and the compact byte form a store keeps them in
// (AppendPFNDeltas, ParsePFNDeltas). Readers expect a run that
// ValidatePFNs accepts (or at least count-1 steps or none).

// PFNAt returns the PFN of page i (0 <= i < Count), 0 when the run has
// none. With pfn_deltas it costs O(i).
func (r *PageRun) PFNAt(i uint32) uint64 {
	pfn := r.GetPfn()
	if pfn == 0 {
		return 0
	}
	d := r.GetPfnDeltas()
	if len(d) == 0 {
		return pfn + uint64(i)
	}
	for _, x := range d[:i] {
		pfn += uint64(x)
	}
	return pfn
}

// ForEachPFN calls fn with every page's PFN in order (all 0 when the run
// has none) until fn returns false.
func (r *PageRun) ForEachPFN(fn func(i uint32, pfn uint64) bool) {
	pfn, d := r.GetPfn(), r.GetPfnDeltas()
	for i := uint32(0); i < r.GetCount(); i++ {
		if i > 0 && pfn != 0 {
			if len(d) > 0 {
				pfn += uint64(d[i-1])
			} else {
				pfn++
			}
		}
		if !fn(i, pfn) {
			return
		}
	}
}

// ForEachPFNSpan calls fn with each stretch of consecutive PFNs of the run,
// in page order, until fn returns false: one call for a run without steps,
// none for a run without a PFN.
func (r *PageRun) ForEachPFNSpan(fn func(first uint64, n uint32) bool) {
	pfn, count := r.GetPfn(), r.GetCount()
	if pfn == 0 || count == 0 {
		return
	}
	start, n := pfn, uint32(1)
	for _, x := range r.GetPfnDeltas() {
		next := pfn + uint64(x)
		if next == pfn+1 {
			n++
		} else {
			if !fn(start, n) {
				return
			}
			start, n = next, 1
		}
		pfn = next
	}
	if len(r.GetPfnDeltas()) == 0 {
		n = count
	}
	fn(start, n)
}

// SubPFNs returns the pfn and pfn_deltas of the run made of pages
// [from, from+n) of r (n >= 1, from+n <= Count): steps only when those
// pages' PFNs are not consecutive, and then a copy, so the two runs share
// nothing.
func (r *PageRun) SubPFNs(from, n uint32) (pfn uint64, deltas []int64) {
	pfn = r.PFNAt(from)
	d := r.GetPfnDeltas()
	if pfn == 0 || len(d) == 0 {
		return pfn, nil
	}
	steps := d[from : from+n-1]
	for _, x := range steps {
		if x != 1 {
			return pfn, append([]int64(nil), steps...)
		}
	}
	return pfn, nil
}

// JoinPFNs returns the pfn_deltas of the run made of a's pages followed by
// b's (its pfn is a's): none when neither has a PFN, or when neither has
// steps and b's first PFN follows a's last; else a's steps (all 1 when it
// has none), the step from a's last PFN to b's first, and b's steps. ok is
// false when only one of them has a PFN, or a run without a PFN has steps.
func JoinPFNs(a, b *PageRun) (deltas []int64, ok bool) {
	ap, bp := a.GetPfn(), b.GetPfn()
	da, db := a.GetPfnDeltas(), b.GetPfnDeltas()
	if ap == 0 || bp == 0 {
		return nil, ap == 0 && bp == 0 && len(da) == 0 && len(db) == 0
	}
	last := a.PFNAt(a.GetCount() - 1)
	if len(da) == 0 && len(db) == 0 && bp == last+1 {
		return nil, true
	}
	deltas = make([]int64, 0, int(a.GetCount())+int(b.GetCount())-1)
	deltas = appendSteps(deltas, da, a.GetCount())
	deltas = append(deltas, int64(bp-last))
	return appendSteps(deltas, db, b.GetCount()), true
}

// appendSteps appends a run's steps to dst: d, or the count-1 unit steps a
// run without steps has.
func appendSteps(dst, d []int64, count uint32) []int64 {
	if len(d) > 0 {
		return append(dst, d...)
	}
	for range int(count) - 1 {
		dst = append(dst, 1)
	}
	return dst
}

// PFNSteps builds the pfn_deltas of runs whose pages are added one at a
// time, the steps of all of them in one slab: a run keeps no steps while
// each PFN added follows the one before; the first that does not writes
// the run's steps so far (all 1), and every step after it is kept. Pages
// are added to the latest run only. The zero value is ready to use.
type PFNSteps struct {
	slab []int64
	last uint64 // PFN of the latest page added to a run with steps
}

// PFNRun is where a run's steps are in its PFNSteps, a plain value kept
// with the run; the zero value is a run without steps.
type PFNRun struct {
	start int32 // 1 + the index of the run's first step; 0: none
}

// Consecutive reports whether the run has no steps (its PFNs so far follow
// each other).
func (r PFNRun) Consecutive() bool { return r.start == 0 }

// Add adds a page of PFN pfn to run r, which has count pages (count >= 1)
// from PFN first; first and pfn are not 0. A page that keeps the run
// consecutive costs a comparison (Add inlines).
func (s *PFNSteps) Add(r *PFNRun, first uint64, count uint32, pfn uint64) {
	if r.start == 0 && pfn == first+uint64(count) {
		return
	}
	s.step(r, first, count, pfn)
}

// step keeps the step to pfn, first writing run r's count-1 unit steps
// when it has none yet. Not inlined, so that Add is.
//
//go:noinline
func (s *PFNSteps) step(r *PFNRun, first uint64, count uint32, pfn uint64) {
	if r.start == 0 {
		r.start = int32(len(s.slab)) + 1
		s.slab = appendSteps(s.slab, nil, count)
		s.last = first + uint64(count) - 1
	}
	s.slab = append(s.slab, int64(pfn-s.last))
	s.last = pfn
}

// Reset forgets every run's steps, keeping the slab's memory.
func (s *PFNSteps) Reset() { s.slab = s.slab[:0] }

// Copy returns a copy of the slab for Deltas to slice, nil when no run has
// steps: the runs handed out share it, and the builder may be reused.
func (s *PFNSteps) Copy() []int64 {
	if len(s.slab) == 0 {
		return nil
	}
	return append([]int64(nil), s.slab...)
}

// Deltas returns the pfn_deltas of run r, of count pages, out of slab (a
// Copy of its PFNSteps): nil when it has no steps.
func (r PFNRun) Deltas(slab []int64, count uint32) []int64 {
	if r.start == 0 {
		return nil
	}
	i := int(r.start) - 1
	j := i + int(count) - 1
	return slab[i:j:j]
}

// EncodePFNs returns the pfn and pfn_deltas of a run whose pages have the
// PFNs pfns: all of them non-zero, or pfns[0] 0 for a run without a PFN
// (then 0, nil).
func EncodePFNs(pfns []uint64) (pfn uint64, deltas []int64) {
	if len(pfns) == 0 || pfns[0] == 0 {
		return 0, nil
	}
	var s PFNSteps
	var r PFNRun
	for i, p := range pfns[1:] {
		s.Add(&r, pfns[0], uint32(i+1), p)
	}
	return pfns[0], r.Deltas(s.slab, uint32(len(pfns)))
}

// ValidatePFNs checks that the run has count-1 steps or none, steps only
// with a PFN, and every page's PFN in 1..limit-1 (limit below 2^63).
func (r *PageRun) ValidatePFNs(limit uint64) error {
	n, pfn, d := r.GetCount(), r.GetPfn(), r.GetPfnDeltas()
	if len(d) > 0 && len(d) != int(n)-1 {
		return fmt.Errorf("%d pfn_deltas for %d pages, want %d", len(d), n, n-1)
	}
	if pfn == 0 {
		if len(d) > 0 {
			return fmt.Errorf("pfn_deltas on a run without a PFN")
		}
		return nil
	}
	if pfn >= limit {
		return fmt.Errorf("pfn %#x beyond physical memory", pfn)
	}
	if len(d) == 0 {
		if uint64(n) > limit-pfn {
			return fmt.Errorf("pfns %#x+%d beyond physical memory", pfn, n)
		}
		return nil
	}
	for i, x := range d {
		// pfn < limit < 2^63 and x is checked before it is added, so the
		// sum cannot wrap.
		if x <= -int64(pfn) || x >= int64(limit-pfn) {
			return fmt.Errorf("pfn_deltas[%d] = %d takes pfn %#x outside physical memory", i, x, pfn)
		}
		pfn = uint64(int64(pfn) + x)
	}
	return nil
}

// AppendPFNDeltas appends a run's pfn_deltas to dst in their compact byte
// form, consecutive zigzag varints (encoding/binary's Varint); a run
// without steps adds nothing.
func AppendPFNDeltas(dst []byte, d []int64) []byte {
	for _, x := range d {
		dst = binary.AppendVarint(dst, x)
	}
	return dst
}

// ParsePFNDeltas reads the pfn_deltas of a run of count pages from their
// compact byte form: exactly count-1 steps, or none (empty b).
func ParsePFNDeltas(b []byte, count uint32) ([]int64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := make([]int64, 0, min(int(count), len(b))) // a step takes a byte or more
	for len(b) > 0 {
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, fmt.Errorf("decode pfn deltas: bad varint at step %d", len(d))
		}
		d = append(d, x)
		b = b[n:]
	}
	if len(d) != int(count)-1 {
		return nil, fmt.Errorf("decode pfn deltas: %d steps for %d pages", len(d), count)
	}
	return d, nil
}
