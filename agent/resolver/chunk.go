package resolver

import (
	"github.com/stratatrace/strata/agent/procmem"
)

// chunk is the cursor over one chunk of a range: which pages it holds, what
// steps 1 to 5 have read about them, and the scratch those steps reuse from
// chunk to chunk. Page i of the chunk is at base + i*ps, 0 <= i < n.
type chunk struct {
	ps       uint64 // base page size
	pmdShift uint   // log2 of the bytes one PMD maps

	base uint64 // address of page 0
	g0   uint64 // PMD group of page 0: base >> pmdShift
	n    int
	pid  int
	live bool // pid is in the running system's /proc (move_pages reaches it)
	// want lists the pages asked for, ascending and disjoint, when a chunk
	// reads several requests of a batch together (gathered); nil when
	// every page is. Pages between them are read from pagemap only.
	want []pageSpan
	// flagsEnd bounds the pages after one being folded whose flags were
	// read: the end of the chunk, or of the gathered request being folded.
	flagsEnd int

	// Step 1.
	ents []procmem.Entry

	// Step 3: PMD-mapped folios, one head standing for each.
	blk   []int32  // per PMD group of the chunk: index into heads, or -1
	heads []uint64 // head PFN of each PMD-mapped folio
	cand  []procmem.Range
	huge  []procmem.Range

	// Steps 2 and 4: spans read from kpageflags (entries of the pages at
	// their index, then of head k at n+k) and kpagecount.
	spans, cspans []procmem.Span
	flags, counts []uint64
	flagsOK       bool // flags and counts hold what the kernel said
	flagsSkipped  bool // the caller did not ask for flags (FLAGS_NOT_READ)

	// Step 5: the entries of pages [againLo, againLo+len(again)) read
	// again after the flags, one piece of the chunk at a time.
	again     []procmem.Entry
	againLo   int
	rechecked bool

	// Step 6: nodes of the PFN-hidden pages, and kpageflags around a folio
	// whose head is not in the chunk.
	hidden hiddenNodes
	window []uint64
}

// pageSpan is pages [lo, hi) of a chunk.
type pageSpan struct{ lo, hi int }

// hiddenNodes are the NUMA nodes of a chunk's PFN-hidden pages, indexed
// like its entries, asked on the first such page.
type hiddenNodes struct {
	nodes     []int32
	addrs     []uintptr
	status    []int32
	asked, ok bool
}

// grow returns (*s)[:n], reallocating when the capacity is short.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return *s
}

// reset points the cursor at the n pages of pid from base and forgets what
// was read about the last chunk.
func (c *chunk) reset(pid int, live bool, base uint64, n int) {
	c.pid, c.live = pid, live
	c.base, c.g0, c.n = base, base>>c.pmdShift, n
	c.want, c.flagsEnd = nil, n
	c.blk, c.heads = c.blk[:0], c.heads[:0]
	c.spans, c.cspans = c.spans[:0], c.cspans[:0]
	c.flagsOK, c.flagsSkipped, c.rechecked = false, false, false
	c.hidden.asked, c.hidden.ok = false, false
}

// addr is the address of page i.
func (c *chunk) addr(i int) uint64 { return c.base + uint64(i)*c.ps }

// groupEnd is the index of the first page after the PMD group holding page i.
func (c *chunk) groupEnd(i int) int {
	next := (c.addr(i)>>c.pmdShift + 1) << c.pmdShift
	return min(c.n, int((next-c.base)/c.ps))
}

// blockOf returns the index in heads of the PMD head standing for page i,
// or -1.
func (c *chunk) blockOf(i int) int32 {
	if len(c.blk) == 0 {
		return -1
	}
	return c.blk[c.addr(i)>>c.pmdShift-c.g0]
}

// readPagemap is step 1: one pread of the chunk's pagemap entries.
func (c *chunk) readPagemap(pm *procmem.Pagemap) error {
	return pm.Read(grow(&c.ents, c.n), c.base)
}

// buildSpans is step 2: the present pages asked for, in virtual order,
// grouped into spans of consecutive PFNs for kpageflags, with one span per
// PMD-mapped folio's head in place of its pages; and, for kpagecount, the
// spans of the pages pagemap does not call exclusive (bit 56 is set
// exactly when the page's precise mapcount, which kpagecount reports, is
// 1), or of every page with allCounts.
func (c *chunk) buildSpans(allCounts bool) {
	spans, cspans := c.spans[:0], c.cspans[:0]
	want := c.want
	if want == nil {
		want = []pageSpan{{0, c.n}}
	}
	for _, w := range want {
		spans, cspans = c.spansOf(w, allCounts, spans, cspans)
	}
	for k, h := range c.heads {
		spans = append(spans, procmem.Span{PFN: h, N: 1, Out: uint32(c.n + k)})
	}
	c.spans, c.cspans = spans, cspans
}

// spansOf appends the spans of pages w to spans and cspans.
func (c *chunk) spansOf(w pageSpan, allCounts bool, spans, cspans []procmem.Span) ([]procmem.Span, []procmem.Span) {
	prev, cprev := ^uint64(0), ^uint64(0)
	for i := w.lo; i < w.hi; {
		end, folio := w.hi, false
		if len(c.heads) > 0 {
			end, folio = min(c.groupEnd(i), w.hi), c.blockOf(i) >= 0
		}
		for ; i < end; i++ {
			e := c.ents[i]
			if folio && e.Exclusive() && !allCounts {
				cprev = ^uint64(0)
				continue // the head stands for its flags, and the count is 1
			}
			pfn := e.PFN()
			if pfn == 0 {
				prev, cprev = ^uint64(0), ^uint64(0)
				continue
			}
			if !folio {
				if pfn == prev+1 {
					spans[len(spans)-1].N++
				} else {
					spans = append(spans, procmem.Span{PFN: pfn, N: 1, Out: uint32(i)})
				}
				prev = pfn
			}
			if e.Exclusive() && !allCounts {
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
		prev, cprev = ^uint64(0), ^uint64(0)
	}
	return spans, cspans
}

// pieceShift is log2 of the pages of a piece: steps 5 and 6 run one piece
// of the chunk at a time, so that the recheck's entries take 64 KiB and are
// still in the cache when the fold compares them. Pieces are aligned to
// their size in the address space, so a PMD group never straddles two.
const pieceShift = 13

// pieceEnd is the index of the first page after the piece holding page i.
func (c *chunk) pieceEnd(i int) int {
	shift := c.pmdShift - 9 + pieceShift
	next := (c.addr(i)>>shift + 1) << shift
	return min(c.n, int((next-c.base)/c.ps))
}

// recheck is step 5: pagemap read again for pages [lo, hi), so that fold
// can tell which pages changed while their flags were read.
func (c *chunk) recheck(pm *procmem.Pagemap, lo, hi int) error {
	if err := pm.Read(grow(&c.again, hi-lo), c.addr(lo)); err != nil {
		return err
	}
	c.againLo, c.rechecked = lo, true
	return nil
}

// changed reports whether the recheck saw page i with another PFN.
func (c *chunk) changed(i int) bool {
	if !c.rechecked {
		return false
	}
	a := c.again[i-c.againLo]
	return a != c.ents[i] && a.PFN() != c.ents[i].PFN()
}

// same reports whether the recheck saw page i exactly as the first read.
func (c *chunk) same(i int) bool {
	return !c.rechecked || c.again[i-c.againLo] == c.ents[i]
}

// nodesOfHidden asks move_pages(2), which needs no CAP_SYS_ADMIN, for the
// NUMA node of every present page whose PFN the kernel hid, so that an
// unprivileged agent still places pages on nodes. The syscall reaches the
// running kernel, so it is used only when the FS is the live /proc. When
// it fails the nodes stay unknown (-1).
func (c *chunk) nodesOfHidden() {
	h := &c.hidden
	h.asked = true
	addrs := h.addrs[:0]
	for i, e := range c.ents {
		if e.Hidden() {
			addrs = append(addrs, uintptr(c.addr(i)))
		}
	}
	h.addrs = addrs
	if len(addrs) == 0 || !c.live {
		return
	}
	status := grow(&h.status, len(addrs))
	if procmem.MovePagesNodes(c.pid, addrs, status) != nil {
		return
	}
	nodes := grow(&h.nodes, c.n)
	k := 0
	for i, e := range c.ents {
		nodes[i] = -1
		if e.Hidden() {
			nodes[i] = max(status[k], -1)
			k++
		}
	}
	h.ok = true
}

// hiddenNode is the node of PFN-hidden page i, -1 when unknown.
func (c *chunk) hiddenNode(i int) int32 {
	if !c.hidden.asked {
		c.nodesOfHidden()
	}
	if !c.hidden.ok {
		return -1
	}
	return c.hidden.nodes[i]
}
