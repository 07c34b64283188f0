package tracer

import (
	"cmp"
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

// maxWeakBytes bounds the bytes of one block's weak ranges, so that ranges
// a hook made up cannot make the index list a range in millions of
// buckets: 256 GiB, 131,072 buckets.
const maxWeakBytes = 256 << 30

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

// block is one range of the index: a block's registered range (strong), or
// one of its weak ranges, which count into the same slot.
type block struct {
	id, start, end uint64
	slot           uint32
	weak           bool
}

// bucket is the index of one 2 MiB bucket: the ranges overlapping it and,
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

// granule is one 64 KiB granule of a split bucket: the ranges overlapping
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
// The ranges it lists never overlap: a block's registered range (strong)
// is refused where another strong range lies and takes the pages of weak
// ranges; a weak range is cut to the pages no other range holds.
//
// A change updates the Go side first and the kernel after, in an order
// that keeps a concurrent lookup correct: run entries are written before
// the cell that lists them, granules before their bucket is flagged split,
// a bucket or granule lists its ranges again before what was below it
// goes (run segments wait for a grace period before reuse, see runPool),
// and a range leaves the index before another takes its pages. A failed
// write is undone by rebuilding the buckets it touched (resync).
type procIndex struct {
	tgid   uint32
	runs   *runPool
	blocks map[uint64]*block   // strong ranges by block id
	weak   map[uint64][]*block // weak ranges by block id, sorted by start
	weakN  int                 // ranges in weak
	// weakLost counts the parts of weak ranges that a strong range cut and
	// that could not be listed again (no room in the index).
	weakLost int
	buckets  map[uint64]*bucket
	cells    int // entries in the kernel's cells map
}

func newProcIndex(tgid uint32, runs *runPool) *procIndex {
	return &procIndex{tgid: tgid, runs: runs, blocks: map[uint64]*block{}, weak: map[uint64][]*block{}, buckets: map[uint64]*bucket{}}
}

func overlaps(a, b *block) bool { return a.start < b.end && b.start < a.end }

func bucketsOf(b *block) (first, last uint64) {
	return b.start >> bucketShift, (b.end - 1) >> bucketShift
}

// granulesIn returns the first and last granule of [start, end) inside
// bucket i.
func granulesIn(i, start, end uint64) (first, last uint64) {
	s, e := max(start, i<<bucketShift), min(end, (i+1)<<bucketShift)
	return s >> granuleShift, (e - 1) >> granuleShift
}

func (p *procIndex) bucketKey(i uint64) strataCellKey {
	return strataCellKey{Tgid: p.tgid, Level: levelBucket, Index: i}
}

func (p *procIndex) granuleKey(g uint64) strataCellKey {
	return strataCellKey{Tgid: p.tgid, Level: levelGranule, Index: g}
}

// overlapping calls fn once for every listed range that overlaps [start,
// end), in no particular order.
func (p *procIndex) overlapping(start, end uint64, fn func(*block)) {
	for i := start >> bucketShift; i <= (end-1)>>bucketShift; i++ {
		c := p.buckets[i]
		if c == nil {
			continue
		}
		// A range is visited in the bucket (granule) where its overlap
		// with [start, end) begins, so once.
		if c.grans == nil {
			for _, o := range c.blocks {
				if o.start < end && start < o.end && max(o.start, start)>>bucketShift == i {
					fn(o)
				}
			}
			continue
		}
		lo, hi := granulesIn(i, start, end)
		for g := lo; g <= hi; g++ {
			gr := c.grans[g]
			if gr == nil {
				continue
			}
			// Sorted and disjoint: ends ascend with starts.
			j, _ := slices.BinarySearchFunc(gr.blocks, start, func(o *block, a uint64) int {
				if o.end <= a {
					return -1
				}
				return 1
			})
			for ; j < len(gr.blocks) && gr.blocks[j].start < end; j++ {
				if o := gr.blocks[j]; max(o.start, start)>>granuleShift == g {
					fn(o)
				}
			}
		}
	}
}

// add lists b, a block's strong range, and writes the entries it changes.
// Weak ranges in its way give way: they leave the index, and their parts
// outside b come back (as far as the index has room). On error nothing of
// b stays in the index.
func (p *procIndex) add(s rangeStore, b *block) error {
	if b.start >= b.end || b.end > maxUserAddr {
		return fmt.Errorf("add block %d [%#x,%#x): %w", b.id, b.start, b.end, ErrBadRange)
	}
	if _, ok := p.blocks[b.id]; ok {
		return fmt.Errorf("add block %d: %w", b.id, ErrBlockExists)
	}
	var clash *block
	var weak []*block
	p.overlapping(b.start, b.end, func(o *block) {
		switch {
		case o.weak:
			weak = append(weak, o)
		case clash == nil:
			clash = o
		}
	})
	if clash != nil {
		return fmt.Errorf("add block %d: block %d: %w", b.id, clash.id, ErrOverlap)
	}
	if err := p.dropWeak(s, weak); err != nil {
		return fmt.Errorf("add block %d: %w", b.id, err)
	}
	p.blocks[b.id] = b
	if err := p.insert(s, []*block{b}); err != nil {
		return fmt.Errorf("add block %d: %w", b.id, err)
	}
	var rest []*block
	for _, w := range weak {
		if w.start < b.start {
			rest = append(rest, &block{id: w.id, start: w.start, end: b.start, slot: w.slot, weak: true})
		}
		if w.end > b.end {
			rest = append(rest, &block{id: w.id, start: b.end, end: w.end, slot: w.slot, weak: true})
		}
	}
	// Best effort: parts the index has no room for are left out.
	if err := p.addWeak(s, rest); err != nil {
		p.weakLost += len(rest)
	}
	return nil
}

// remove deletes b, a block's strong range, from the index and the kernel
// maps. Its weak ranges stay (see setWeak).
func (p *procIndex) remove(s rangeStore, b *block) error {
	delete(p.blocks, b.id)
	if err := p.unlist(s, []*block{b}); err != nil {
		return fmt.Errorf("remove block %d: %w", b.id, err)
	}
	return nil
}

// move lists block old.id at [start, end) instead, with old's slot; its
// weak ranges stay. On error the block is listed where it was again, or,
// when even that fails, gone says it left the index, weak ranges and all.
func (p *procIndex) move(s rangeStore, old *block, start, end uint64) (gone bool, err error) {
	err = p.remove(s, old)
	if err == nil {
		err = p.add(s, &block{id: old.id, start: start, end: end, slot: old.slot})
	}
	if err == nil {
		return false, nil
	}
	if errBack := p.add(s, old); errBack != nil {
		return true, errors.Join(err, errBack, p.dropWeak(s, p.weak[old.id]))
	}
	return false, err
}

// free deletes block b's strong range and its weak ranges. They leave the
// index even when a write fails.
func (p *procIndex) free(s rangeStore, b *block) error {
	return errors.Join(p.dropWeak(s, p.weak[b.id]), p.remove(s, b))
}

// Range is [Start, End) of a process's address space.
type Range struct{ Start, End uint64 }

// setWeak replaces the weak ranges of block id (slot slot) with the parts
// of ranges (ascending, disjoint) that no other range of the index holds.
// Ranges it already lists unchanged stay as they are. On error the block
// is left without weak ranges.
func (p *procIndex) setWeak(s rangeStore, id uint64, slot uint32, ranges []Range) error {
	var total uint64
	for k, r := range ranges {
		if r.Start >= r.End || r.End > maxUserAddr || k > 0 && r.Start < ranges[k-1].End {
			return fmt.Errorf("set weak ranges of block %d: range %d [%#x,%#x): %w", id, k, r.Start, r.End, ErrBadRange)
		}
		if total += r.End - r.Start; total > maxWeakBytes {
			return fmt.Errorf("set weak ranges of block %d: more than %d bytes: %w", id, uint64(maxWeakBytes), ErrBadRange)
		}
	}
	var want []*block
	var held []*block
	for _, r := range ranges {
		held = held[:0]
		p.overlapping(r.Start, r.End, func(o *block) {
			if !o.weak || o.id != id {
				held = append(held, o)
			}
		})
		slices.SortFunc(held, func(a, b *block) int { return cmp.Compare(a.start, b.start) })
		at := r.Start
		for _, o := range held {
			if o.start > at {
				want = append(want, &block{id: id, start: at, end: o.start, slot: slot, weak: true})
			}
			at = max(at, o.end)
		}
		if at < r.End {
			want = append(want, &block{id: id, start: at, end: r.End, slot: slot, weak: true})
		}
	}
	// Both sorted: keep the old ranges the new ones repeat.
	old := p.weak[id]
	var drop, add []*block
	i := 0
	for _, w := range want {
		for i < len(old) && old[i].start < w.start {
			drop = append(drop, old[i])
			i++
		}
		if i < len(old) && old[i].start == w.start && old[i].end == w.end && old[i].slot == w.slot {
			i++
			continue
		}
		add = append(add, w)
	}
	drop = append(drop, old[i:]...)
	err := p.dropWeak(s, drop)
	if err == nil {
		err = p.addWeak(s, add)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("set weak ranges of block %d: %w", id, err), p.dropWeak(s, p.weak[id]))
	}
	return nil
}

// addWeak lists weak ranges (each sorted per block, overlapping nothing
// listed). On error none of them stays in the index.
func (p *procIndex) addWeak(s rangeStore, ws []*block) error {
	if len(ws) == 0 {
		return nil
	}
	for _, w := range ws {
		l := p.weak[w.id]
		if n := len(l); n == 0 || l[n-1].start < w.start {
			p.weak[w.id] = append(l, w)
		} else {
			at, _ := slices.BinarySearchFunc(l, w.start, func(o *block, a uint64) int { return cmp.Compare(o.start, a) })
			p.weak[w.id] = slices.Insert(l, at, w)
		}
	}
	p.weakN += len(ws)
	return p.insert(s, ws)
}

// dropWeak removes weak ranges from the index.
func (p *procIndex) dropWeak(s rangeStore, ws []*block) error {
	if len(ws) == 0 {
		return nil
	}
	ws = slices.Clone(ws) // it may be a list forgetWeak edits
	p.forgetWeak(ws)
	return p.unlist(s, ws)
}

// forgetWeak removes weak ranges from p.weak.
func (p *procIndex) forgetWeak(ws []*block) {
	gone := make(map[*block]bool, len(ws))
	for _, w := range ws {
		gone[w] = true
	}
	for _, w := range ws {
		l, ok := p.weak[w.id]
		if !ok {
			continue
		}
		n := len(l)
		if l = slices.DeleteFunc(l, func(o *block) bool { return gone[o] }); len(l) == 0 {
			delete(p.weak, w.id)
		} else {
			p.weak[w.id] = l
		}
		p.weakN -= n - len(l)
	}
}

// holds reports whether b is one of the ranges p lists now.
func (p *procIndex) holds(b *block) bool {
	if !b.weak {
		return p.blocks[b.id] == b
	}
	l := p.weak[b.id]
	at, ok := slices.BinarySearchFunc(l, b.start, func(o *block, a uint64) int { return cmp.Compare(o.start, a) })
	return ok && l[at] == b
}

// byBucket groups ranges by the buckets they overlap, buckets in the
// order first met.
func byBucket(bs []*block) (order []uint64, in map[uint64][]*block) {
	in = map[uint64][]*block{}
	for _, b := range bs {
		first, last := bucketsOf(b)
		for i := first; i <= last; i++ {
			if _, ok := in[i]; !ok {
				order = append(order, i)
			}
			in[i] = append(in[i], b)
		}
	}
	return order, in
}

// insert lists bs, which p.blocks or p.weak hold already, in their buckets
// and writes each changed entry once. On error nothing of bs stays in the
// index.
func (p *procIndex) insert(s rangeStore, bs []*block) error {
	order, in := byBucket(bs)
	for _, i := range order {
		if err := p.addToBucket(s, i, in[i]); err != nil {
			var weak []*block
			for _, b := range bs {
				switch {
				case b.weak:
					weak = append(weak, b)
				case p.blocks[b.id] == b:
					delete(p.blocks, b.id)
				}
			}
			p.forgetWeak(weak)
			return errors.Join(err, p.resync(s, order))
		}
	}
	return nil
}

func (p *procIndex) addToBucket(s rangeStore, i uint64, bs []*block) error {
	c := p.buckets[i]
	if c == nil {
		c = &bucket{}
		p.buckets[i] = c
	}
	c.blocks = append(c.blocks, bs...)
	switch {
	case c.grans != nil:
		// Each granule changed is written once; one range added at its
		// end is appended to its run in place.
		var ch granuleChanges
		for _, b := range bs {
			lo, hi := granulesIn(i, b.start, b.end)
			for g := lo; g <= hi; g++ {
				gr := c.granule(g)
				at, _ := slices.BinarySearchFunc(gr.blocks, b.start, func(o *block, s uint64) int { return cmp.Compare(o.start, s) })
				gr.blocks = slices.Insert(gr.blocks, at, b)
				ch.note(g, at)
			}
		}
		for _, g := range ch.order {
			gr := c.grans[g]
			if err := p.syncGranule(s, g, gr, ch.one(g, len(gr.blocks)-1), false); err != nil {
				return err
			}
		}
		return nil
	case len(c.blocks) <= rangeSlots:
		return p.put(s, p.bucketKey(i), &c.inKernel, leafSet(c.blocks))
	}
	return p.split(s, i, c)
}

// granuleChanges notes the granules of a bucket that a change touches, in
// the order first touched, with how many ranges went in or out of each
// and where the last did.
type granuleChanges struct {
	order []uint64
	n, at map[uint64]int
}

func (ch *granuleChanges) note(g uint64, at int) {
	if ch.n == nil {
		ch.n, ch.at = map[uint64]int{}, map[uint64]int{}
	}
	if ch.n[g] == 0 {
		ch.order = append(ch.order, g)
	}
	ch.n[g]++
	ch.at[g] = at
}

// one reports whether granule g changed by a single range at index at.
func (ch *granuleChanges) one(g uint64, at int) bool { return ch.n[g] == 1 && ch.at[g] == at }

// split lists the ranges of bucket i per granule: granules first, then the
// bucket's mark.
func (p *procIndex) split(s rangeStore, i uint64, c *bucket) error {
	c.grans = map[uint64]*granule{}
	for _, b := range c.blocks {
		lo, hi := granulesIn(i, b.start, b.end)
		for g := lo; g <= hi; g++ {
			gr := c.granule(g)
			gr.blocks = append(gr.blocks, b)
		}
	}
	for g, gr := range c.grans {
		slices.SortFunc(gr.blocks, func(a, b *block) int { return cmp.Compare(a.start, b.start) })
		if err := p.syncGranule(s, g, gr, false, false); err != nil {
			return err
		}
	}
	return p.put(s, p.bucketKey(i), &c.inKernel, &strataRangeSet{Flags: cellSplit})
}

// syncGranule makes the kernel entry of granule g list gr.blocks. appended
// says the one change since the last sync added the last range; truncated
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
		if errors.Is(err, ErrIndexFull) && r != nil && n <= r.seg.cap() {
			// No room for another segment, but this one holds the ranges:
			// it is rewritten once no lookup can read it, the granule
			// unmatched meanwhile. So a change that does not grow a run
			// never fails for want of room.
			if err := p.del(s, p.granuleKey(g), &gr.inKernel); err != nil {
				return err
			}
			if err := p.runs.grace(); err != nil {
				return err
			}
			if err := s.putRun(r.seg.off, runEntries(gr.blocks)); err != nil {
				return err
			}
			r.hw = n
			break
		}
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
// range of bs (sorted, not overlapping) that ends above the page's start,
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

// unlist takes bs, which p.blocks and p.weak no longer hold, out of their
// buckets and writes each changed entry once. On error the buckets are
// rebuilt (resync).
func (p *procIndex) unlist(s rangeStore, bs []*block) error {
	if len(bs) == 0 {
		return nil
	}
	gone := make(map[*block]bool, len(bs))
	for _, b := range bs {
		gone[b] = true
	}
	order, in := byBucket(bs)
	for _, i := range order {
		if err := p.removeFromBucket(s, i, in[i], gone); err != nil {
			return errors.Join(err, p.resync(s, order))
		}
	}
	return nil
}

func (p *procIndex) removeFromBucket(s rangeStore, i uint64, bs []*block, gone map[*block]bool) error {
	c := p.buckets[i]
	if c == nil {
		return nil
	}
	c.blocks = slices.DeleteFunc(c.blocks, func(o *block) bool { return gone[o] })
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
		// Each granule changed is written once; one range taken from its
		// end leaves its run in place.
		var ch granuleChanges
		for _, b := range bs {
			lo, hi := granulesIn(i, b.start, b.end)
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
				ch.note(g, at)
			}
		}
		for _, g := range ch.order {
			gr := c.grans[g]
			if err := p.syncGranule(s, g, gr, false, ch.one(g, len(gr.blocks))); err != nil {
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

// resync rebuilds, after a failed write, the given buckets from the ranges
// listed now. Their kernel entries are deleted first (faults there go
// unmatched meanwhile, never to a wrong block), then written afresh; when a
// write fails again the bucket stays unmatched until its next change.
func (p *procIndex) resync(s rangeStore, buckets []uint64) error {
	var errs []error
	for _, i := range buckets {
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
		c.blocks = slices.DeleteFunc(c.blocks, func(o *block) bool { return !p.holds(o) })
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
	p.weak = map[uint64][]*block{}
	p.weakN = 0
	p.buckets = map[uint64]*bucket{}
	p.cells = 0
	return s.delMany(keys)
}

// leafSet is the kernel entry of a cell listing ranges (at most
// rangeSlots), sorted by start.
func leafSet(blocks []*block) *strataRangeSet {
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b *block) int { return cmp.Compare(a.start, b.start) })
	rs := &strataRangeSet{N: uint32(len(bs))}
	for j, b := range bs {
		rs.Ranges[j] = strataBlockRange{Start: b.start, End: b.end, BlockId: b.id, Slot: b.slot}
	}
	return rs
}
