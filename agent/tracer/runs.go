package tracer

import (
	"fmt"
	"math/bits"
)

// minRunOrder is the smallest run segment, 16 entries: a granule becomes a
// run above rangeSlots blocks.
const minRunOrder = 4

// segment is a piece of the kernel's runs array: 1<<order entries at off.
type segment struct {
	off   uint32
	order uint8
}

func (s segment) cap() int { return 1 << s.order }

// runPool hands out segments of the kernel's runs array to the granules
// that hold more than rangeSlots blocks: a buddy allocator of power-of-two
// segments over the whole array (a power of two long).
//
// A released segment may still be read by a lookup that found its
// granule's previous cell, so it waits in limbo until a grace period has
// passed, and is reused only after. grace must return only once every BPF
// program run that started before the call has ended (the tracer updates a
// map-in-map, whose update waits for an RCU grace period).
type runPool struct {
	order int
	free  []map[uint32]struct{} // free segments by order
	limbo []segment
	used  int // entries in segments not free (limbo included)
	grace func() error
}

func newRunPool(entries uint32, grace func() error) *runPool {
	order := bits.Len32(entries) - 1 // entries is a power of two
	rp := &runPool{order: order, free: make([]map[uint32]struct{}, order+1), grace: grace}
	for o := range rp.free {
		rp.free[o] = map[uint32]struct{}{}
	}
	rp.free[order][0] = struct{}{}
	return rp
}

// alloc returns a segment of at least n entries. When none is free it
// waits for a grace period and reuses the segments in limbo.
func (rp *runPool) alloc(n int) (segment, error) {
	order := max(minRunOrder, bits.Len(uint(n-1)))
	seg, ok := rp.take(order)
	if !ok && len(rp.limbo) > 0 {
		if err := rp.reclaim(); err != nil {
			return segment{}, err
		}
		seg, ok = rp.take(order)
	}
	if !ok {
		return segment{}, fmt.Errorf("allocate run of %d entries (%d of %d in use): %w", n, rp.used, 1<<rp.order, ErrIndexFull)
	}
	rp.used += seg.cap()
	return seg, nil
}

// take removes a free segment of the order, splitting a larger one.
func (rp *runPool) take(order int) (segment, bool) {
	for o := order; o <= rp.order; o++ {
		for off := range rp.free[o] {
			delete(rp.free[o], off)
			for o > order { // keep the lower half, free the upper
				o--
				rp.free[o][off+1<<o] = struct{}{}
			}
			return segment{off: off, order: uint8(order)}, true
		}
	}
	return segment{}, false
}

// release puts a segment no cell lists any more in limbo.
func (rp *runPool) release(s segment) { rp.limbo = append(rp.limbo, s) }

// takeLimbo empties limbo; the segments may be freed after a grace period
// that starts after this call.
func (rp *runPool) takeLimbo() []segment {
	segs := rp.limbo
	rp.limbo = nil
	return segs
}

// reclaim waits for a grace period and frees the segments in limbo.
func (rp *runPool) reclaim() error {
	segs := rp.takeLimbo()
	if err := rp.grace(); err != nil {
		rp.limbo = append(rp.limbo, segs...)
		return fmt.Errorf("reclaim runs: %w", err)
	}
	rp.freeSegs(segs)
	return nil
}

// freeSegs returns segments to the free lists, merging free buddies.
func (rp *runPool) freeSegs(segs []segment) {
	for _, s := range segs {
		rp.used -= s.cap()
		off, o := s.off, int(s.order)
		for o < rp.order {
			buddy := off ^ 1<<o
			if _, ok := rp.free[o][buddy]; !ok {
				break
			}
			delete(rp.free[o], buddy)
			off &^= 1 << o
			o++
		}
		rp.free[o][off] = struct{}{}
	}
}
