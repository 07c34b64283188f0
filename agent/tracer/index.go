package tracer

import (
	"errors"
	"fmt"
	"slices"
)

// Address-index geometry, equal to the STRATA_* constants in bpf/strata.h
// (TestHeaderConstants checks them).
const (
	levels      = 5
	rangeSlots  = 8
	cellSplit   = 1
	pidWords    = 4194304 / 64
	maxUserAddr = 1 << 56 // x86-64 user space with 5-level paging (4-level: 1<<47)
)

// levelShift[l] is the address shift of a level-l cell (STRATA_SHIFT_<l>):
// 2 MiB, 64 KiB, 4 KiB, 256 and 8 bytes.
var levelShift = [levels]uint{21, 16, 12, 8, 3}

// mergeAt is the block count at which a split cell lists its blocks itself
// again. Below rangeSlots, so that a cell at the limit (a GC moving one of
// nine small blocks) is not merged and split again at every change.
const mergeAt = rangeSlots / 2

// rangeStore is the kernel's cells map as the index sees it; tests pass a
// map-backed fake.
type rangeStore interface {
	put(key strataCellKey, val *strataRangeSet) error
	del(key strataCellKey) error
	delMany(keys []strataCellKey) error
}

type block struct {
	id, start, end uint64
	slot           uint32
}

// cell is one entry of the kernel's index and the blocks overlapping it.
// A split cell (kids non-nil) lists nothing in the kernel: its blocks are
// listed by its kids, the cells of the next level that they overlap.
type cell struct {
	blocks   []*block
	kids     map[uint64]*cell
	inKernel bool // its entry was written and not deleted since
}

// procIndex mirrors the kernel entries of one TGID so that they can be
// rewritten on change and removed on exit without scanning the kernel map.
//
// Every change updates the Go cells first and the kernel entries after, in
// an order that keeps a concurrent lookup correct: a cell's kids are
// written before it is flagged split, and deleted after it lists its
// blocks again (or is gone). So the kernel never holds an entry that the Go
// tree does not know, and a failed write is undone by rebuilding the
// level-0 cells of the block from the Go tree (resync).
type procIndex struct {
	tgid   uint32
	blocks map[uint64]*block
	roots  map[uint64]*cell // level-0 cells by index
	cells  int              // entries in the kernel map
}

func newProcIndex(tgid uint32) *procIndex {
	return &procIndex{tgid: tgid, blocks: map[uint64]*block{}, roots: map[uint64]*cell{}}
}

// within returns the first and last level-l cell that b overlaps inside
// cell parent of level l-1 (anywhere at level 0).
func within(l int, parent uint64, b *block) (lo, hi uint64) {
	s, e := b.start, b.end
	if l > 0 {
		s, e = max(s, parent<<levelShift[l-1]), min(e, (parent+1)<<levelShift[l-1])
	}
	return s >> levelShift[l], (e - 1) >> levelShift[l]
}

func overlaps(a, b *block) bool { return a.start < b.end && b.start < a.end }

func (p *procIndex) key(l int, i uint64) strataCellKey {
	return strataCellKey{Tgid: p.tgid, Level: uint32(l), Index: i}
}

// add inserts b and writes the cells it touches. On error nothing of b
// stays in the index.
func (p *procIndex) add(s rangeStore, b *block) error {
	if b.start >= b.end || b.end > maxUserAddr {
		return fmt.Errorf("add block %d [%#x,%#x): %w", b.id, b.start, b.end, ErrBadRange)
	}
	if _, ok := p.blocks[b.id]; ok {
		return fmt.Errorf("add block %d: %w", b.id, ErrBlockExists)
	}
	lo, hi := within(0, 0, b)
	for i := lo; i <= hi; i++ {
		if c := p.roots[i]; c != nil {
			if j := slices.IndexFunc(c.blocks, func(o *block) bool { return overlaps(o, b) }); j >= 0 {
				return fmt.Errorf("add block %d: block %d: %w", b.id, c.blocks[j].id, ErrOverlap)
			}
		}
	}
	p.blocks[b.id] = b
	if err := p.insert(s, 0, 0, p.roots, b); err != nil {
		delete(p.blocks, b.id)
		return errors.Join(fmt.Errorf("add block %d: %w", b.id, err), p.resync(s, b))
	}
	return nil
}

// insert adds b to the cells of m (level l, inside cell parent) it overlaps.
func (p *procIndex) insert(s rangeStore, l int, parent uint64, m map[uint64]*cell, b *block) error {
	lo, hi := within(l, parent, b)
	for i := lo; i <= hi; i++ {
		c := m[i]
		if c == nil {
			c = &cell{}
			m[i] = c
		}
		c.blocks = append(c.blocks, b)
		var err error
		switch {
		case c.kids != nil:
			err = p.insert(s, l+1, i, c.kids, b)
		case len(c.blocks) <= rangeSlots || l+1 == levels:
			err = p.putLeaf(s, l, i, c) // an 8-byte cell holds at most 8
		default:
			c.kids = layout(l+1, i, c.blocks)
			err = p.putTree(s, l, i, c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// layout places blocks, which overlap cell parent of level l-1, in its
// level-l cells, splitting those that more than rangeSlots blocks overlap.
func layout(l int, parent uint64, blocks []*block) map[uint64]*cell {
	m := map[uint64]*cell{}
	for _, b := range blocks {
		lo, hi := within(l, parent, b)
		for i := lo; i <= hi; i++ {
			c := m[i]
			if c == nil {
				c = &cell{}
				m[i] = c
			}
			c.blocks = append(c.blocks, b)
		}
	}
	for i, c := range m {
		// An 8-byte cell of the last level overlaps at most 8 blocks.
		if len(c.blocks) > rangeSlots && l+1 < levels {
			c.kids = layout(l+1, i, c.blocks)
		}
	}
	return m
}

// putTree writes cell i of level l and everything below it, kids first.
func (p *procIndex) putTree(s rangeStore, l int, i uint64, c *cell) error {
	if c.kids == nil {
		return p.putLeaf(s, l, i, c)
	}
	for j, k := range c.kids {
		if err := p.putTree(s, l+1, j, k); err != nil {
			return err
		}
	}
	return p.put(s, l, i, c, &strataRangeSet{Flags: cellSplit})
}

func (p *procIndex) putLeaf(s rangeStore, l int, i uint64, c *cell) error {
	rs, err := rangeSet(c.blocks)
	if err != nil {
		return err
	}
	return p.put(s, l, i, c, rs)
}

func (p *procIndex) put(s rangeStore, l int, i uint64, c *cell, rs *strataRangeSet) error {
	if err := s.put(p.key(l, i), rs); err != nil {
		return err
	}
	if !c.inKernel {
		c.inKernel = true
		p.cells++
	}
	return nil
}

// remove deletes b from the index and the kernel map.
func (p *procIndex) remove(s rangeStore, b *block) error {
	delete(p.blocks, b.id)
	if err := p.erase(s, 0, 0, p.roots, b); err != nil {
		return errors.Join(fmt.Errorf("remove block %d: %w", b.id, err), p.resync(s, b))
	}
	return nil
}

// erase removes b from the cells of m (level l, inside cell parent).
func (p *procIndex) erase(s rangeStore, l int, parent uint64, m map[uint64]*cell, b *block) error {
	lo, hi := within(l, parent, b)
	for i := lo; i <= hi; i++ {
		c := m[i]
		if c == nil {
			continue
		}
		c.blocks = slices.DeleteFunc(c.blocks, func(o *block) bool { return o == b })
		var err error
		switch {
		case len(c.blocks) == 0:
			// The cell first, so that no lookup reaches a kid without it.
			if err = p.delTree(s, l, i, c); err == nil {
				delete(m, i)
			}
		case c.kids != nil && len(c.blocks) <= mergeAt:
			if err = p.putLeaf(s, l, i, c); err == nil {
				err = p.delKids(s, l, c)
			}
		case c.kids != nil:
			err = p.erase(s, l+1, i, c.kids, b)
		default:
			err = p.putLeaf(s, l, i, c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// delTree deletes the entry of cell i of level l, then those below it.
func (p *procIndex) delTree(s rangeStore, l int, i uint64, c *cell) error {
	if c.inKernel {
		if err := s.del(p.key(l, i)); err != nil {
			return err
		}
		c.inKernel = false
		p.cells--
	}
	return p.delKids(s, l, c)
}

func (p *procIndex) delKids(s rangeStore, l int, c *cell) error {
	for j, k := range c.kids {
		if err := p.delTree(s, l+1, j, k); err != nil {
			return err
		}
		delete(c.kids, j)
	}
	c.kids = nil
	return nil
}

// resync rebuilds, after a failed write, the level-0 cells that b overlaps
// from the blocks registered now: the new entries are written, kids first,
// then the entries of the old cells that the new ones lack are deleted.
func (p *procIndex) resync(s rangeStore, b *block) error {
	lo, hi := within(0, 0, b)
	var errs []error
	for i := lo; i <= hi; i++ {
		old := p.roots[i]
		if old == nil {
			continue
		}
		var live []*block
		for _, o := range old.blocks {
			if p.blocks[o.id] == o {
				live = append(live, o)
			}
		}
		stale := map[strataCellKey]bool{}
		p.keys(0, i, old, func(k strataCellKey, c *cell) {
			if c.inKernel {
				stale[k] = true
				p.cells--
			}
		})
		delete(p.roots, i)
		if len(live) > 0 {
			c := &cell{blocks: live}
			if len(live) > rangeSlots {
				c.kids = layout(1, i, live)
			}
			p.roots[i] = c
			errs = append(errs, p.putTree(s, 0, i, c))
			p.keys(0, i, c, func(k strataCellKey, c *cell) {
				if c.inKernel {
					delete(stale, k)
				}
			})
		}
		for k := range stale {
			if err := s.del(k); err != nil {
				errs = append(errs, err)
				p.cells++ // still there
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resync index: %w", err)
	}
	return nil
}

// keys calls f for cell i of level l and every cell below it.
func (p *procIndex) keys(l int, i uint64, c *cell, f func(strataCellKey, *cell)) {
	f(p.key(l, i), c)
	for j, k := range c.kids {
		p.keys(l+1, j, k, f)
	}
}

// clear removes every kernel entry of the TGID.
func (p *procIndex) clear(s rangeStore) error {
	keys := make([]strataCellKey, 0, p.cells)
	for i, c := range p.roots {
		p.keys(0, i, c, func(k strataCellKey, c *cell) {
			if c.inKernel {
				keys = append(keys, k)
			}
		})
	}
	p.blocks = map[uint64]*block{}
	p.roots = map[uint64]*cell{}
	p.cells = 0
	return s.delMany(keys)
}

// rangeSet is the kernel entry of a cell listing blocks, sorted by start.
func rangeSet(blocks []*block) (*strataRangeSet, error) {
	if len(blocks) > rangeSlots {
		// layout splits every such cell down to 8-byte cells, which
		// cannot overlap more than 8 blocks.
		return nil, fmt.Errorf("cell of %d blocks: more than %d ranges", len(blocks), rangeSlots)
	}
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
	return rs, nil
}
