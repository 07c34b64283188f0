package tracer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// lookup is the Go twin of match() in bpf/strata.bpf.c, for tests.
func lookup(kv map[strataCellKey]strataRangeSet, runs map[uint32]strataBlockRange, tgid uint32, addr uint64) (strataBlockRange, bool) {
	rs, ok := kv[strataCellKey{Tgid: tgid, Level: levelBucket, Index: addr >> bucketShift}]
	if !ok {
		return strataBlockRange{}, false
	}
	if rs.Flags&cellSplit != 0 {
		if rs, ok = kv[strataCellKey{Tgid: tgid, Level: levelGranule, Index: addr >> granuleShift}]; !ok {
			return strataBlockRange{}, false
		}
	}
	if rs.Flags&cellRun != 0 {
		ref := runRef(&rs)
		pg := addr >> pageShift & (fences - 2)
		lo, hi := ref.Fence[pg], min(ref.Fence[pg+1]+1, rs.N)
		for lo < hi {
			mid := (lo + hi) / 2
			if runs[ref.Off+mid].End <= addr {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if r := runs[ref.Off+lo]; lo < rs.N && addr >= r.Start && addr < r.End {
			return r, true
		}
		return strataBlockRange{}, false
	}
	for j := uint32(0); j < rs.N && j < rangeSlots; j++ {
		if r := rs.Ranges[j]; addr >= r.Start && addr < r.End {
			return r, true
		}
	}
	return strataBlockRange{}, false
}

// fakeStore is the kernel's cells and runs maps as Go maps. It refuses a
// write to a run entry that a lookup may be reading: one listed by a cell
// now, or by a cell replaced or deleted since the last grace period. With
// failAfter > 0 the failAfter-th write from now on fails, as a full kernel
// map would.
type fakeStore struct {
	m         map[strataCellKey]strataRangeSet
	runs      map[uint32]strataBlockRange
	hot       map[uint32]bool
	failAfter int
	graces    int
	writes    int // puts, deletes and run writes
}

var errFakeFull = errors.New("fake map full")

func newFakeStore() *fakeStore {
	return &fakeStore{m: map[strataCellKey]strataRangeSet{}, runs: map[uint32]strataBlockRange{}, hot: map[uint32]bool{}}
}

func (f *fakeStore) fail() bool {
	f.writes++
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
	f.markListed(v)
	return nil
}

func (f *fakeStore) markListed(v *strataRangeSet) {
	if v.Flags&cellRun != 0 {
		for j := range v.N {
			f.hot[runRef(v).Off+j] = true
		}
	}
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

func (f *fakeStore) putRun(off uint32, entries []strataBlockRange) error {
	if f.fail() {
		return errFakeFull
	}
	for j, e := range entries {
		if f.hot[off+uint32(j)] {
			return fmt.Errorf("run entry %d written while a lookup may read it", off+uint32(j))
		}
		f.runs[off+uint32(j)] = e
	}
	return nil
}

// grace is the fake grace period: lookups that started before it are over.
func (f *fakeStore) grace() error {
	f.graces++
	f.hot = map[uint32]bool{}
	for _, v := range f.m {
		f.markListed(&v)
	}
	return nil
}

// checkIndex compares the store with the Go side of p, entry by entry, and
// every given address's lookup with a linear search of p's blocks.
func checkIndex(t *testing.T, s *fakeStore, p *procIndex, addrs []uint64) {
	t.Helper()
	want := map[strataCellKey]bool{}
	segs := map[uint32]segment{}
	leaf := func(k strataCellKey, rs strataRangeSet, bs []*block) {
		if rs.Flags != 0 || int(rs.N) != len(bs) || len(bs) > rangeSlots {
			t.Fatalf("leaf %+v of %d blocks written as n %d flags %d", k, len(bs), rs.N, rs.Flags)
		}
	}
	for i, c := range p.buckets {
		k := p.bucketKey(i)
		want[k] = true
		rs, ok := s.m[k]
		switch {
		case !ok || !c.inKernel || len(c.blocks) == 0:
			t.Fatalf("bucket %+v (%d blocks, in kernel %v) missing or empty", k, len(c.blocks), c.inKernel)
		case c.grans == nil:
			leaf(k, rs, c.blocks)
			continue
		case rs.Flags != cellSplit || rs.N != 0:
			t.Fatalf("split bucket %+v written as %+v", k, rs)
		}
		for g, gr := range c.grans {
			k := p.granuleKey(g)
			want[k] = true
			rs, ok := s.m[k]
			if !ok || !gr.inKernel || len(gr.blocks) == 0 || !slices.IsSortedFunc(gr.blocks, func(a, b *block) int { return cmp.Compare(a.start, b.start) }) {
				t.Fatalf("granule %+v (%d blocks, in kernel %v) missing, empty or unsorted", k, len(gr.blocks), gr.inKernel)
			}
			if gr.run == nil {
				leaf(k, rs, gr.blocks)
				continue
			}
			ref := runRef(&rs)
			if rs.Flags != cellRun || int(rs.N) != len(gr.blocks) || ref.Off != gr.run.seg.off || ref.Fence != fencesOf(g, gr.blocks) ||
				gr.run.listed != len(gr.blocks) || gr.run.hw > gr.run.seg.cap() || len(gr.blocks) > gr.run.hw {
				t.Fatalf("run granule %+v of %d blocks written as %+v (run %+v)", k, len(gr.blocks), rs, gr.run)
			}
			for j, b := range gr.blocks {
				if e := s.runs[ref.Off+uint32(j)]; e.Start != b.start || e.End != b.end || e.BlockId != b.id || e.Slot != b.slot {
					t.Fatalf("run of granule %+v entry %d %+v, block %+v", k, j, e, *b)
				}
			}
			segs[gr.run.seg.off] = gr.run.seg
		}
	}
	for k := range s.m {
		if k.Tgid == p.tgid && !want[k] {
			t.Fatalf("kernel entry %+v unknown to the index", k)
		}
	}
	if p.cells != len(want) {
		t.Fatalf("index counts %d cells, has %d", p.cells, len(want))
	}
	// Segments in use, free and in limbo tile the array exactly.
	used := make([]int, 1<<p.runs.order)
	mark := func(s segment) {
		for j := s.off; j < s.off+uint32(s.cap()); j++ {
			used[j]++
		}
	}
	inUse := 0
	for _, sg := range segs {
		mark(sg)
		inUse += sg.cap()
	}
	for _, sg := range p.runs.limbo {
		mark(sg)
		inUse += sg.cap()
	}
	for o, fr := range p.runs.free {
		for off := range fr {
			mark(segment{off: off, order: uint8(o)})
		}
	}
	if j := slices.IndexFunc(used, func(n int) bool { return n != 1 }); j >= 0 || inUse != p.runs.used {
		t.Fatalf("run entry %d covered by %d segments; %d entries in use, pool says %d", j, used[max(j, 0)], inUse, p.runs.used)
	}
	// Every range listed once, none overlapping another; weak ranges sorted
	// per block, counting into their block's slot.
	var all []span
	listed := make(map[*block]bool, len(p.blocks)+p.weakN)
	for _, b := range p.blocks {
		all = append(all, span{b.id, b.start, b.end})
		listed[b] = true
	}
	weak := 0
	for id, l := range p.weak {
		b := p.blocks[id]
		if len(l) == 0 || b == nil {
			t.Fatalf("weak ranges of block %d: %d, block registered %v", id, len(l), b != nil)
		}
		for j, w := range l {
			if !w.weak || w.id != id || w.slot != b.slot || j > 0 && l[j-1].end > w.start {
				t.Fatalf("weak range %d of block %d: %+v (block slot %d)", j, id, *w, b.slot)
			}
			all = append(all, span{w.id, w.start, w.end})
			listed[w] = true
		}
		weak += len(l)
	}
	if weak != p.weakN {
		t.Fatalf("%d weak ranges, index counts %d", weak, p.weakN)
	}
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for j := 1; j < len(all); j++ {
		if all[j].start < all[j-1].end {
			t.Fatalf("ranges overlap: %+v and %+v", all[j-1], all[j])
		}
	}
	for i, c := range p.buckets {
		for _, b := range c.blocks {
			if !listed[b] {
				t.Fatalf("bucket %d lists a range the index does not hold: %+v", i, *b)
			}
		}
	}
	for _, a := range addrs {
		var id uint64
		j, _ := slices.BinarySearchFunc(all, a, func(sp span, a uint64) int {
			if sp.end <= a {
				return -1
			}
			return 1
		})
		found := j < len(all) && all[j].start <= a
		if found {
			id = all[j].id
		}
		r, ok := lookup(s.m, s.runs, p.tgid, a)
		if ok != found || (ok && r.BlockId != id) {
			t.Fatalf("lookup %#x: block %d %v, want %d %v", a, r.BlockId, ok, id, found)
		}
	}
}

func newTestIndex(s *fakeStore, tgid uint32, runEntries uint32) *procIndex {
	return newProcIndex(tgid, newRunPool(runEntries, s.grace))
}

func TestIndexGranulesAndRuns(t *testing.T) {
	const mib = 1 << 20
	s := newFakeStore()
	p := newTestIndex(s, 7, 1<<12)
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
		t.Fatalf("%d entries, want 4 buckets", len(s.m))
	}
	check := func(addr uint64, want uint64, ok bool) {
		t.Helper()
		r, found := lookup(s.m, s.runs, 7, addr)
		if found != ok || (ok && r.BlockId != want) {
			t.Errorf("lookup %#x: %v %d, want %v %d", addr, found, r.BlockId, ok, want)
		}
	}
	check(base+mib, 1, true)
	check(base+mib-1, 0, false)
	check(base+6*mib-1, 1, true)
	check(base+6*mib+99, 2, true)
	check(base+6*mib+100, 0, false)
	if _, ok := lookup(s.m, s.runs, 8, base+mib); ok {
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

	// 20 blocks of 2 KiB, four per 64 KiB granule: the bucket splits.
	at := base + 6*mib
	const stride = 16 << 10
	for i := uint64(0); i < 20; i++ {
		b := &block{id: 100 + i, start: at + stride*(i+1), end: at + stride*(i+1) + 2048, slot: uint32(100 + i)}
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
	}
	if rs := s.m[p.bucketKey(at>>bucketShift)]; rs.Flags != cellSplit {
		t.Fatalf("bucket not split: %+v", rs)
	}
	check(at+99, 2, true)
	check(at+stride*5+10, 104, true)
	check(at+stride*5+2048, 0, false)
	check(base+5*mib, 1, true)
	// 64 blocks of 64 bytes in one page, and 9 blocks of a byte: runs.
	pg := base + 200*mib
	for i := uint64(0); i < 64; i++ {
		if err := p.add(s, &block{id: 300 + i, start: pg + 64*i, end: pg + 64*i + 64}); err != nil {
			t.Fatal(err)
		}
	}
	if rs := s.m[p.granuleKey(pg>>granuleShift)]; rs.Flags != cellRun || rs.N != 64 {
		t.Fatalf("granule not a run of 64: %+v", rs)
	}
	check(pg+64*37+63, 337, true)
	check(pg+64*64, 0, false)
	check(pg-1, 0, false)
	tiny := base + 300*mib + 0x100
	for i := uint64(0); i < 9; i++ {
		if err := p.add(s, &block{id: 400 + i, start: tiny + i, end: tiny + i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	check(tiny+8, 408, true)
	check(tiny+7, 407, true)
	check(tiny+9, 0, false)
	checkIndex(t, s, p, nil)

	// Removing the 2 KiB blocks merges the bucket: no granule left in it.
	bk := at >> bucketShift
	for i := uint64(0); i < 20; i++ {
		if err := p.remove(s, p.blocks[100+i]); err != nil {
			t.Fatal(err)
		}
	}
	for k := range s.m {
		if k.Level == levelGranule && k.Index>>(bucketShift-granuleShift) == bk {
			t.Fatalf("granule %+v left behind", k)
		}
	}
	check(at+99, 2, true)
	checkIndex(t, s, p, nil)
	// Freeing blocks of a run releases its segment after a grace period.
	for i := uint64(0); i < 64; i++ {
		if err := p.remove(s, p.blocks[300+i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.runs.limbo) == 0 {
		t.Fatal("no run segment in limbo")
	}
	if err := p.runs.reclaim(); err != nil || len(p.runs.limbo) != 0 || s.graces == 0 {
		t.Fatalf("reclaim: %v, limbo %d, graces %d", err, len(p.runs.limbo), s.graces)
	}
	checkIndex(t, s, p, nil)
	if err := p.clear(s); err != nil {
		t.Fatal(err)
	}
	if len(s.m) != 0 || len(p.buckets) != 0 || p.cells != 0 {
		t.Errorf("after clear: %d entries, %d buckets, %d cells", len(s.m), len(p.buckets), p.cells)
	}
	if err := p.runs.reclaim(); err != nil || p.runs.used != 0 {
		t.Errorf("after clear and reclaim: %d run entries in use, %v", p.runs.used, err)
	}
}

// TestIndexRandom adds, moves and removes random blocks of 1 byte to 3 MiB
// in a 4 MiB window, and replaces random blocks' weak ranges, and checks
// the kernel entries and lookups after every change, with and without
// failing writes, with a run pool small enough to fill. Without failures
// it also checks what the weak ranges cover: what was asked for less what
// other ranges held, and less what a block registered or moved later took.
func TestIndexRandom(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			s := newFakeStore()
			// Failed writes with room in the run pool; without, a pool
			// small enough to fill. A write failing in the resync after
			// the pool was full leaves its bucket unmatched, which the
			// checks cannot tell from a wrong index.
			pool := uint32(1 << 9)
			if failing {
				pool = 1 << 13
			}
			p := newTestIndex(s, 9, pool)
			const base, window = 0x7f0000000000 - 1<<20, 4 << 20
			sizes := []uint64{1, 7, 16, 64, 100, 1000, 4096, 20000, 1 << 16, 3 << 20}
			// Every range's ends every 500 changes, 20 ranges' ends and 50
			// random addresses after each other change.
			addrs := func(op int) []uint64 {
				var out []uint64
				pick := func(b *block) {
					if op%500 == 0 || rng.IntN(len(p.blocks)+p.weakN) < 20 {
						out = append(out, b.start, b.end-1, b.end, b.start-1)
					}
				}
				for _, id := range slices.Sorted(maps.Keys(p.blocks)) {
					pick(p.blocks[id])
					for _, w := range p.weak[id] {
						pick(w)
					}
				}
				for range 50 {
					out = append(out, base+rng.Uint64N(window))
				}
				return out
			}
			var failed, full, weakSets int
			for op := 0; op < 4000; op++ {
				if failing && rng.IntN(5) == 0 {
					s.failAfter = 1 + rng.IntN(4)
				}
				ids := slices.Sorted(maps.Keys(p.blocks))
				var weakBefore []span
				if !failing {
					weakBefore = spansOf(p, func(b *block) bool { return b.weak })
				}
				var took *block // a strong range added: it takes weak pages
				lost := p.weakLost
				var err error
				switch r := rng.IntN(12); {
				case r < 6 || len(ids) == 0:
					size := sizes[rng.IntN(len(sizes))]
					start := base + rng.Uint64N(window-size)
					b := &block{id: uint64(op + 1000), start: start, end: start + size, slot: uint32(op)}
					err = p.add(s, b)
					if errors.Is(err, ErrOverlap) {
						err = nil
					} else {
						took = b
					}
					if err != nil && p.blocks[b.id] != nil {
						t.Fatalf("block %d kept after failed add", b.id)
					}
				case r < 8:
					err = p.free(s, p.blocks[ids[rng.IntN(len(ids))]])
				case r < 10:
					id := ids[rng.IntN(len(ids))]
					old := p.blocks[id]
					off := rng.Uint64N(256)
					_, err = p.move(s, old, old.start+off, old.end+off)
					if errors.Is(err, ErrOverlap) {
						err = nil
					}
					if b := p.blocks[id]; b != nil && b != old {
						took = b
					}
				default:
					id := ids[rng.IntN(len(ids))]
					var ranges []Range
					at := base + rng.Uint64N(window/2)
					for range rng.IntN(20) {
						at += rng.Uint64N(20000)
						size := sizes[rng.IntN(len(sizes)-1)]
						if at+size > base+window {
							break
						}
						ranges = append(ranges, Range{at, at + size})
						at += size
					}
					others := spansOf(p, func(b *block) bool { return !b.weak || b.id != id })
					if err = p.setWeak(s, id, p.blocks[id].slot, ranges); err == nil && !failing {
						weakSets++
						want := minusSpans(spansOfRanges(id, ranges), others)
						if got := spansOf(p, func(b *block) bool { return b.weak && b.id == id }); !slices.Equal(covered(got), covered(want)) {
							t.Fatalf("op %d: weak ranges of block %d cover %v, want %v", op, id, covered(got), covered(want))
						}
					}
				}
				switch {
				case errors.Is(err, ErrIndexFull):
					full++
				case err != nil && failing && errors.Is(err, errFakeFull):
					failed++
				case err != nil:
					t.Fatalf("op %d: %v", op, err)
				case !failing && took != nil && p.blocks[took.id] == took && p.weakLost == lost:
					if got, want := covered(spansOf(p, func(b *block) bool { return b.weak })),
						covered(minusSpans(weakBefore, []span{{took.id, took.start, took.end}})); !slices.Equal(got, want) {
						t.Fatalf("op %d: after block %d took [%#x,%#x) weak ranges cover %v, want %v", op, took.id, took.start, took.end, got, want)
					}
				}
				s.failAfter = 0
				if rng.IntN(20) == 0 {
					if err := p.runs.reclaim(); err != nil {
						t.Fatal(err)
					}
				}
				checkIndex(t, s, p, addrs(op))
			}
			t.Logf("%d blocks, %d weak ranges, %d cells, %d run entries, %d weak sets checked, %d failed changes, %d refused (pool full), %d weak parts lost, %d grace periods",
				len(p.blocks), p.weakN, p.cells, p.runs.used, weakSets, failed, full, p.weakLost, s.graces)
			if failing && failed == 0 {
				t.Error("no write failed")
			}
			if !failing && (weakSets < 100 || p.weakN == 0) {
				t.Errorf("%d weak sets checked, %d weak ranges at the end: the test lost its subject", weakSets, p.weakN)
			}
		})
	}
}

// spansOf lists the ranges of p that keep says, sorted by start.
func spansOf(p *procIndex, keep func(*block) bool) []span {
	var out []span
	for _, b := range p.blocks {
		if keep(b) {
			out = append(out, span{b.id, b.start, b.end})
		}
	}
	for _, l := range p.weak {
		for _, w := range l {
			if keep(w) {
				out = append(out, span{w.id, w.start, w.end})
			}
		}
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	return out
}

func spansOfRanges(id uint64, rs []Range) []span {
	out := make([]span, len(rs))
	for i, r := range rs {
		out[i] = span{id, r.Start, r.End}
	}
	return out
}

// minusSpans is every byte of a that no span of b holds, a span per piece.
func minusSpans(a, b []span) []span {
	var out []span
	for _, x := range a {
		pieces := []span{x}
		for _, y := range b {
			var next []span
			for _, q := range pieces {
				if y.end <= q.start || y.start >= q.end {
					next = append(next, q)
					continue
				}
				if q.start < y.start {
					next = append(next, span{q.id, q.start, y.start})
				}
				if y.end < q.end {
					next = append(next, span{q.id, y.end, q.end})
				}
			}
			pieces = next
		}
		out = append(out, pieces...)
	}
	return out
}

// covered merges spans that touch: the bytes they cover, as [start, end)
// pairs, whatever the pieces.
func covered(sp []span) []uint64 {
	sp = slices.Clone(sp)
	slices.SortFunc(sp, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var out []uint64
	for _, x := range sp {
		if n := len(out); n > 0 && out[n-1] >= x.start {
			out[n-1] = max(out[n-1], x.end)
			continue
		}
		out = append(out, x.start, x.end)
	}
	return out
}

func TestRunPool(t *testing.T) {
	graces := 0
	rp := newRunPool(256, func() error { graces++; return nil })
	var segs []segment
	for _, n := range []int{1, 16, 17, 40, 100} {
		s, err := rp.alloc(n)
		if err != nil || s.cap() < n || s.cap() < 16 || s.off%uint32(s.cap()) != 0 {
			t.Fatalf("alloc %d: %+v %v", n, s, err)
		}
		segs = append(segs, s)
	}
	// 16+16+32+64+128 = 256: full.
	if _, err := rp.alloc(1); !errors.Is(err, ErrIndexFull) {
		t.Fatalf("alloc in a full pool: %v", err)
	}
	for _, s := range segs {
		rp.release(s)
	}
	if graces != 0 || rp.used != 256 {
		t.Fatalf("released segments reused before a grace period: %d graces, %d used", graces, rp.used)
	}
	// Nothing free: alloc waits for a grace period, and the buddies merge.
	s, err := rp.alloc(256)
	if err != nil || graces != 1 || s.off != 0 || s.cap() != 256 {
		t.Fatalf("alloc after release: %+v %v, %d graces", s, err, graces)
	}
}

// FuzzIndex plays changes decoded from the input (3 bytes each: what
// (register, free, or set up to 15 weak ranges), a size, a position)
// against a small window and checks the kernel entries and lookups after
// each.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 3, 10, 0, 3, 11, 0, 3, 12, 1, 0, 0, 0, 9, 200})
	f.Add([]byte{2, 3, 10, 2, 4, 40, 0x1d, 2, 11, 2, 2, 12, 0x3d, 1, 3, 2, 5, 13, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := newFakeStore()
		p := newTestIndex(s, 3, 1<<8)
		const base = 0x7f0000000000 - 1<<16
		sizes := []uint64{1, 5, 64, 300, 4096, 70000, 3 << 20}
		for i := 0; i+2 < len(ops) && i < 3*300; i += 3 {
			size := sizes[int(ops[i+1])%len(sizes)]
			start := base + uint64(ops[i+2])*509 + uint64(ops[i+1])*17
			var err error
			switch ids := slices.Sorted(maps.Keys(p.blocks)); {
			case ops[i]%4 > 1 || len(ids) == 0:
				err = p.add(s, &block{id: uint64(i), start: start, end: start + size, slot: uint32(i)})
			case ops[i]%4 == 1:
				// Weak ranges of size bytes every 2*size bytes from start.
				b := p.blocks[ids[int(ops[i+2])%len(ids)]]
				var rs []Range
				for k := range uint64(ops[i] >> 2 % 16) {
					rs = append(rs, Range{start + 2*k*size, start + (2*k+1)*size})
				}
				err = p.setWeak(s, b.id, b.slot, rs)
			default:
				err = p.free(s, p.blocks[ids[int(ops[i+2])%len(ids)]])
			}
			if err != nil && !errors.Is(err, ErrOverlap) && !errors.Is(err, ErrIndexFull) {
				t.Fatal(err)
			}
			if ops[i+1]%8 == 0 {
				p.runs.reclaim()
			}
			checkIndex(t, s, p, []uint64{start, start + size - 1, start + size, start - 1, base + uint64(ops[i+2])<<12})
		}
	})
}
