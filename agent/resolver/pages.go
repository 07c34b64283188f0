package resolver

import (
	"errors"
	"fmt"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Page state bits, as the PageRun state field carries them.
const (
	stPresent     = uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	stSwapped     = uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	stExclusive   = uint32(stratav1.PageState_PAGE_STATE_EXCLUSIVE)
	stFileShared  = uint32(stratav1.PageState_PAGE_STATE_FILE_SHARED)
	stSoftDirty   = uint32(stratav1.PageState_PAGE_STATE_SOFT_DIRTY)
	stTHP         = uint32(stratav1.PageState_PAGE_STATE_THP)
	stUnmapped    = uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
	stHidden      = uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
	stFlagsUnkn   = uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
	stRaced       = uint32(stratav1.PageState_PAGE_STATE_RACED)
	stCrossNode   = uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE)
	stHugeTLB     = uint32(stratav1.PageState_PAGE_STATE_HUGETLB)
	kpfHead       = uint64(1) << procmem.KPFCompoundHead
	kpfTail       = uint64(1) << procmem.KPFCompoundTail
	kpfCompound   = kpfHead | kpfTail
	kpfTHP        = uint64(1) << procmem.KPFTHP
	kpfHuge       = uint64(1) << procmem.KPFHuge
	kpfFreed      = uint64(1)<<procmem.KPFNoPage | uint64(1)<<procmem.KPFBuddy
	pfnMask       = 1<<55 - 1
	maxFolioPages = 512 // a PMD folio; larger (hugetlb 1 GiB) folios keep their compound bits
)

// run is a PageRun under construction; plain values, so building runs does
// not allocate.
type run struct {
	vaddr    uint64
	pfn      uint64
	flags    uint64
	kcount   uint64
	swapOff  uint64
	count    uint32
	state    uint32
	folio    uint32
	swapType uint32
	node     int32
}

func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	return (*s)[:n]
}

// resolve fills res for one request.
func (r *Resolver) resolve(pm *procmem.Pagemap, pid int, q Request, res *Result) error {
	ps := r.pageSize
	last := q.VAddr + q.Length - 1
	if q.Length == 0 || last < q.VAddr {
		return ErrBadRange
	}
	start := q.VAddr &^ (ps - 1)
	end := last&^(ps-1) + ps // exclusive; 0 only at the top of the space
	if end == 0 {
		return ErrBadRange
	}
	r.runs = r.runs[:0]
	r.folioN = 0
	var flagsErr error
	chunk := uint64(r.opts.ChunkPages) * ps
	for a := start; a < end; {
		b := min(end, (a/chunk+1)*chunk)
		if err := r.chunk(pm, pid, a, int((b-a)/ps), q.CPUNode, res, &flagsErr); err != nil {
			return err
		}
		a = b
	}
	res.Runs = r.emit()
	var warn []error
	if res.Hidden > 0 {
		warn = append(warn, ErrPFNHidden)
	}
	if flagsErr != nil {
		warn = append(warn, flagsErr)
	}
	res.Warning = errors.Join(warn...)
	return nil
}

// chunk reads n pages from a and appends their runs.
func (r *Resolver) chunk(pm *procmem.Pagemap, pid int, a uint64, n int, cpuNode int32, res *Result, flagsErr *error) error {
	ents := grow(&r.ents, n)
	if err := pm.Read(ents, a); err != nil {
		return err
	}

	// Spans of consecutive PFNs in virtual order.
	spans := r.spans[:0]
	absent := false
	prev := ^uint64(0)
	for i, e := range ents {
		if e&procmem.EntryPresent == 0 {
			absent = absent || e&procmem.EntrySwapped == 0
			prev = ^uint64(0)
			continue
		}
		pfn := uint64(e) & pfnMask
		if pfn == 0 {
			prev = ^uint64(0)
			continue
		}
		if pfn == prev+1 {
			spans[len(spans)-1].N++
		} else {
			spans = append(spans, procmem.Span{PFN: pfn, N: 1, Out: uint32(i)})
		}
		prev = pfn
	}
	r.spans = spans

	var flags, counts []uint64
	flagsOK := false
	if len(spans) > 0 {
		if r.kp == nil {
			*flagsErr = r.kpErr
		} else {
			flags, counts = grow(&r.flags, n), grow(&r.counts, n)
			if err := r.kp.ReadSpans(spans, flags, counts); err != nil {
				*flagsErr = fmt.Errorf("%w: %w", ErrFlagsUnavailable, err)
			} else {
				flagsOK = true
			}
		}
	}
	var again []procmem.Entry
	if flagsOK && !r.opts.NoRecheck {
		again = grow(&r.again, n)
		if err := pm.Read(again, a); err != nil {
			return err
		}
	}
	if absent && !r.vmasLoaded {
		vmas, err := r.fs.Maps(pid)
		if err != nil {
			return err
		}
		r.vmas, r.vmasLoaded = vmas, true
	}

	ps := r.pageSize
	vi := -1
	for i, e := range ents {
		p := run{vaddr: a + uint64(i)*ps, node: -1}
		if e&procmem.EntryExclusive != 0 {
			p.state |= stExclusive
		}
		if e&procmem.EntryFileShared != 0 {
			p.state |= stFileShared
		}
		if e&procmem.EntrySoftDirty != 0 {
			p.state |= stSoftDirty
		}
		switch {
		case e&procmem.EntryPresent != 0:
			p.state |= stPresent
			res.Present++
			p.pfn = uint64(e) & pfnMask
			if p.pfn == 0 {
				p.state |= stHidden | stFlagsUnkn
				res.Hidden++
				break
			}
			p.node = r.nodes.Node(p.pfn)
			if cpuNode >= 0 && p.node >= 0 && p.node != cpuNode {
				p.state |= stCrossNode
			}
			if !flagsOK {
				p.state |= stFlagsUnkn
				break
			}
			p.flags, p.kcount = flags[i], counts[i]
			if p.flags&kpfFreed != 0 || (again != nil && again[i] != e && again[i].PFN() != p.pfn) {
				p.state |= stRaced
				res.Raced++
				break
			}
			if p.flags&kpfTHP != 0 {
				p.state |= stTHP
				res.THP++
			}
			if p.flags&kpfHuge != 0 {
				p.state |= stHugeTLB
			}
			if p.flags&kpfCompound != 0 {
				if fp := r.folioPages(p.pfn, i, ents, flags); fp > 1 {
					p.folio = fp
					p.flags &^= kpfCompound
				}
			}
		case e&procmem.EntrySwapped != 0:
			p.state |= stSwapped
			res.Swapped++
			p.swapType, p.swapOff = e.SwapType(), e.SwapOffset()
		default:
			if vi < 0 {
				vi = procmem.Covering(r.vmas, p.vaddr)
			}
			for vi < len(r.vmas) && r.vmas[vi].End <= p.vaddr {
				vi++
			}
			if vi == len(r.vmas) || r.vmas[vi].Start > p.vaddr {
				p.state |= stUnmapped
				res.Unmapped++
			}
		}
		res.Pages++
		r.add(&p)
	}
	return nil
}

// add appends page p to the last run when it continues it, else starts a
// run. A compound run never crosses a folio boundary.
func (r *Resolver) add(p *run) {
	if k := len(r.runs); k > 0 {
		c := &r.runs[k-1]
		n := uint64(c.count)
		if c.state == p.state && c.flags == p.flags && c.kcount == p.kcount &&
			c.node == p.node && c.folio == p.folio && c.swapType == p.swapType &&
			c.vaddr+n*r.pageSize == p.vaddr && c.count < 1<<32-1 &&
			(p.pfn == 0 && c.pfn == 0 || p.pfn == c.pfn+n) &&
			(p.state&stSwapped == 0 || p.swapOff == c.swapOff+n) &&
			(p.folio == 0 || p.pfn%uint64(p.folio) != 0) {
			c.count++
			return
		}
	}
	p.count = 1
	r.runs = append(r.runs, *p)
}

// emit turns the runs into PageRun messages: one slab and one slice of
// pointers per result, which the caller owns.
func (r *Resolver) emit() []*stratav1.PageRun {
	slab := make([]stratav1.PageRun, len(r.runs))
	out := make([]*stratav1.PageRun, len(r.runs))
	for i := range r.runs {
		x := &r.runs[i]
		m := &slab[i]
		m.Vaddr, m.Count, m.State, m.Pfn = x.vaddr, x.count, x.state, x.pfn
		m.Kpageflags, m.FolioPages, m.Kpagecount, m.NumaNode = x.flags, x.folio, x.kcount, x.node
		m.SwapType, m.SwapOffset = x.swapType, x.swapOff
		out[i] = m
	}
	return out
}

// folioPages returns the size in pages of the compound folio holding pfn
// (page i of the chunk), or 0 when it cannot be told. Folios are naturally
// aligned runs of PFNs: a head, then tails. The chunk's own flags usually
// answer (a head followed by its tails); otherwise one pread of the aligned
// 512-PFN window around pfn does.
func (r *Resolver) folioPages(pfn uint64, i int, ents []procmem.Entry, flags []uint64) uint32 {
	if r.folioN > 0 && pfn >= r.folioHead && pfn < r.folioHead+r.folioN {
		return uint32(r.folioN)
	}
	if flags[i]&kpfHead != 0 {
		n := uint64(1)
		j := i + 1
		for ; j < len(ents) && n < maxFolioPages; j++ {
			e := ents[j]
			if e&procmem.EntryPresent == 0 || uint64(e)&pfnMask != pfn+n {
				break // the folio continues unseen or not at all: ask kpageflags
			}
			if flags[j]&kpfCompound != kpfTail {
				return r.cacheFolio(pfn, n)
			}
			n++
		}
		if n == maxFolioPages {
			return r.cacheFolio(pfn, n)
		}
	}
	base := pfn &^ (maxFolioPages - 1)
	w := grow(&r.window, maxFolioPages)
	if err := r.kp.ReadFlags(w, base); err != nil {
		return 0
	}
	h := pfn - base
	for h > 0 && w[h]&kpfCompound == kpfTail {
		h--
	}
	if w[h]&kpfCompound != kpfHead {
		return 0
	}
	n := uint64(1)
	for h+n < maxFolioPages && w[h+n]&kpfCompound == kpfTail {
		n++
	}
	if pfn >= base+h+n {
		return 0
	}
	return r.cacheFolio(base+h, n)
}

// cacheFolio remembers the folio [head, head+n) when its shape allows the
// PageRun expansion rule (head where PFN % folio_pages == 0).
func (r *Resolver) cacheFolio(head, n uint64) uint32 {
	if n < 2 || n&(n-1) != 0 || head%n != 0 {
		return 0
	}
	r.folioHead, r.folioN = head, n
	return uint32(n)
}
