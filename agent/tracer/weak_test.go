package tracer

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestIndexWeakRanges walks the rules of weak ranges through one index:
// they are cut to what no other range holds, give way to a block's range
// registered or moved over them, are replaced as a whole, and leave with
// their block.
func TestIndexWeakRanges(t *testing.T) {
	const kib = 1 << 10
	s := newFakeStore()
	p := newTestIndex(s, 7, 1<<12)
	base := uint64(0x7f0000000000)
	add := func(id uint64, start, end uint64) *block {
		t.Helper()
		b := &block{id: id, start: base + start, end: base + end, slot: uint32(id)}
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	setWeak := func(id uint64, rs ...Range) {
		t.Helper()
		for i := range rs {
			rs[i].Start += base
			rs[i].End += base
		}
		if err := p.setWeak(s, id, uint32(id), rs); err != nil {
			t.Fatal(err)
		}
		checkIndex(t, s, p, nil)
	}
	// want checks the weak ranges of block id, as offsets from base.
	want := func(id uint64, rs ...Range) {
		t.Helper()
		got := p.weak[id]
		ok := len(got) == len(rs)
		for i := 0; ok && i < len(rs); i++ {
			ok = got[i].start == base+rs[i].Start && got[i].end == base+rs[i].End
		}
		if !ok {
			var g []Range
			for _, w := range got {
				g = append(g, Range{w.start - base, w.end - base})
			}
			t.Fatalf("weak ranges of block %d: %#x, want %#x", id, g, rs)
		}
	}
	// at checks the block a lookup of base+off finds.
	at := func(off uint64, id uint64) {
		t.Helper()
		r, ok := lookup(s.m, s.runs, 7, base+off)
		if id == 0 && ok || id != 0 && (!ok || r.BlockId != id || r.Slot != uint32(id)) {
			t.Fatalf("lookup +%#x: block %d (slot %d) %v, want %d", off, r.BlockId, r.Slot, ok, id)
		}
	}

	add(1, 0, 64*kib)
	add(2, 1024*kib, 1028*kib)
	add(3, 4096*kib, 4100*kib)
	// Block 1's extents: one beside its own range, one over block 2.
	setWeak(1, Range{64 * kib, 128 * kib}, Range{1016 * kib, 1040 * kib})
	want(1, Range{64 * kib, 128 * kib}, Range{1016 * kib, 1024 * kib}, Range{1028 * kib, 1040 * kib})
	at(100*kib, 1)
	at(1020*kib, 1)
	at(1025*kib, 2)
	at(1039*kib, 1)
	at(1040*kib, 0)
	// Block 3's extent overlaps block 1's: the part block 1 holds is left out.
	setWeak(3, Range{100 * kib, 200 * kib})
	want(3, Range{128 * kib, 200 * kib})
	at(127*kib, 1)
	at(128*kib, 3)
	// A block registered over both weak ranges takes its pages of each.
	add(4, 120*kib, 130*kib)
	want(1, Range{64 * kib, 120 * kib}, Range{1016 * kib, 1024 * kib}, Range{1028 * kib, 1040 * kib})
	want(3, Range{130 * kib, 200 * kib})
	at(119*kib, 1)
	at(125*kib, 4)
	at(130*kib, 3)
	checkIndex(t, s, p, nil)
	// A moved block takes pages too, and its own weak ranges stay.
	if gone, err := p.move(s, p.blocks[2], base+1032*kib, base+1036*kib); err != nil || gone {
		t.Fatalf("move: gone %v, %v", gone, err)
	}
	want(1, Range{64 * kib, 120 * kib}, Range{1016 * kib, 1024 * kib}, Range{1028 * kib, 1032 * kib}, Range{1036 * kib, 1040 * kib})
	at(1026*kib, 0) // block 2's old place: held by nobody, weak ranges never grow back
	at(1033*kib, 2)
	if gone, err := p.move(s, p.blocks[3], base+500*kib, base+504*kib); err != nil || gone {
		t.Fatalf("move: gone %v, %v", gone, err)
	}
	want(3, Range{130 * kib, 200 * kib})
	at(150*kib, 3)
	checkIndex(t, s, p, nil)
	// A strong range is refused only by another strong range.
	if err := p.add(s, &block{id: 9, start: base + 60*kib, end: base + 70*kib, slot: 9}); !errors.Is(err, ErrOverlap) {
		t.Fatalf("register over block 1's range: %v, want ErrOverlap", err)
	}
	want(1, Range{64 * kib, 120 * kib}, Range{1016 * kib, 1024 * kib}, Range{1028 * kib, 1032 * kib}, Range{1036 * kib, 1040 * kib})

	// The same extents again: nothing is written.
	writes := s.writes
	setWeak(3, Range{100 * kib, 200 * kib})
	if s.writes != writes {
		t.Fatalf("the same weak ranges again: %d writes, want none", s.writes-writes)
	}
	want(3, Range{130 * kib, 200 * kib})
	// A new walk replaces the old one as a whole.
	setWeak(3, Range{300 * kib, 304 * kib}, Range{308 * kib, 312 * kib})
	want(3, Range{300 * kib, 304 * kib}, Range{308 * kib, 312 * kib})
	at(150*kib, 0)
	// Bad input changes nothing.
	for _, rs := range [][]Range{
		{{base + 8*kib, base + 4*kib}},
		{{base + 300*kib, base + 308*kib}, {base + 304*kib, base + 320*kib}},
		{{base + 400*kib, base + 404*kib}, {base + 300*kib, base + 304*kib}},
		{{base, maxUserAddr + 1}},
		{{base, base + maxWeakBytes + 1}},
	} {
		if err := p.setWeak(s, 3, 3, rs); !errors.Is(err, ErrBadRange) {
			t.Fatalf("set weak %#x: %v, want ErrBadRange", rs, err)
		}
	}
	want(3, Range{300 * kib, 304 * kib}, Range{308 * kib, 312 * kib})
	// nil drops them; freeing a block drops its weak ranges with its range.
	setWeak(3)
	want(3)
	if err := p.free(s, p.blocks[1]); err != nil {
		t.Fatal(err)
	}
	want(1)
	at(100*kib, 0)
	at(30*kib, 0)
	checkIndex(t, s, p, nil)
	if p.weakN != 0 {
		t.Fatalf("%d weak ranges counted, none listed", p.weakN)
	}
}

// TestIndexWeakRunsInPlace: with the run pool full, taking a weak range
// out of a dense granule rewrites its run in place after a grace period,
// so a block registered over it is never refused for want of room.
func TestIndexWeakRunsInPlace(t *testing.T) {
	s := newFakeStore()
	p := newTestIndex(s, 7, 16) // room for one run of 16
	base := uint64(0x7f0000000000)
	// 12 blocks of 64 bytes in one page, and between them block 100's
	// weak ranges: a run of 23 ranges needs 32 entries, beyond the pool.
	var weak []Range
	for i := uint64(0); i < 12; i++ {
		b := &block{id: i + 1, start: base + 128*i, end: base + 128*i + 64, slot: uint32(i + 1)}
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
		if i < 11 {
			weak = append(weak, Range{base + 128*i + 64, base + 128*i + 128})
		}
	}
	if err := p.add(s, &block{id: 100, start: base + 1<<20, end: base + 1<<20 + 64, slot: 100}); err != nil {
		t.Fatal(err)
	}
	if err := p.setWeak(s, 100, 100, weak); !errors.Is(err, ErrIndexFull) {
		t.Fatalf("23 ranges in a pool of 16: %v, want ErrIndexFull", err)
	}
	if len(p.weak[100]) != 0 {
		t.Fatalf("%d weak ranges left after a failed set", len(p.weak[100]))
	}
	checkIndex(t, s, p, nil)
	// Four weak ranges fit: 16 ranges in the granule's run of 16.
	if err := p.setWeak(s, 100, 100, weak[:4]); err != nil {
		t.Fatal(err)
	}
	if p.runs.used != 16 {
		t.Fatalf("%d run entries in use, want the pool's 16", p.runs.used)
	}
	graces := s.graces
	// A block over the second weak range: 16 ranges still, rewritten in place.
	if err := p.add(s, &block{id: 13, start: weak[1].Start, end: weak[1].End, slot: 13}); err != nil {
		t.Fatalf("register over a weak range with the pool full: %v", err)
	}
	if s.graces == graces {
		t.Fatal("the run was rewritten without waiting for a grace period")
	}
	checkIndex(t, s, p, []uint64{weak[0].Start, weak[1].Start, weak[2].Start, weak[3].End - 1, weak[4].Start})
}

// TestWeakRangesCountFaults: the real BPF tracer counts faults in a
// block's weak ranges into the block's counters; a block registered over
// a weak range takes its pages; freeing the block drops them all.
func TestWeakRangesCountFaults(t *testing.T) {
	tr := loadTracer(t, Config{SampleEvery: 1, NoMajorFaults: true})
	c := startChild(t, 64)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	pages := func(a, b int) Range { return Range{c.page(a), c.page(b)} }
	// Block 1: its array on pages [0,2), its walk's extents on [4,8),
	// [10,11) and [20,30); block 2's array on [24,26) inside the last.
	if err := tr.RegisterBlock(c.pid, 1, c.page(0), c.page(2)); err != nil {
		t.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 2, c.page(24), c.page(26)); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetWeakRanges(c.pid, 1, []Range{pages(4, 8), pages(10, 11), pages(20, 30)}); err != nil {
		t.Fatal(err)
	}
	if err := tr.SetWeakRanges(c.pid, 3, []Range{pages(40, 41)}); !errors.Is(err, ErrUnknownBlock) {
		t.Fatalf("weak ranges of an unregistered block: %v", err)
	}
	if st, _ := tr.Stats(); st.Blocks != 2 || st.WeakRanges != 4 {
		t.Fatalf("stats %+v, want 2 blocks and 4 weak ranges ([20,30) cut around block 2)", st)
	}
	c.do("w 0 64")
	one, two := counters(t, tr, c.pid, 1), counters(t, tr, c.pid, 2)
	if one != (Counters{Write: 2 + 4 + 1 + 8}) || two != (Counters{Write: 2}) {
		t.Fatalf("after writing every page: block 1 %+v (want 15 writes), block 2 %+v (want 2)", one, two)
	}
	// Sampled events name the block too.
	got := map[uint64]int{}
	for range 17 {
		ev := <-tr.Events()
		got[ev.BlockID]++
	}
	if got[1] != 15 || got[2] != 2 {
		t.Fatalf("events per block %v, want 15 of block 1 and 2 of block 2", got)
	}
	// Block 3 registered over pages [5,6) of block 1's extent, block 2
	// moved to [10,12): they take those pages.
	if err := tr.RegisterBlock(c.pid, 3, c.page(5), c.page(6)); err != nil {
		t.Fatalf("register over a weak range: %v", err)
	}
	if err := tr.MoveBlock(c.pid, 2, c.page(10), c.page(12)); err != nil {
		t.Fatalf("move over a weak range: %v", err)
	}
	c.do("d")
	c.do("w 0 64")
	one, two, three := counters(t, tr, c.pid, 1), counters(t, tr, c.pid, 2), counters(t, tr, c.pid, 3)
	// Block 1: 2 + 3 + 0 + 8 (pages 24 and 25, which block 2 left, stay out).
	if one.Write-15 != 13 || two.Write-2 != 2 || three.Write != 1 {
		t.Fatalf("after the moves: block 1 +%d writes (want 13), block 2 +%d (want 2), block 3 %d (want 1)", one.Write-15, two.Write-2, three.Write)
	}
	// Freeing block 1 drops its weak ranges: their faults count nowhere.
	final, err := tr.FreeBlock(c.pid, 1)
	if err != nil || final.Write != 28 {
		t.Fatalf("free block 1: %+v %v, want 28 writes", final, err)
	}
	if st, _ := tr.Stats(); st.WeakRanges != 0 || st.Blocks != 2 {
		t.Fatalf("stats after free %+v", st)
	}
	before, _ := tr.Stats()
	c.do("d")
	c.do("w 0 64")
	after, _ := tr.Stats()
	if m := after.MatchedFaults - before.MatchedFaults; m != 3 {
		t.Fatalf("%d matched faults after the free, want 3 (blocks 2 and 3)", m)
	}
}

// BenchmarkSetWeakRanges measures what mirroring a walk costs the agent:
// setting a walk of 65,536 one-page extents a page apart (the hook's cap)
// as a block's weak ranges on the real maps, and replacing it with the
// next walk's, each extent moved by a page (nothing in common). It
// reports microseconds per extent for each, beside registering the same
// number of one-page blocks, in the same run.
func BenchmarkSetWeakRanges(b *testing.B) {
	tr := loadTracer(b, Config{DisableEvents: true, NoMajorFaults: true, MaxBlocks: 1 << 17})
	const n = 65536
	pid := uint32(os.Getpid())
	if err := tr.Track(pid); err != nil {
		b.Fatal(err)
	}
	base := uint64(0x7e0000000000)
	walk := func(shift uint64) []Range {
		rs := make([]Range, n)
		for i := range rs {
			a := base + (2*uint64(i)+shift)<<pageShift
			rs[i] = Range{a, a + 1<<pageShift}
		}
		return rs
	}
	if err := tr.RegisterBlock(pid, 1, base-1<<pageShift, base); err != nil {
		b.Fatal(err)
	}
	first, second := walk(0), walk(1)
	var set, replace, register time.Duration
	for b.Loop() {
		start := time.Now()
		if err := tr.SetWeakRanges(pid, 1, first); err != nil {
			b.Fatal(err)
		}
		set += time.Since(start)
		start = time.Now()
		if err := tr.SetWeakRanges(pid, 1, second); err != nil {
			b.Fatal(err)
		}
		replace += time.Since(start)
		if err := tr.SetWeakRanges(pid, 1, nil); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		for i, r := range first {
			if err := tr.RegisterBlock(pid, uint64(i+2), r.Start, r.End); err != nil {
				b.Fatal(err)
			}
		}
		register += time.Since(start)
		b.StopTimer()
		for i := range first {
			if _, err := tr.FreeBlock(pid, uint64(i+2)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*n) }
	b.ReportMetric(per(set), "µs/extent-set")
	b.ReportMetric(per(replace), "µs/extent-replace")
	b.ReportMetric(per(register), "µs/block-register")
	b.ReportMetric(float64(set)/float64(register), "set/register")
	b.ReportMetric(0, "ns/op")
}
