package tracer

import (
	"errors"
	"fmt"
	"slices"
)

// Address-index geometry, equal to the STRATA_* constants in bpf/strata.h
// (layout_test.go checks them against the generated struct).
const (
	bucketShift = 21
	fineShift   = 16
	rangeSlots  = 8
	levelBucket = 0
	levelFine   = 1
	bucketFine  = 1
	pidWords    = 4194304 / 64
	maxUserAddr = 1 << 56 // x86-64 user space with 5-level paging (4-level: 1<<47)
)

// rangeStore is the kernel's buckets map as the index sees it; tests pass a
// map-backed fake.
type rangeStore interface {
	put(key strataBucketKey, val *strataRangeSet) error
	del(key strataBucketKey) error
	delMany(keys []strataBucketKey) error
}

type block struct {
	id, start, end uint64
	slot           uint32
}

// bucketState is what is written for one 2 MiB bucket: the blocks that
// overlap it and, when it is fine-grained, the granule entries written for it.
type bucketState struct {
	blocks []*block
	pages  map[uint64]struct{} // level-1 (granule) indexes in the kernel map; nil when direct
}

// procIndex mirrors the kernel entries of one TGID so that they can be
// rewritten on change and removed on exit without scanning the kernel map.
type procIndex struct {
	tgid    uint32
	blocks  map[uint64]*block
	buckets map[uint64]*bucketState
}

func newProcIndex(tgid uint32) *procIndex {
	return &procIndex{tgid: tgid, blocks: map[uint64]*block{}, buckets: map[uint64]*bucketState{}}
}

func bucketsOf(start, end uint64) (first, last uint64) {
	return start >> bucketShift, (end - 1) >> bucketShift
}

// add inserts b and writes the buckets it touches. On error nothing of b
// stays in the index (the kernel entries are rewritten as before).
func (p *procIndex) add(s rangeStore, b *block) error {
	if b.start >= b.end || b.end > maxUserAddr {
		return fmt.Errorf("add block %d [%#x,%#x): %w", b.id, b.start, b.end, ErrBadRange)
	}
	if _, ok := p.blocks[b.id]; ok {
		return fmt.Errorf("add block %d: %w", b.id, ErrBlockExists)
	}
	first, last := bucketsOf(b.start, b.end)
	for i := first; i <= last; i++ {
		st := p.buckets[i]
		if st == nil {
			continue
		}
		for _, o := range st.blocks {
			if b.start < o.end && o.start < b.end {
				return fmt.Errorf("add block %d: block %d: %w", b.id, o.id, ErrOverlap)
			}
		}
		if len(st.blocks)+1 > rangeSlots {
			if err := checkDensity(i, st.blocks, b); err != nil {
				return fmt.Errorf("add block %d: %w", b.id, err)
			}
		}
	}
	p.blocks[b.id] = b
	for i := first; i <= last; i++ {
		st := p.buckets[i]
		if st == nil {
			st = &bucketState{}
			p.buckets[i] = st
		}
		st.blocks = append(st.blocks, b)
	}
	if err := p.write(s, first, last, b); err != nil {
		p.drop(b)
		return errors.Join(fmt.Errorf("add block %d: %w", b.id, err), p.write(s, first, last, b))
	}
	return nil
}

// checkDensity fails when a granule of b in bucket i would be covered by more
// than rangeSlots blocks.
func checkDensity(i uint64, blocks []*block, b *block) error {
	lo, hi := pagesIn(i, b)
	for pg := lo; pg <= hi; pg++ {
		n := 1
		for _, o := range blocks {
			if o.start < (pg+1)<<fineShift && pg<<fineShift < o.end {
				n++
			}
		}
		if n > rangeSlots {
			return fmt.Errorf("granule %#x: %d blocks: %w", pg<<fineShift, n, ErrTooDense)
		}
	}
	return nil
}

// pagesIn returns the first and last fine granule of b inside bucket i.
func pagesIn(i uint64, b *block) (lo, hi uint64) {
	s, e := max(b.start, i<<bucketShift), min(b.end, (i+1)<<bucketShift)
	return s >> fineShift, (e - 1) >> fineShift
}

// remove deletes b from the index and the kernel map.
func (p *procIndex) remove(s rangeStore, b *block) error {
	p.drop(b)
	first, last := bucketsOf(b.start, b.end)
	if err := p.write(s, first, last, b); err != nil {
		return fmt.Errorf("remove block %d: %w", b.id, err)
	}
	return nil
}

func (p *procIndex) drop(b *block) {
	delete(p.blocks, b.id)
	first, last := bucketsOf(b.start, b.end)
	for i := first; i <= last; i++ {
		if st := p.buckets[i]; st != nil {
			st.blocks = slices.DeleteFunc(st.blocks, func(o *block) bool { return o == b })
		}
	}
}

// clear removes every kernel entry of the TGID.
func (p *procIndex) clear(s rangeStore) error {
	keys := make([]strataBucketKey, 0, len(p.buckets))
	for i, st := range p.buckets {
		keys = append(keys, strataBucketKey{Tgid: p.tgid, Level: levelBucket, Index: i})
		for pg := range st.pages {
			keys = append(keys, strataBucketKey{Tgid: p.tgid, Level: levelFine, Index: pg})
		}
	}
	p.blocks = map[uint64]*block{}
	p.buckets = map[uint64]*bucketState{}
	return s.delMany(keys)
}

func (p *procIndex) write(s rangeStore, first, last uint64, changed *block) error {
	for i := first; i <= last; i++ {
		if err := p.writeOne(s, i, changed); err != nil {
			return err
		}
	}
	return nil
}

// writeOne makes the kernel entries of bucket i match its state after
// changed was added or removed (nil: rewrite all). Ordering keeps a
// concurrent lookup correct: granule entries go in before the bucket is
// flagged fine, and come out after it is direct again.
func (p *procIndex) writeOne(s rangeStore, i uint64, changed *block) error {
	st := p.buckets[i]
	if st == nil {
		return nil
	}
	key := strataBucketKey{Tgid: p.tgid, Level: levelBucket, Index: i}
	if len(st.blocks) == 0 {
		if err := s.del(key); err != nil {
			return err
		}
		if err := p.delPages(s, st, nil); err != nil {
			return err
		}
		delete(p.buckets, i)
		return nil
	}
	if len(st.blocks) <= rangeSlots {
		if err := s.put(key, rangeSet(st.blocks)); err != nil {
			return err
		}
		return p.delPages(s, st, nil)
	}
	if st.pages != nil && changed != nil {
		// Already fine: only the granules of the changed block differ.
		lo, hi := pagesIn(i, changed)
		for pg := lo; pg <= hi; pg++ {
			if err := p.writePage(s, st, pg); err != nil {
				return err
			}
		}
		return nil
	}
	pages, err := layoutPages(i, st.blocks)
	if err != nil {
		return err
	}
	if st.pages == nil {
		st.pages = map[uint64]struct{}{}
	}
	for pg, rs := range pages {
		if err := s.put(strataBucketKey{Tgid: p.tgid, Level: levelFine, Index: pg}, rs); err != nil {
			return err
		}
		st.pages[pg] = struct{}{}
	}
	if err := s.put(key, &strataRangeSet{Flags: bucketFine}); err != nil {
		return err
	}
	return p.delPages(s, st, pages)
}

// writePage rewrites the entry of one granule of a fine bucket.
func (p *procIndex) writePage(s rangeStore, st *bucketState, pg uint64) error {
	var on []*block
	for _, b := range st.blocks {
		if b.start < (pg+1)<<fineShift && pg<<fineShift < b.end {
			on = append(on, b)
		}
	}
	key := strataBucketKey{Tgid: p.tgid, Level: levelFine, Index: pg}
	switch {
	case len(on) > rangeSlots:
		return fmt.Errorf("granule %#x: %d blocks: %w", pg<<fineShift, len(on), ErrTooDense)
	case len(on) == 0:
		delete(st.pages, pg)
		return s.del(key)
	}
	st.pages[pg] = struct{}{}
	return s.put(key, rangeSet(on))
}

// delPages deletes the granule entries of st not in keep; with keep nil the
// bucket is direct afterwards.
func (p *procIndex) delPages(s rangeStore, st *bucketState, keep map[uint64]*strataRangeSet) error {
	for pg := range st.pages {
		if _, ok := keep[pg]; ok {
			continue
		}
		if err := s.del(strataBucketKey{Tgid: p.tgid, Level: levelFine, Index: pg}); err != nil {
			return err
		}
		delete(st.pages, pg)
	}
	if keep == nil {
		st.pages = nil
	}
	return nil
}

// layoutPages lists, per 64 KiB granule of bucket i, the blocks covering it.
func layoutPages(i uint64, blocks []*block) (map[uint64]*strataRangeSet, error) {
	lo, hi := i<<bucketShift, (i+1)<<bucketShift
	perPage := map[uint64][]*block{}
	for _, b := range blocks {
		s, e := max(b.start, lo), min(b.end, hi)
		for pg := s >> fineShift; pg <= (e-1)>>fineShift; pg++ {
			perPage[pg] = append(perPage[pg], b)
		}
	}
	out := make(map[uint64]*strataRangeSet, len(perPage))
	for pg, bs := range perPage {
		if len(bs) > rangeSlots {
			return nil, fmt.Errorf("granule %#x: %d blocks: %w", pg<<fineShift, len(bs), ErrTooDense)
		}
		out[pg] = rangeSet(bs)
	}
	return out, nil
}

func rangeSet(blocks []*block) *strataRangeSet {
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b *block) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	rs := &strataRangeSet{N: uint32(len(bs))}
	for j, b := range bs {
		rs.Ranges[j] = strataBlockRange{Start: b.start, End: b.end, BlockId: b.id, Slot: b.slot}
	}
	return rs
}
