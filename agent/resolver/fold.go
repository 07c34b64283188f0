package resolver

import (
	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Page state bits, as the PageRun state field carries them, and the
// kpageflags bits the fold reads.
const (
	stPresent    = uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	stSwapped    = uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	stExclusive  = uint32(stratav1.PageState_PAGE_STATE_EXCLUSIVE)
	stFileShared = uint32(stratav1.PageState_PAGE_STATE_FILE_SHARED)
	stSoftDirty  = uint32(stratav1.PageState_PAGE_STATE_SOFT_DIRTY)
	stTHP        = uint32(stratav1.PageState_PAGE_STATE_THP)
	stUnmapped   = uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
	stHidden     = uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
	stFlagsUnkn  = uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
	stNotRead    = uint32(stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ)
	stRaced      = uint32(stratav1.PageState_PAGE_STATE_RACED)
	stCrossNode  = uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE)
	stHugeTLB    = uint32(stratav1.PageState_PAGE_STATE_HUGETLB)
	kpfHead      = uint64(1) << procmem.KPFCompoundHead
	kpfTail      = uint64(1) << procmem.KPFCompoundTail
	kpfCompound  = kpfHead | kpfTail
	kpfTHP       = uint64(1) << procmem.KPFTHP
	kpfHuge      = uint64(1) << procmem.KPFHuge
	kpfFreed     = uint64(1)<<procmem.KPFNoPage | uint64(1)<<procmem.KPFBuddy
	kpfAnonMmap  = uint64(1)<<procmem.KPFAnon | uint64(1)<<procmem.KPFMmap
	kpfZero      = uint64(1) << procmem.KPFZeroPage
)

// entryState is the package's one reading of a pagemap entry: the
// PageState bits the entry alone decides.
func entryState(e procmem.Entry) uint32 {
	var s uint32
	switch {
	case e.Hidden():
		s = stPresent | stHidden | stFlagsUnkn
	case e.Present():
		s = stPresent
	case e.Swapped():
		s = stSwapped
	}
	if e.Exclusive() {
		s |= stExclusive
	}
	if e.FileShared() {
		s |= stFileShared
	}
	if e.SoftDirty() {
		s |= stSoftDirty
	}
	return s
}

// crossNode is CROSS_NODE when the page's node is known and not the
// accessing CPU's.
func crossNode(node, cpuNode int32) uint32 {
	if cpuNode >= 0 && node >= 0 && node != cpuNode {
		return stCrossNode
	}
	return 0
}

// fold is step 6: it turns pages [lo, hi) of c into runs, appended to
// r.out.
func (r *Resolver) fold(c *chunk, lo, hi int, cpuNode int32, vmas *vmaCursor, res *Result) error {
	for i := lo; i < hi; i++ {
		e := c.ents[i]
		p := run{vaddr: c.addr(i), node: -1, state: entryState(e)}
		switch {
		case e.Present():
			res.Present++
			if err := r.present(c, i, cpuNode, vmas, &p, res); err != nil {
				return err
			}
		case e.Swapped():
			res.Swapped++
			p.swapType, p.swapOff = e.SwapType(), e.SwapOffset()
		default:
			_, in, err := vmas.at(p.vaddr)
			if err != nil {
				return err
			}
			if !in {
				p.state |= stUnmapped
				res.Unmapped++
			}
		}
		res.Pages++
		r.out.add(&p)
		switch {
		case p.state&stRaced != 0:
		case c.blockOf(i) >= 0:
			i = r.extendPMD(c, i, hi, &p, res)
		case p.pfn != 0 && p.folio == 0 && p.flags&kpfCompound == 0:
			i = r.extendRun(c, i, hi, &p, res)
		}
	}
	return nil
}

// extendRun adds to the run of page i, a present page with no compound
// flags, the pages before hi that follow it with everything but the PFN
// the same: entry bits, node, and, when read, flags and count. It is the
// fold's fast path for 4 KiB pages: a few comparisons per page and no run
// built for each. It returns the index of the last page added.
func (r *Resolver) extendRun(c *chunk, i, hi int, p *run, res *Result) int {
	st := c.ents[i].Status()
	count := !c.ents[i].Exclusive() || r.opts.ReadAllCounts
	m := i + 1
	for ; m < hi; m++ {
		e := c.ents[m]
		pfn := e.PFN()
		if e.Status() != st || pfn == 0 || r.nodes.Node(pfn) != p.node || c.blockOf(m) >= 0 {
			break
		}
		if c.flagsOK && (c.flags[m] != p.flags || count && c.counts[m] != p.kcount || c.changed(m)) {
			break
		}
	}
	extra := uint64(r.out.extend(c.ents[i+1 : m]))
	res.Pages += extra
	res.Present += extra
	if p.state&stTHP != 0 {
		res.THP += extra
	}
	return i + int(extra)
}

// midReuse reports a private anonymous page whose kpageflags say it is not
// a mapped anonymous page (see present).
func midReuse(e procmem.Entry, flags uint64) bool {
	return !e.FileShared() && flags&(kpfZero|kpfHuge) == 0 && flags&kpfAnonMmap != kpfAnonMmap
}

// present fills in present page i: node, flags, count, folio, and whether
// it raced.
func (r *Resolver) present(c *chunk, i int, cpuNode int32, vmas *vmaCursor, p *run, res *Result) error {
	e := c.ents[i]
	if e.Hidden() {
		res.Hidden++
		p.node = c.hiddenNode(i)
		p.state |= crossNode(p.node, cpuNode)
		return nil
	}
	p.pfn = e.PFN()
	p.node = r.nodes.Node(p.pfn)
	p.state |= crossNode(p.node, cpuNode)
	k := c.blockOf(i)
	if !c.flagsOK {
		p.state |= stFlagsUnkn
		if c.flagsSkipped {
			p.state |= stNotRead
		}
		if k >= 0 {
			return pmdWithoutFlags(c, vmas, p, res)
		}
		return nil
	}
	p.kcount = 1
	if !e.Exclusive() || r.opts.ReadAllCounts {
		p.kcount = c.counts[i]
	}
	if k >= 0 {
		p.flags = c.flags[c.n+int(k)]
	} else {
		p.flags = c.flags[i]
	}
	// A mapped page never has no flags at all: 0 is a page caught between
	// being freed and mapped again (the same PFN can come back at the same
	// address, so the pagemap re-read alone cannot see it). Likewise a
	// private anonymous page (pagemap bit 61 clear) that is mapped reads
	// ANON and MMAP, unless it is the shared zero page or a hugetlb page:
	// without them it was caught between its unmap and its reuse.
	if p.flags&kpfFreed != 0 || p.flags == 0 || c.changed(i) || midReuse(e, p.flags) {
		p.state |= stRaced
		res.Raced++
		return nil
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
		if fp := r.folioPages(c, i); fp > 1 {
			p.folio = fp
			p.flags &^= kpfCompound
		}
	}
	return nil
}

// pmdWithoutFlags fills in the first page of a PMD map in a chunk read
// without flags: a folio of 512 pages, THP or HUGETLB as its mapping's page
// size says (neither when the kernel cannot say).
func pmdWithoutFlags(c *chunk, vmas *vmaCursor, p *run, res *Result) error {
	p.folio = pmdPages
	v, in, err := vmas.at(p.vaddr)
	switch {
	case err != nil:
		return err
	case in && v.PageSize == c.ps:
		p.state |= stTHP
		res.THP++
	case in && v.PageSize > c.ps:
		p.state |= stHugeTLB
		p.folio = uint32(min(v.PageSize/c.ps, 1<<31))
	}
	return nil
}

// extendPMD adds to the run of page i, the first of a PMD-mapped folio in
// the chunk, the rest of the folio's pages before hi that share all but
// their PFN with it: the same entry plus the page offset, so one comparison
// per page. It returns the index of the last page added.
func (r *Resolver) extendPMD(c *chunk, i, hi int, p *run, res *Result) int {
	e := c.ents[i]
	sameCount := !c.flagsOK || p.kcount == 1 && e.Exclusive() && !r.opts.ReadAllCounts
	m, end := i+1, min(c.groupEnd(i), hi)
	for m < end && c.ents[m] == e+procmem.Entry(m-i) && c.same(m) &&
		(sameCount || c.counts[m] == p.kcount) {
		m++
	}
	extra := uint64(m - i - 1)
	if extra == 0 || r.nodes.Node(p.pfn+extra) != p.node {
		return i
	}
	r.out.list[len(r.out.list)-1].count += uint32(extra)
	res.Pages += extra
	res.Present += extra
	if p.state&stTHP != 0 {
		res.THP += extra
	}
	return m - 1
}

// vmaCursor answers, for addresses met in rising order within a chunk,
// which mapping holds them, with one maps lookup per mapping crossed. Only
// pages that are neither present nor swapped, and PMD maps without flags,
// ask, so the maps file is opened on the first question of a batch.
type vmaCursor struct {
	maps      **procmem.MapsFile // the batch's
	fs        procmem.FS
	pid       int
	vma       procmem.VMA
	ok, known bool
}

// at returns the mapping at or above addr, and whether it holds addr.
func (v *vmaCursor) at(addr uint64) (procmem.VMA, bool, error) {
	if !v.known || v.ok && addr >= v.vma.End {
		if *v.maps == nil {
			m, err := v.fs.OpenMaps(v.pid)
			if err != nil {
				return procmem.VMA{}, false, err
			}
			*v.maps = m
		}
		var err error
		if v.vma, v.ok, err = (*v.maps).VMAAt(addr); err != nil {
			return procmem.VMA{}, false, err
		}
		v.known = true
	}
	return v.vma, v.ok && addr >= v.vma.Start, nil
}

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
	steps    stratav1.PFNRun // where its PFN steps are in runs.steps
}

// runs are the runs of one request, built page by page.
type runs struct {
	ps    uint64
	list  []run
	steps stratav1.PFNSteps // PFN steps of the runs that need them
	// The last compound folio found, [folioHead, folioHead+folioN).
	folioHead, folioN uint64
}

func (b *runs) reset() {
	b.list, b.folioN = b.list[:0], 0
	b.steps.Reset()
}

// add appends page p to the last run when it continues it, else starts a
// run. A compound run never crosses a folio boundary.
func (b *runs) add(p *run) {
	if k := len(b.list); k > 0 {
		c := &b.list[k-1]
		n := uint64(c.count)
		if c.state == p.state && c.flags == p.flags && c.kcount == p.kcount &&
			c.node == p.node && c.folio == p.folio && c.swapType == p.swapType &&
			c.vaddr+n*b.ps == p.vaddr && c.count < 1<<31 &&
			(p.state&stSwapped == 0 || p.swapOff == c.swapOff+n) &&
			(p.folio == 0 || p.pfn%uint64(p.folio) != 0) {
			switch {
			case p.pfn == 0 && c.pfn == 0:
				c.count++
				return
			case p.pfn != 0 && c.pfn != 0 && (p.folio == 0 || c.steps.Consecutive() && p.pfn == c.pfn+n):
				// A folio's pages are consecutive; others may step.
				b.steps.Add(&c.steps, c.pfn, c.count, p.pfn)
				c.count++
				return
			}
		}
	}
	p.count = 1
	p.steps = stratav1.PFNRun{}
	b.list = append(b.list, *p)
}

// extend adds to the last run the present pages whose entries are ents,
// pages that follow it and share all but their PFN with its pages. A PFN
// that does not follow the one before is kept as a step (4 KiB pages come
// from anywhere in physical memory). It returns how many pages it added:
// fewer than len(ents) when the run is full.
func (b *runs) extend(ents []procmem.Entry) int {
	c := &b.list[len(b.list)-1]
	n := min(len(ents), int(1<<31-c.count))
	for _, e := range ents[:n] {
		b.steps.Add(&c.steps, c.pfn, c.count, e.PFN())
		c.count++
	}
	return n
}

// emit turns the runs into PageRun messages: one slab and one slice of
// pointers per result, which the caller owns.
func (b *runs) emit() []*stratav1.PageRun {
	slab := make([]stratav1.PageRun, len(b.list))
	out := make([]*stratav1.PageRun, len(b.list))
	steps := b.steps.Copy()
	for i := range b.list {
		x := &b.list[i]
		m := &slab[i]
		m.Vaddr, m.Count, m.State, m.Pfn = x.vaddr, x.count, x.state, x.pfn
		m.Kpageflags, m.FolioPages, m.Kpagecount, m.NumaNode = x.flags, x.folio, x.kcount, x.node
		m.SwapType, m.SwapOffset = x.swapType, x.swapOff
		m.PfnDeltas = x.steps.Deltas(steps, x.count)
		out[i] = m
	}
	return out
}

// cacheFolio remembers the folio [head, head+n) when its shape allows the
// PageRun expansion rule (head where PFN % folio_pages == 0).
func (b *runs) cacheFolio(head, n uint64) uint32 {
	if n < 2 || n&(n-1) != 0 || head%n != 0 {
		return 0
	}
	b.folioHead, b.folioN = head, n
	return uint32(n)
}
