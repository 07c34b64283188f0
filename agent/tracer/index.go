package tracer

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// Address-index geometry, equal to the STRATA_* constants in bpf/strata.h
// (TestHeaderConstants checks them).
const (
	bucketShift  = 21
	granuleShift = 16
	pageShift    = 12
	rangeSlots   = 8
	fences       = 17
	levelBucket  = 0
	levelGranule = 1
	cellSplit    = 1
	cellRun      = 2
	pidWords     = 4194304 / 64
	maxUserAddr  = 1 << 56 // x86-64 user space with 5-level paging (4-level: 1<<47)
)

// mergeAt is the block count at which a split bucket, or a granule with a
// run, lists its blocks itself again. Below rangeSlots, so that a cell at
// the limit (a GC moving one of nine small blocks) is not rewritten both
// ways at every change.
const mergeAt = rangeSlots / 2

// rangeStore is the kernel's cells and runs maps as the index sees them;
// tests pass a map-backed fake.
type rangeStore interface {
	put(key strataCellKey, val *strataRangeSet) error
	del(key strataCellKey) error
	delMany(keys []strataCellKey) error
	// putRun writes entries at runs[off, off+len(entries)).
	putRun(off uint32, entries []strataBlockRange) error
}

type block struct {
	id, start, end uint64
	slot           uint32
}

// bucket is the index of one 2 MiB bucket: the blocks overlapping it and,
// when more than rangeSlots do, its granules (grans non-nil; the kernel
// entry is then only the STRATA_CELL_SPLIT mark).
type bucket struct {
	blocks   []*block
	grans    map[uint64]*granule
	inKernel bool // its entry was written and not deleted since
}

// granule returns granule g of a split bucket, made empty if it had none.
func (c *bucket) granule(g uint64) *granule {
	gr := c.grans[g]
	if gr == nil {
		gr = &granule{}
		c.grans[g] = gr
	}
	return gr
}

// granule is one 64 KiB granule of a split bucket: the blocks overlapping
// it, sorted by start, and their run when more than rangeSlots do.
type granule struct {
	blocks   []*block
	run      *run
	inKernel bool
}

// run is a granule's segment of the runs array. Entries below hw may have
// been read by a lookup, so they are never written again while the
// segment is in use; appending in place is allowed at hw.
type run struct {
	seg    segment
	listed int // entries the kernel's cell lists now
	hw     int
}

// procIndex mirrors the kernel entries of one TGID so that they can be
// rewritten on change and removed on exit without scanning the kernel map.
//
// A change updates the Go side first and the kernel after, in an order
// that keeps a concurrent lookup correct: run entries are written before
// the cell that lists them, granules before their bucket is flagged split,
// and a bucket or granule lists its blocks again before what was below it
// goes (run segments wait for a grace period before reuse, see runPool).
// A failed write is undone by rebuilding the block's buckets (resync).
type procIndex struct {
	tgid    uint32
	runs    *runPool
	blocks  map[uint64]*block
	buckets map[uint64]*bucket
	cells   int // entries in the kernel's cells map
}

func newProcIndex(tgid uint32, runs *runPool) *procIndex {
	return &procIndex{tgid: tgid, runs: runs, blocks: map[uint64]*block{}, buckets: map[uint64]*bucket{}}
}

func overlaps(a, b *block) bool { return a.start < b.end && b.start < a.end }

func bucketsOf(b *block) (first, last uint64) {
	return b.start >> bucketShift, (b.end - 1) >> bucketShift
}

// granulesIn returns the first and last granule of b inside bucket i.
func granulesIn(i uint64, b *block) (first, last uint64) {
	s, e := max(b.start, i<<bucketShift), min(b.end, (i+1)<<bucketShift)
	return s >> granuleShift, (e - 1) >> granuleShift
}

func (p *procIndex) bucketKey(i uint64) strataCellKey {
	return strataCellKey{Tgid: p.tgid, Level: levelBucket, Index: i}
}

func (p *procIndex) granuleKey(g uint64) strataCellKey {
	return strataCellKey{Tgid: p.tgid, Level: levelGranule, Index: g}
}

// add inserts b and writes the entries it changes. On error nothing of b
// stays in the index.
func (p *procIndex) add(s rangeStore, b *block) error {
	if b.start >= b.end || b.end > maxUserAddr {
		return fmt.Errorf("add block %d [%#x,%#x): %w", b.id, b.start, b.end, ErrBadRange)
	}
	if _, ok := p.blocks[b.id]; ok {
		return fmt.Errorf("add block %d: %w", b.id, ErrBlockExists)
	}
	first, last := bucketsOf(b)
	for i := first; i <= last; i++ {
		if c := p.buckets[i]; c != nil {
			if j := slices.IndexFunc(c.blocks, func(o *block) bool { return overlaps(o, b) }); j >= 0 {
				return fmt.Errorf("add block %d: block %d: %w", b.id, c.blocks[j].id, ErrOverlap)
			}
		}
	}
	p.blocks[b.id] = b
	for i := first; i <= last; i++ {
		if err := p.addToBucket(s, i, b); err != nil {
			delete(p.blocks, b.id)
			return errors.Join(fmt.Errorf("add block %d: %w", b.id, err), p.resync(s, b))
		}
	}
	return nil
}

func (p *procIndex) addToBucket(s rangeStore, i uint64, b *block) error {
	c := p.buckets[i]
	if c == nil {
		c = &bucket{}
		p.buckets[i] = c
	}
	c.blocks = append(c.blocks, b)
	switch {
	case c.grans != nil:
		lo, hi := granulesIn(i, b)
		for g := lo; g <= hi; g++ {
			gr := c.granule(g)
			at, _ := slices.BinarySearchFunc(gr.blocks, b.start, func(o *block, s uint64) int { return cmpU64(o.start, s) })
			gr.blocks = slices.Insert(gr.blocks, at, b)
			if err := p.syncGranule(s, g, gr, at == len(gr.blocks)-1, false); err != nil {
				return err
			}
		}
		return nil
	case len(c.blocks) <= rangeSlots:
		return p.put(s, p.bucketKey(i), &c.inKernel, leafSet(c.blocks))
	}
	return p.split(s, i, c)
}

// split lists the blocks of bucket i per granule: granules first, then the
// bucket's mark.
func (p *procIndex) split(s rangeStore, i uint64, c *bucket) error {
	c.grans = map[uint64]*granule{}
	for _, b := range c.blocks {
		lo, hi := granulesIn(i, b)
		for g := lo; g <= hi; g++ {
			gr := c.granule(g)
			gr.blocks = append(gr.blocks, b)
		}
	}
	for g, gr := range c.grans {
		slices.SortFunc(gr.blocks, func(a, b *block) int { return cmpU64(a.start, b.start) })
		if err := p.syncGranule(s, g, gr, false, false); err != nil {
			return err
		}
	}
	return p.put(s, p.bucketKey(i), &c.inKernel, &strataRangeSet{Flags: cellSplit})
}

// syncGranule makes the kernel entry of granule g list gr.blocks. appended
// says the one change since the last sync added the last block; truncated
// that it removed the last one: then a run is updated in place.
func (p *procIndex) syncGranule(s rangeStore, g uint64, gr *granule, appended, truncated bool) error {
	n := len(gr.blocks)
	switch {
	case n == 0:
		if err := p.del(s, p.granuleKey(g), &gr.inKernel); err != nil {
			return err
		}
		p.dropRun(gr)
		return nil
	case gr.run == nil && n <= rangeSlots, gr.run != nil && n <= mergeAt:
		if err := p.put(s, p.granuleKey(g), &gr.inKernel, leafSet(gr.blocks)); err != nil {
			return err
		}
		p.dropRun(gr)
		return nil
	}
	r := gr.run
	switch {
	case r != nil && appended && r.hw == n-1 && n <= r.seg.cap():
		if err := s.putRun(r.seg.off+uint32(n-1), runEntries(gr.blocks[n-1:])); err != nil {
			return err
		}
		r.hw = n
	case r != nil && truncated && n < r.listed:
		// The first n entries are listed already.
	default:
		seg, err := p.runs.alloc(n)
		if err != nil {
			return err
		}
		if err := s.putRun(seg.off, runEntries(gr.blocks)); err != nil {
			p.runs.release(seg)
			return err
		}
		r = &run{seg: seg, hw: n}
	}
	rs := &strataRangeSet{N: uint32(n), Flags: cellRun}
	ref := runRef(rs)
	ref.Off = r.seg.off
	ref.Fence = fencesOf(g, gr.blocks)
	if err := p.put(s, p.granuleKey(g), &gr.inKernel, rs); err != nil {
		if r != gr.run {
			p.runs.release(r.seg)
		}
		return err
	}
	if r != gr.run {
		p.dropRun(gr) // the old segment waits for a grace period
		gr.run = r
	}
	r.listed = n
	return nil
}

func (p *procIndex) dropRun(gr *granule) {
	if gr.run != nil {
		p.runs.release(gr.run.seg)
		gr.run = nil
	}
}

// runRef is the run_ref of a cell (the union member after n and flags).
func runRef(rs *strataRangeSet) *strataRunRef {
	return (*strataRunRef)(unsafe.Pointer(&rs.Ranges))
}

// fencesOf returns, for each 4 KiB page of granule g, the index of the first
// block of bs (sorted, not overlapping) that ends above the page's start,
// and len(bs) last.
func fencesOf(g uint64, bs []*block) (f [fences]uint32) {
	j := 0
	for pg := 0; pg < fences-1; pg++ {
		at := g<<granuleShift + uint64(pg)<<pageShift
		for j < len(bs) && bs[j].end <= at {
			j++
		}
		f[pg] = uint32(j)
	}
	f[fences-1] = uint32(len(bs))
	return f
}

func runEntries(bs []*block) []strataBlockRange {
	out := make([]strataBlockRange, len(bs))
	for j, b := range bs {
		out[j] = strataBlockRange{Start: b.start, End: b.end, BlockId: b.id, Slot: b.slot}
	}
	return out
}

// remove deletes b from the index and the kernel maps.
func (p *procIndex) remove(s rangeStore, b *block) error {
	delete(p.blocks, b.id)
	first, last := bucketsOf(b)
	for i := first; i <= last; i++ {
		if err := p.removeFromBucket(s, i, b); err != nil {
			return errors.Join(fmt.Errorf("remove block %d: %w", b.id, err), p.resync(s, b))
		}
	}
	return nil
}

func (p *procIndex) removeFromBucket(s rangeStore, i uint64, b *block) error {
	c := p.buckets[i]
	if c == nil {
		return nil
	}
	c.blocks = slices.DeleteFunc(c.blocks, func(o *block) bool { return o == b })
	switch {
	case len(c.blocks) == 0:
		// The bucket first, so that no lookup reaches a granule without it.
		if err := p.del(s, p.bucketKey(i), &c.inKernel); err != nil {
			return err
		}
		if err := p.dropGranules(s, c); err != nil {
			return err
		}
		delete(p.buckets, i)
	case c.grans != nil && len(c.blocks) <= mergeAt:
		if err := p.put(s, p.bucketKey(i), &c.inKernel, leafSet(c.blocks)); err != nil {
			return err
		}
		return p.dropGranules(s, c)
	case c.grans != nil:
		lo, hi := granulesIn(i, b)
		for g := lo; g <= hi; g++ {
			gr := c.grans[g]
			if gr == nil {
				continue
			}
			at := slices.Index(gr.blocks, b)
			if at < 0 {
				continue
			}
			gr.blocks = slices.Delete(gr.blocks, at, at+1)
			if err := p.syncGranule(s, g, gr, false, at == len(gr.blocks)); err != nil {
				return err
			}
			if len(gr.blocks) == 0 {
				delete(c.grans, g)
			}
		}
	default:
		return p.put(s, p.bucketKey(i), &c.inKernel, leafSet(c.blocks))
	}
	return nil
}

// dropGranules deletes the granule entries of c and releases their runs.
func (p *procIndex) dropGranules(s rangeStore, c *bucket) error {
	for g, gr := range c.grans {
		if err := p.del(s, p.granuleKey(g), &gr.inKernel); err != nil {
			return err
		}
		p.dropRun(gr)
		delete(c.grans, g)
	}
	c.grans = nil
	return nil
}

func (p *procIndex) put(s rangeStore, k strataCellKey, inKernel *bool, rs *strataRangeSet) error {
	if err := s.put(k, rs); err != nil {
		return err
	}
	if !*inKernel {
		*inKernel = true
		p.cells++
	}
	return nil
}

func (p *procIndex) del(s rangeStore, k strataCellKey, inKernel *bool) error {
	if !*inKernel {
		return nil
	}
	if err := s.del(k); err != nil {
		return err
	}
	*inKernel = false
	p.cells--
	return nil
}

// resync rebuilds, after a failed write, the buckets that b overlaps from
// the blocks registered now. Their kernel entries are deleted first (faults
// there go unmatched meanwhile, never to a wrong block), then written
// afresh; when a write fails again the bucket stays unmatched until its
// next change.
func (p *procIndex) resync(s rangeStore, b *block) error {
	first, last := bucketsOf(b)
	var errs []error
	for i := first; i <= last; i++ {
		c := p.buckets[i]
		if c == nil {
			continue
		}
		if err := p.del(s, p.bucketKey(i), &c.inKernel); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.dropGranules(s, c); err != nil {
			errs = append(errs, err)
			continue
		}
		c.blocks = slices.DeleteFunc(c.blocks, func(o *block) bool { return p.blocks[o.id] != o })
		switch {
		case len(c.blocks) == 0:
			delete(p.buckets, i)
		case len(c.blocks) <= rangeSlots:
			errs = append(errs, p.put(s, p.bucketKey(i), &c.inKernel, leafSet(c.blocks)))
		default:
			errs = append(errs, p.split(s, i, c))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resync index: %w", err)
	}
	return nil
}

// clear removes every kernel entry of the TGID and releases its runs.
func (p *procIndex) clear(s rangeStore) error {
	keys := make([]strataCellKey, 0, p.cells)
	for i, c := range p.buckets {
		if c.inKernel {
			keys = append(keys, p.bucketKey(i))
		}
		for g, gr := range c.grans {
			if gr.inKernel {
				keys = append(keys, p.granuleKey(g))
			}
			p.dropRun(gr)
		}
	}
	p.blocks = map[uint64]*block{}
	p.buckets = map[uint64]*bucket{}
	p.cells = 0
	return s.delMany(keys)
}

// leafSet is the kernel entry of a cell listing blocks (at most rangeSlots),
// sorted by start.
func leafSet(blocks []*block) *strataRangeSet {
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b *block) int { return cmpU64(a.start, b.start) })
	rs := &strataRangeSet{N: uint32(len(bs))}
	for j, b := range bs {
		rs.Ranges[j] = strataBlockRange{Start: b.start, End: b.end, BlockId: b.id, Slot: b.slot}
	}
	return rs
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
