package tracer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// lookup is the Go twin of match() in bpf/strata.bpf.c, for tests; depth is
// the number of entries it read.
func lookup(kv map[strataCellKey]strataRangeSet, tgid uint32, addr uint64) (r strataBlockRange, depth int, ok bool) {
	var rs strataRangeSet
	for l := 0; l < levels; l++ {
		if rs, ok = kv[strataCellKey{Tgid: tgid, Level: uint32(l), Index: addr >> levelShift[l]}]; !ok {
			return strataBlockRange{}, l + 1, false
		}
		depth = l + 1
		if rs.Flags&cellSplit == 0 {
			break
		}
	}
	for j := uint32(0); j < rs.N && j < rangeSlots; j++ {
		if r := rs.Ranges[j]; addr >= r.Start && addr < r.End {
			return r, depth, true
		}
	}
	return strataBlockRange{}, depth, false
}

// fakeStore is the kernel cells map as a Go map; with failAfter > 0 the
// failAfter-th write from now on fails, as a full kernel map would.
type fakeStore struct {
	m         map[strataCellKey]strataRangeSet
	failAfter int
}

var errFakeFull = errors.New("fake map full")

func newFakeStore() *fakeStore { return &fakeStore{m: map[strataCellKey]strataRangeSet{}} }

func (f *fakeStore) fail() bool {
	if f.failAfter > 0 {
		f.failAfter--
		return f.failAfter == 0
	}
	return false
}

func (f *fakeStore) put(k strataCellKey, v *strataRangeSet) error {
	if f.fail() {
		return errFakeFull
	}
	f.m[k] = *v
	return nil
}

func (f *fakeStore) del(k strataCellKey) error {
	if f.fail() {
		return errFakeFull
	}
	delete(f.m, k)
	return nil
}

func (f *fakeStore) delMany(ks []strataCellKey) error {
	for _, k := range ks {
		delete(f.m, k)
	}
	return nil
}

// checkIndex compares the store with the Go tree of p, entry by entry, and
// every given address's lookup with a linear search of p's blocks.
func checkIndex(t *testing.T, s *fakeStore, p *procIndex, addrs []uint64) {
	t.Helper()
	want := map[strataCellKey]bool{}
	var walk func(l int, i uint64, c *cell)
	walk = func(l int, i uint64, c *cell) {
		k := p.key(l, i)
		want[k] = true
		rs, ok := s.m[k]
		switch {
		case !ok:
			t.Fatalf("cell %+v (%d blocks) missing", k, len(c.blocks))
		case c.kids != nil && (rs.Flags != cellSplit || rs.N != 0):
			t.Fatalf("split cell %+v written as %+v", k, rs)
		case c.kids == nil && (rs.Flags != 0 || int(rs.N) != len(c.blocks) || len(c.blocks) > rangeSlots):
			t.Fatalf("leaf cell %+v of %d blocks written as n %d flags %d", k, len(c.blocks), rs.N, rs.Flags)
		case len(c.blocks) == 0:
			t.Fatalf("empty cell %+v kept", k)
		}
		for j, kid := range c.kids {
			walk(l+1, j, kid)
		}
	}
	for i, c := range p.roots {
		walk(0, i, c)
	}
	for k := range s.m {
		if k.Tgid == p.tgid && !want[k] {
			t.Fatalf("kernel entry %+v unknown to the index", k)
		}
	}
	if p.cells != len(want) {
		t.Fatalf("index counts %d cells, has %d", p.cells, len(want))
	}
	var all []span
	for _, b := range p.blocks {
		all = append(all, span{b.id, b.start, b.end})
	}
	for _, a := range addrs {
		id, found := owner(all, a)
		r, _, ok := lookup(s.m, p.tgid, a)
		if ok != found || (ok && r.BlockId != id) {
			t.Fatalf("lookup %#x: block %d %v, want %d %v", a, r.BlockId, ok, id, found)
		}
	}
}

func TestIndexLevels(t *testing.T) {
	const mib = 1 << 20
	s := newFakeStore()
	p := newProcIndex(7)
	base := uint64(0x7f0000000000)
	// A 5 MiB block spanning three buckets, and a small one after it.
	big := &block{id: 1, start: base + mib, end: base + 6*mib, slot: 10}
	small := &block{id: 2, start: base + 6*mib, end: base + 6*mib + 100, slot: 11}
	for _, b := range []*block{big, small} {
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.m) != 4 { // big covers buckets 0-2, small bucket 3
		t.Fatalf("%d entries, want 4 level-0 cells", len(s.m))
	}
	check := func(addr uint64, want uint64, ok bool, depth int) {
		t.Helper()
		r, d, found := lookup(s.m, 7, addr)
		if found != ok || (ok && r.BlockId != want) || d != depth {
			t.Errorf("lookup %#x: %v %d at depth %d, want %v %d at %d", addr, found, r.BlockId, d, ok, want, depth)
		}
	}
	check(base+mib, 1, true, 1)
	check(base+mib-1, 0, false, 1)
	check(base+6*mib-1, 1, true, 1)
	check(base+6*mib+99, 2, true, 1)
	check(base+6*mib+100, 0, false, 1)
	if _, _, ok := lookup(s.m, 8, base+mib); ok {
		t.Error("another tgid matched")
	}
	if err := p.add(s, &block{id: 3, start: base + 2*mib, end: base + 2*mib + 1}); !errors.Is(err, ErrOverlap) {
		t.Errorf("overlap: %v", err)
	}
	if err := p.add(s, &block{id: 1, start: base + 100*mib, end: base + 101*mib}); !errors.Is(err, ErrBlockExists) {
		t.Errorf("duplicate: %v", err)
	}
	if err := p.add(s, &block{id: 4, start: base, end: base}); !errors.Is(err, ErrBadRange) {
		t.Errorf("empty range: %v", err)
	}

	// 20 blocks of 2 KiB, four per 64 KiB granule: the bucket splits once.
	at := base + 6*mib
	const stride = 16 << 10
	for i := uint64(0); i < 20; i++ {
		b := &block{id: 100 + i, start: at + stride*(i+1), end: at + stride*(i+1) + 2048, slot: uint32(100 + i)}
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
	}
	check(at+99, 2, true, 2)
	check(at+stride*5+10, 104, true, 2)
	check(at+stride*5+2048, 0, false, 2)
	check(base+5*mib, 1, true, 1)
	// 64 blocks of 64 bytes in one page: granule, page and 256-byte cells.
	pg := base + 200*mib
	for i := uint64(0); i < 64; i++ {
		if err := p.add(s, &block{id: 300 + i, start: pg + 64*i, end: pg + 64*i + 64}); err != nil {
			t.Fatal(err)
		}
	}
	check(pg+64*37+63, 337, true, 4)
	// Nine 1-byte blocks in 9 bytes end in 8-byte cells, the last level.
	tiny := base + 300*mib + 0x100
	for i := uint64(0); i < 9; i++ {
		if err := p.add(s, &block{id: 400 + i, start: tiny + i, end: tiny + i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	check(tiny+8, 408, true, 5)
	check(tiny+7, 407, true, 5)
	check(tiny+9, 0, false, 5)
	checkIndex(t, s, p, nil)

	// Removing the 2 KiB blocks merges the bucket again: no entry below it.
	bucket := at >> levelShift[0]
	for i := uint64(0); i < 20; i++ {
		if err := p.remove(s, p.blocks[100+i]); err != nil {
			t.Fatal(err)
		}
	}
	for k := range s.m {
		if k.Level > 0 && k.Index>>(levelShift[0]-levelShift[k.Level]) == bucket {
			t.Fatalf("entry %+v left behind", k)
		}
	}
	check(at+99, 2, true, 1)
	checkIndex(t, s, p, nil)
	if err := p.clear(s); err != nil {
		t.Fatal(err)
	}
	if len(s.m) != 0 || len(p.roots) != 0 || p.cells != 0 {
		t.Errorf("after clear: %d entries, %d roots, %d cells", len(s.m), len(p.roots), p.cells)
	}
}

// TestIndexRandom adds, moves and removes random blocks of 1 byte to 3 MiB
// in a 4 MiB window and checks the kernel entries and lookups after every
// change, with and without failing writes.
func TestIndexRandom(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			s := newFakeStore()
			p := newProcIndex(9)
			const base, window = 0x7f0000000000 - 1<<20, 4 << 20
			sizes := []uint64{1, 7, 16, 64, 100, 1000, 4096, 20000, 1 << 16, 3 << 20}
			// Every block's ends every 500 changes, 20 blocks' ends and 50
			// random addresses after each other change.
			addrs := func(op int) []uint64 {
				var out []uint64
				for _, b := range p.blocks {
					if op%500 == 0 || rng.IntN(len(p.blocks)) < 20 {
						out = append(out, b.start, b.end-1, b.end, b.start-1)
					}
				}
				for range 50 {
					out = append(out, base+rng.Uint64N(window))
				}
				return out
			}
			var failed int
			for op := 0; op < 3000; op++ {
				if failing && rng.IntN(5) == 0 {
					s.failAfter = 1 + rng.IntN(4)
				}
				ids := slices.Collect(func(yield func(uint64) bool) {
					for id := range p.blocks {
						if !yield(id) {
							return
						}
					}
				})
				slices.Sort(ids)
				var err error
				switch r := rng.IntN(10); {
				case r < 6 || len(ids) == 0:
					size := sizes[rng.IntN(len(sizes))]
					start := base + rng.Uint64N(window-size)
					b := &block{id: uint64(op + 1000), start: start, end: start + size}
					err = p.add(s, b)
					if errors.Is(err, ErrOverlap) {
						err = nil
					}
					if err != nil && p.blocks[b.id] != nil {
						t.Fatalf("block %d kept after failed add", b.id)
					}
				case r < 8:
					err = p.remove(s, p.blocks[ids[rng.IntN(len(ids))]])
				default:
					id := ids[rng.IntN(len(ids))]
					old := p.blocks[id]
					if err = p.remove(s, old); err == nil {
						off := rng.Uint64N(256)
						moved := &block{id: id, start: old.start + off, end: old.end + off}
						if err = p.add(s, moved); errors.Is(err, ErrOverlap) {
							err = p.add(s, old)
						}
					}
				}
				if err != nil {
					if !failing || !errors.Is(err, errFakeFull) {
						t.Fatalf("op %d: %v", op, err)
					}
					failed++
				}
				s.failAfter = 0
				checkIndex(t, s, p, addrs(op))
			}
			t.Logf("%d blocks, %d cells, %d failed changes", len(p.blocks), p.cells, failed)
			if failing && failed == 0 {
				t.Error("no write failed")
			}
		})
	}
}
