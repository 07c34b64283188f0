package resolver

import (
	"errors"

	"github.com/stratatrace/strata/agent/procmem"
)

// pmdPages is the number of base pages one PMD maps (2 MiB of 4 KiB pages).
const pmdPages = 512

// maxFolioPages bounds the folios told from kpageflags compound bits: a PMD
// folio. Larger (hugetlb 1 GiB) folios keep their compound bits.
const maxFolioPages = 512

// findPMDs is step 3's scan: it finds the PMD-mapped folios of the chunk,
// whose kpageflags are the folio's, so that one entry, the head's, stands
// for all their pages. A candidate is a PMD group whose first and last
// pages in the chunk have PFNs that fit a head aligned to the PMD size, as
// every page of a PMD map does; PAGEMAP_SCAN (Linux 6.7+) says which
// candidates the kernel maps with one PMD, with one ioctl per run of
// adjacent candidates, and a group it confirms must then have consecutive
// PFNs throughout. 4 KiB pages are almost never candidates, so they cost
// no ioctl. It sets c.blk and c.heads.
func (r *Resolver) findPMDs(pm *procmem.Pagemap, c *chunk) error {
	if r.noScan || !c.candidates() {
		c.blk, c.heads = c.blk[:0], c.heads[:0]
		return nil
	}
	huge := c.huge[:0]
	for _, s := range c.cand {
		var err error
		huge, err = pm.HugeRanges(huge, s.Start, s.End)
		if errors.Is(err, procmem.ErrScanUnsupported) {
			r.noScan = true
			c.blk, c.heads = c.blk[:0], c.heads[:0]
			return nil
		}
		if err != nil {
			return err
		}
	}
	c.huge = huge
	c.confirm()
	return nil
}

// candidates fills c.blk with an index into c.heads for each candidate PMD
// group, -1 for the others, and c.cand with the address ranges of runs of
// adjacent candidates. It reports whether there is any.
func (c *chunk) candidates() bool {
	blk := grow(&c.blk, int((c.addr(c.n-1)>>c.pmdShift)-c.g0+1))
	cand, heads := c.cand[:0], c.heads[:0]
	for i, g := 0, 0; i < c.n; g++ {
		j := c.groupEnd(i)
		blk[g] = -1
		if head, ok := c.pmdHead(i, j, false); ok {
			blk[g] = int32(len(heads))
			heads = append(heads, head)
			if k := len(cand) - 1; k >= 0 && cand[k].End == c.addr(i) {
				cand[k].End = c.addr(j)
			} else {
				cand = append(cand, procmem.Range{Start: c.addr(i), End: c.addr(j)})
			}
		}
		i = j
	}
	c.cand, c.heads = cand, heads
	return len(cand) > 0
}

// confirm keeps the candidates that c.huge, the scan's answer, confirms and
// whose PFNs are consecutive throughout, renumbered in order: in place,
// since a kept head moves to an index no higher than its own.
func (c *chunk) confirm() {
	blk, heads, huge := c.blk, c.heads, c.huge
	c.heads = heads[:0]
	h := 0
	for g := range blk {
		k := blk[g]
		if k < 0 {
			continue
		}
		blk[g] = -1
		v := (c.g0 + uint64(g)) << c.pmdShift
		for h < len(huge) && huge[h].End <= v {
			h++
		}
		if h == len(huge) || huge[h].Start >= v+1<<c.pmdShift {
			continue
		}
		i0 := int((max(v, c.base) - c.base) / c.ps)
		if _, ok := c.pmdHead(i0, c.groupEnd(i0), true); ok {
			blk[g] = int32(len(c.heads))
			c.heads = append(c.heads, heads[k])
		}
	}
	if len(c.heads) == 0 {
		c.blk = c.blk[:0]
	}
}

// pmdHead returns the head PFN of the PMD map that pages [i, j) of one PMD
// group would be part of: ok when the first and the last, or with all every
// one, are present with the PFNs of consecutive pages from a head aligned
// to the PMD size.
func (c *chunk) pmdHead(i, j int, all bool) (uint64, bool) {
	first := c.ents[i].PFN()
	off := (c.addr(i) >> (c.pmdShift - 9)) % pmdPages // page's index in its group
	if first == 0 || (first-off)%pmdPages != 0 || c.ents[j-1].PFN() != first+uint64(j-1-i) {
		return 0, false
	}
	for k := i + 1; all && k < j-1; k++ {
		if c.ents[k].PFN() != first+uint64(k-i) {
			return 0, false
		}
	}
	return first - off, true
}

// checkHeads verifies that every head read for a PMD group is a compound
// head of a THP or hugetlb folio; a group that fails is read page by page.
func (c *chunk) checkHeads(kp *procmem.KPages) error {
	for k := range c.heads {
		f := c.flags[c.n+k]
		if f&kpfCompound == kpfHead && f&(kpfTHP|kpfHuge) != 0 {
			continue
		}
		for i := 0; i < c.n; i = c.groupEnd(i) {
			if c.blockOf(i) != int32(k) {
				continue
			}
			j := c.groupEnd(i)
			c.blk[c.addr(i)>>c.pmdShift-c.g0] = -1
			if err := kp.ReadFlags(c.flags[i:j], c.ents[i].PFN()); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// folioPages returns the size in pages of the compound folio holding page i
// of the chunk, or 0 when it cannot be told. Folios are naturally aligned
// runs of PFNs: a head, then tails. The chunk's own flags usually answer (a
// head followed by its tails); otherwise one pread of the aligned 512-PFN
// window around the page does. The last folio found is remembered in
// r.out, for its other pages.
func (r *Resolver) folioPages(c *chunk, i int) uint32 {
	pfn := c.ents[i].PFN()
	f := &r.out
	if f.folioN > 0 && pfn >= f.folioHead && pfn < f.folioHead+f.folioN {
		return uint32(f.folioN)
	}
	if c.flags[i]&kpfHead != 0 {
		n := uint64(1)
		for j := i + 1; j < c.flagsEnd && n < maxFolioPages; j++ {
			if c.ents[j].PFN() != pfn+n {
				break // the folio continues unseen or not at all: ask kpageflags
			}
			if c.flags[j]&kpfCompound != kpfTail {
				return f.cacheFolio(pfn, n)
			}
			n++
		}
		if n == maxFolioPages {
			return f.cacheFolio(pfn, n)
		}
	}
	base := pfn &^ (maxFolioPages - 1)
	w := grow(&c.window, maxFolioPages)
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
	return f.cacheFolio(base+h, n)
}
