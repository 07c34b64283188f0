package resolver

import (
	"errors"
	"fmt"
	"slices"

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
	// dstart indexes the run's count-1 PFN steps in Resolver.deltas; -1
	// while the PFNs are consecutive (the common case, no steps kept).
	dstart int32
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
	r.deltas = r.deltas[:0]
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
	if r.kp == nil && res.Present > 0 {
		flagsErr = r.kpErr
	}
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

// pmdPages is the number of base pages one PMD maps (2 MiB of 4 KiB pages).
const pmdPages = 512

// chunk reads n pages from a and appends their runs. a is the range start or
// a multiple of ChunkPages pages, so a PMD block never straddles two chunks.
func (r *Resolver) chunk(pm *procmem.Pagemap, pid int, a uint64, n int, cpuNode int32, res *Result, flagsErr *error) error {
	ents := grow(&r.ents, n)
	if err := pm.Read(ents, a); err != nil {
		return err
	}
	ps := r.pageSize
	r.chunkBase, r.chunkG0, r.chunkN = a, a>>r.pmdShift, n

	// One pass: spans of consecutive PFNs in virtual order for kpageflags
	// (long ones may be PMD maps), and for kpagecount the spans of pages
	// pagemap does not call exclusive: bit 56 is set exactly when the
	// page's precise mapcount, which kpagecount reports, is 1.
	spans, cspans := r.spans[:0], r.cspans[:0]
	absent, hidden, long := false, false, false
	prev, cprev := ^uint64(0), ^uint64(0)
	for i, e := range ents {
		if e&procmem.EntryPresent == 0 {
			absent = absent || e&procmem.EntrySwapped == 0
			prev, cprev = ^uint64(0), ^uint64(0)
			continue
		}
		pfn := uint64(e) & pfnMask
		if pfn == 0 {
			hidden = true
			prev, cprev = ^uint64(0), ^uint64(0)
			continue
		}
		if pfn == prev+1 {
			spans[len(spans)-1].N++
		} else {
			if len(spans) > 0 && spans[len(spans)-1].N >= minScanPages {
				long = true
			}
			spans = append(spans, procmem.Span{PFN: pfn, N: 1, Out: uint32(i)})
		}
		prev = pfn
		if e&procmem.EntryExclusive != 0 && !r.opts.ReadAllCounts {
			cprev = ^uint64(0)
			continue
		}
		if pfn == cprev+1 {
			cspans[len(cspans)-1].N++
		} else {
			cspans = append(cspans, procmem.Span{PFN: pfn, N: 1, Out: uint32(i)})
		}
		cprev = pfn
	}
	long = long || len(spans) > 0 && spans[len(spans)-1].N >= minScanPages
	r.cspans = cspans

	// PMD-mapped folios: one kpageflags read for the head stands for all
	// 512 pages (flags are the folio's), verified below.
	r.blk, r.heads = r.blk[:0], r.heads[:0]
	if long && r.kp != nil && !r.noScan {
		if err := r.findPMDs(pm, spans, ents); err != nil {
			return err
		}
	}
	if len(r.heads) > 0 {
		// Rebuild the spans without the pages the heads stand for.
		spans = spans[:0]
		prev = ^uint64(0)
		for i := 0; i < n; {
			if r.blockOf(i) >= 0 {
				i = r.blockEnd(i)
				prev = ^uint64(0)
				continue
			}
			pfn := ents[i].PFN()
			switch {
			case pfn == 0:
				prev = ^uint64(0)
			case pfn == prev+1:
				spans[len(spans)-1].N++
				prev = pfn
			default:
				spans = append(spans, procmem.Span{PFN: pfn, N: 1, Out: uint32(i)})
				prev = pfn
			}
			i++
		}
		for k, h := range r.heads {
			spans = append(spans, procmem.Span{PFN: h, N: 1, Out: uint32(n + k)})
		}
	}
	r.spans = spans

	var flags, counts []uint64
	flagsOK := false
	if len(spans) > 0 {
		if r.kp == nil {
			*flagsErr = r.kpErr
		} else {
			flags, counts = grow(&r.flags, n+len(r.heads)), grow(&r.counts, n)
			err := r.kp.ReadSpans(spans, flags, nil)
			if err == nil {
				err = r.kp.ReadSpans(cspans, nil, counts)
			}
			if err == nil {
				err = r.checkHeads(ents, flags)
			}
			if err != nil {
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
	if absent && r.maps == nil {
		m, err := r.fs.OpenMaps(pid)
		if err != nil {
			return err
		}
		r.maps = m
	}

	var hiddenNodes []int32
	if hidden {
		hiddenNodes = r.nodesOfHidden(pid, ents, a)
	}

	// The mapping at or above the last absent page: absent pages below its
	// start have no VMA. Found with one PROCMAP_QUERY per mapping crossed.
	var vma procmem.VMA
	vmaOK, vmaKnown := false, false
	for i := 0; i < n; i++ {
		e := ents[i]
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
				if hiddenNodes != nil {
					p.node = hiddenNodes[i]
					if cpuNode >= 0 && p.node >= 0 && p.node != cpuNode {
						p.state |= stCrossNode
					}
				}
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
			p.kcount = 1
			if e&procmem.EntryExclusive == 0 || r.opts.ReadAllCounts {
				p.kcount = counts[i]
			}
			k := r.blockOf(i)
			if k >= 0 {
				p.flags = flags[n+int(k)]
			} else {
				p.flags = flags[i]
			}
			// A mapped page never has no flags at all: 0 is a page caught
			// between being freed and mapped again (the same PFN can come
			// back at the same address, so the pagemap re-read alone
			// cannot see it).
			if p.flags&kpfFreed != 0 || p.flags == 0 || (again != nil && again[i] != e && again[i].PFN() != p.pfn) {
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
			if k >= 0 {
				p.folio = pmdPages
				p.flags &^= kpfCompound
			} else if p.flags&kpfCompound != 0 {
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
			if !vmaKnown || vmaOK && p.vaddr >= vma.End {
				var err error
				if vma, vmaOK, err = r.maps.VMAAt(p.vaddr); err != nil {
					return err
				}
				vmaKnown = true
			}
			if !vmaOK || p.vaddr < vma.Start {
				p.state |= stUnmapped
				res.Unmapped++
			}
		}
		res.Pages++
		r.add(&p)
		if p.folio == pmdPages && p.state&stRaced == 0 && r.blockOf(i) >= 0 {
			// The rest of a PMD-mapped folio: the same entry but for the
			// PFN, so one comparison per page extends the run.
			m := i + 1
			end := r.blockEnd(i)
			for m < end && ents[m] == e+procmem.Entry(m-i) &&
				(again == nil || again[m] == ents[m]) &&
				(p.kcount == 1 && e&procmem.EntryExclusive != 0 && !r.opts.ReadAllCounts || counts[m] == p.kcount) {
				m++
			}
			if extra := uint64(m - i - 1); extra > 0 && r.nodes.Node(p.pfn+extra) == p.node {
				r.runs[len(r.runs)-1].count += uint32(extra)
				res.Pages += extra
				res.Present += extra
				if p.state&stTHP != 0 {
					res.THP += extra
				}
				i = m - 1
			}
		}
	}
	return nil
}

// nodesOfHidden asks move_pages(2), which needs no CAP_SYS_ADMIN, for the
// NUMA node of every present page whose PFN the kernel hid, so that an
// unprivileged agent still places pages on nodes. The syscall reaches the
// running kernel, so it is used only when the FS is the live /proc. It
// returns nil when there are none or the call fails (nodes then stay -1);
// the slice is indexed like ents, -1 where unknown.
func (r *Resolver) nodesOfHidden(pid int, ents []procmem.Entry, a uint64) []int32 {
	addrs := r.hiddenAddrs[:0]
	for i, e := range ents {
		if e&procmem.EntryPresent != 0 && uint64(e)&pfnMask == 0 {
			addrs = append(addrs, uintptr(a+uint64(i)*r.pageSize))
		}
	}
	r.hiddenAddrs = addrs
	if len(addrs) == 0 || !r.liveProc {
		return nil
	}
	status := grow(&r.hiddenStatus, len(addrs))
	if procmem.MovePagesNodes(pid, addrs, status) != nil {
		return nil
	}
	nodes := grow(&r.hiddenNodes, len(ents))
	k := 0
	for i, e := range ents {
		nodes[i] = -1
		if e&procmem.EntryPresent != 0 && uint64(e)&pfnMask == 0 {
			if status[k] >= 0 {
				nodes[i] = status[k]
			}
			k++
		}
	}
	return nodes
}

// blockEnd is the index, within the chunk, of the first page after the PMD
// group holding page i.
func (r *Resolver) blockEnd(i int) int {
	va := r.chunkBase + uint64(i)*r.pageSize
	next := (va>>r.pmdShift + 1) << r.pmdShift
	return min(r.chunkN, int((next-r.chunkBase)/r.pageSize))
}

// blockOf returns the index in r.heads of the PMD head standing for page i
// of the chunk, or -1.
func (r *Resolver) blockOf(i int) int32 {
	if len(r.blk) == 0 {
		return -1
	}
	return r.blk[(r.chunkBase+uint64(i)*r.pageSize)>>r.pmdShift-r.chunkG0]
}

// minScanPages is the span length from which the chunk is asked for PMD
// mappings: shorter spans cannot be a PMD-mapped THP seen whole, and a scan
// of 4 KiB pages costs about as much as a pagemap read.
const minScanPages = 64

// findPMDs asks PAGEMAP_SCAN which long spans are PMD-mapped and records,
// per 2 MiB group of the chunk, the head PFN standing for the group
// (r.blk[g] = index into r.heads, -1 for none).
func (r *Resolver) findPMDs(pm *procmem.Pagemap, spans []procmem.Span, ents []procmem.Entry) error {
	ps, a, g0, shift := r.pageSize, r.chunkBase, r.chunkG0, r.pmdShift
	n := len(ents)
	last := (a + uint64(n-1)*ps) >> shift
	r.blk = grow(&r.blk, int(last-g0+1))
	for g := range r.blk {
		r.blk[g] = -1
	}
	r.huge = r.huge[:0]
	for _, s := range spans {
		if s.N < minScanPages {
			continue
		}
		lo := a + uint64(s.Out)*ps
		var err error
		r.huge, err = pm.HugeRanges(r.huge, lo, lo+uint64(s.N)*ps)
		if errors.Is(err, procmem.ErrScanUnsupported) {
			r.noScan = true
			r.blk = r.blk[:0]
			return nil
		}
		if err != nil {
			return err
		}
	}
	for _, h := range r.huge {
		for v := h.Start >> shift << shift; v < h.End; v += 1 << shift {
			// The part of this PMD inside the chunk must be consecutive
			// PFNs from a head aligned to the PMD size.
			i0 := int((max(v, a) - a) / ps)
			i1 := min(n, int((v+1<<shift-a)/ps))
			if i0 >= i1 || r.blk[v>>shift-g0] >= 0 {
				continue
			}
			head := ents[i0].PFN() - (max(v, a)-v)/ps
			ok := ents[i0].PFN() != 0 && head%pmdPages == 0
			for i := i0; ok && i < i1; i++ {
				ok = ents[i].PFN() == head+uint64(i-i0)+(max(v, a)-v)/ps
			}
			if ok {
				r.blk[v>>shift-g0] = int32(len(r.heads))
				r.heads = append(r.heads, head)
			}
		}
	}
	return nil
}

// checkHeads verifies that every head read for a PMD group is a compound
// head of a THP or hugetlb folio; a group that fails is read page by page.
func (r *Resolver) checkHeads(ents []procmem.Entry, flags []uint64) error {
	n := len(ents)
	for k := range r.heads {
		f := flags[n+k]
		if f&kpfCompound == kpfHead && f&(kpfTHP|kpfHuge) != 0 {
			continue
		}
		for i := range ents {
			if r.blockOf(i) != int32(k) {
				continue
			}
			j := i
			for j < n && r.blockOf(j) == int32(k) {
				j++
			}
			r.blk[(r.chunkBase+uint64(i)*r.pageSize)>>r.pmdShift-r.chunkG0] = -1
			if err := r.kp.ReadFlags(flags[i:j], ents[i].PFN()); err != nil {
				return err
			}
			break
		}
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
			c.vaddr+n*r.pageSize == p.vaddr && c.count < 1<<31 &&
			(p.state&stSwapped == 0 || p.swapOff == c.swapOff+n) &&
			(p.folio == 0 || p.pfn%uint64(p.folio) != 0) {
			switch {
			case c.dstart < 0 && (p.pfn == 0 && c.pfn == 0 || p.pfn == c.pfn+n):
				c.count++
				r.lastPFN = p.pfn
				return
			case p.folio == 0 && p.pfn != 0 && c.pfn != 0:
				// Same page in all but a scattered PFN (4 KiB pages come
				// from anywhere in physical memory): keep the step.
				if c.dstart < 0 {
					c.dstart = int32(len(r.deltas))
					for range c.count - 1 {
						r.deltas = append(r.deltas, 1)
					}
				}
				r.deltas = append(r.deltas, int64(p.pfn-r.lastPFN))
				r.lastPFN = p.pfn
				c.count++
				return
			}
		}
	}
	p.count = 1
	p.dstart = -1
	r.lastPFN = p.pfn
	r.runs = append(r.runs, *p)
}

// emit turns the runs into PageRun messages: one slab and one slice of
// pointers per result, which the caller owns.
func (r *Resolver) emit() []*stratav1.PageRun {
	slab := make([]stratav1.PageRun, len(r.runs))
	out := make([]*stratav1.PageRun, len(r.runs))
	var deltas []int64
	if len(r.deltas) > 0 {
		deltas = slices.Clone(r.deltas)
	}
	for i := range r.runs {
		x := &r.runs[i]
		m := &slab[i]
		m.Vaddr, m.Count, m.State, m.Pfn = x.vaddr, x.count, x.state, x.pfn
		m.Kpageflags, m.FolioPages, m.Kpagecount, m.NumaNode = x.flags, x.folio, x.kcount, x.node
		m.SwapType, m.SwapOffset = x.swapType, x.swapOff
		if x.dstart >= 0 {
			m.PfnDeltas = deltas[x.dstart : int(x.dstart)+int(x.count)-1 : int(x.dstart)+int(x.count)-1]
		}
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
