package stratav1

import (
	"encoding/binary"
	"slices"
	"testing"
)

func TestPageExpandsTHPRun(t *testing.T) {
	r := &PageRun{Vaddr: 0x7f0000200000, Count: 512, State: uint32(PageState_PAGE_STATE_PRESENT | PageState_PAGE_STATE_THP),
		Pfn: 0x40000, Kpageflags: 1<<KPFTHP | 1<<12, FolioPages: 512, Kpagecount: 1, NumaNode: 0}
	head := r.Page(0, 4096)
	if head.PFN != 0x40000 || head.VAddr != 0x7f0000200000 || head.KPageFlags&(1<<KPFCompoundHead) == 0 {
		t.Fatalf("head = %+v", head)
	}
	tail := r.Page(511, 4096)
	if tail.PFN != 0x401ff || tail.VAddr != 0x7f0000200000+511*4096 || tail.KPageFlags&(1<<KPFCompoundTail) == 0 || tail.KPageFlags&(1<<KPFCompoundHead) != 0 {
		t.Fatalf("tail = %+v", tail)
	}
	if got := tail.PAddr(4096); got != 0x401ff000 {
		t.Fatalf("paddr = %#x", got)
	}
	if got, want := KPageFlagNames(tail.KPageFlags), []string{"anon", "compound_tail", "thp"}; !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
}

func TestPageNotPresentHasNoPFN(t *testing.T) {
	r := &PageRun{Vaddr: 0x1000, Count: 3, State: uint32(PageState_PAGE_STATE_SWAPPED), SwapType: 1, SwapOffset: 100, NumaNode: -1}
	p := r.Page(2, 4096)
	if p.PFN != 0 || p.SwapOffset != 102 || p.SwapType != 1 || p.Is(PageState_PAGE_STATE_PRESENT) || !p.Is(PageState_PAGE_STATE_SWAPPED) {
		t.Fatalf("page = %+v", p)
	}
}

func TestPageDeltas(t *testing.T) {
	r := &PageRun{Vaddr: 0x10000, Count: 4, State: uint32(PageState_PAGE_STATE_PRESENT), Pfn: 1000, PfnDeltas: []int64{7, -500, 1}}
	want := []uint64{1000, 1007, 507, 508}
	for i, w := range want {
		if got := r.Page(uint32(i), 4096).PFN; got != w {
			t.Fatalf("Page(%d).PFN = %d, want %d", i, got, w)
		}
	}
	var got []uint64
	r.ForEachPage(4096, func(i uint32, p Page) bool {
		if p.VAddr != 0x10000+uint64(i)*4096 {
			t.Fatalf("page %d vaddr %#x", i, p.VAddr)
		}
		got = append(got, p.PFN)
		return true
	})
	if !slices.Equal(got, want) {
		t.Fatalf("ForEachPage PFNs = %v, want %v", got, want)
	}
	// Without deltas, consecutive; not present, zero.
	c := &PageRun{Count: 3, Pfn: 5}
	var cs []uint64
	c.ForEachPage(4096, func(_ uint32, p Page) bool { cs = append(cs, p.PFN); return len(cs) < 2 })
	if !slices.Equal(cs, []uint64{5, 6}) {
		t.Fatalf("consecutive = %v", cs)
	}
	h := &PageRun{Count: 2}
	h.ForEachPage(4096, func(_ uint32, p Page) bool {
		if p.PFN != 0 {
			t.Fatalf("hole page has pfn %d", p.PFN)
		}
		return true
	})
}

// pfnsOf lists a run's PFNs with ForEachPFN.
func pfnsOf(r *PageRun) []uint64 {
	var out []uint64
	r.ForEachPFN(func(_ uint32, pfn uint64) bool { out = append(out, pfn); return true })
	return out
}

// spansOf expands a run's ForEachPFNSpan stretches into PFNs, and fails t
// when two stretches in a row could have been one.
func spansOf(t *testing.T, r *PageRun) []uint64 {
	t.Helper()
	var out []uint64
	r.ForEachPFNSpan(func(first uint64, n uint32) bool {
		if k := len(out); k > 0 && out[k-1]+1 == first {
			t.Fatalf("span at %#x follows the one before: %v", first, r)
		}
		for j := range uint64(n) {
			out = append(out, first+j)
		}
		return true
	})
	return out
}

func TestPFNRule(t *testing.T) {
	tests := []struct {
		name string
		run  *PageRun
		want []uint64
	}{
		{"consecutive", &PageRun{Count: 4, Pfn: 100}, []uint64{100, 101, 102, 103}},
		{"steps", &PageRun{Count: 4, Pfn: 1000, PfnDeltas: []int64{7, -500, 1}}, []uint64{1000, 1007, 507, 508}},
		{"one page", &PageRun{Count: 1, Pfn: 9}, []uint64{9}},
		{"no pfn", &PageRun{Count: 3}, []uint64{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pfnsOf(tc.run); !slices.Equal(got, tc.want) {
				t.Fatalf("ForEachPFN = %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				if got := tc.run.PFNAt(uint32(i)); got != w {
					t.Fatalf("PFNAt(%d) = %d, want %d", i, got, w)
				}
			}
			var present []uint64
			if tc.run.GetPfn() != 0 {
				present = tc.want
			}
			if got := spansOf(t, tc.run); !slices.Equal(got, present) {
				t.Fatalf("ForEachPFNSpan expands to %v, want %v", got, present)
			}
			pfn, d := EncodePFNs(tc.want)
			if pfn != tc.run.GetPfn() || !slices.Equal(d, tc.run.GetPfnDeltas()) {
				t.Fatalf("EncodePFNs = %d %v, want the run's %d %v", pfn, d, tc.run.GetPfn(), tc.run.GetPfnDeltas())
			}
			if err := tc.run.ValidatePFNs(1 << 20); err != nil {
				t.Fatalf("ValidatePFNs: %v", err)
			}
		})
	}
}

func TestSubAndJoinPFNs(t *testing.T) {
	r := &PageRun{Count: 5, Pfn: 10, PfnDeltas: []int64{1, 1, 40, 1}} // 10 11 12 52 53
	if pfn, d := r.SubPFNs(0, 3); pfn != 10 || d != nil {
		t.Fatalf("head = %d %v, want 10 and no steps", pfn, d)
	}
	if pfn, d := r.SubPFNs(2, 3); pfn != 12 || !slices.Equal(d, []int64{40, 1}) {
		t.Fatalf("tail = %d %v, want 12 [40 1]", pfn, d)
	}
	a, b := &PageRun{Count: 3, Pfn: 10}, &PageRun{Count: 2, Pfn: 52}
	if d, ok := JoinPFNs(a, b); !ok || !slices.Equal(d, []int64{1, 1, 40, 1}) {
		t.Fatalf("join = %v %v, want [1 1 40 1]", d, ok)
	}
	if d, ok := JoinPFNs(a, &PageRun{Count: 2, Pfn: 13}); !ok || d != nil {
		t.Fatalf("consecutive join = %v %v, want no steps", d, ok)
	}
	if d, ok := JoinPFNs(&PageRun{Count: 2}, &PageRun{Count: 1}); !ok || d != nil {
		t.Fatalf("join without PFNs = %v %v", d, ok)
	}
	if _, ok := JoinPFNs(a, &PageRun{Count: 1}); ok {
		t.Fatal("a run with PFNs joined one without")
	}
}

func TestValidatePFNs(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name string
		run  *PageRun
		want string // "" accepted, else the error
	}{
		{"consecutive", &PageRun{Count: 3, Pfn: 5}, ""},
		{"steps", &PageRun{Count: 3, Pfn: 5, PfnDeltas: []int64{-4, limit - 2}}, ""},
		{"no pfn", &PageRun{Count: 3}, ""},
		{"short steps", &PageRun{Count: 3, Pfn: 5, PfnDeltas: []int64{7}}, "1 pfn_deltas for 3 pages, want 2"},
		{"long steps", &PageRun{Count: 2, Pfn: 5, PfnDeltas: []int64{7, 8}}, "2 pfn_deltas for 2 pages, want 1"},
		{"steps, no pfn", &PageRun{Count: 2, PfnDeltas: []int64{3}}, "pfn_deltas on a run without a PFN"},
		{"pfn beyond", &PageRun{Count: 1, Pfn: limit}, "pfn 0x100000 beyond physical memory"},
		{"pfns beyond", &PageRun{Count: 3, Pfn: limit - 2}, "pfns 0xffffe+3 beyond physical memory"},
		{"step to zero", &PageRun{Count: 2, Pfn: 5, PfnDeltas: []int64{-5}}, "pfn_deltas[0] = -5 takes pfn 0x5 outside physical memory"},
		{"step past", &PageRun{Count: 3, Pfn: 5, PfnDeltas: []int64{1, limit - 6}}, "pfn_deltas[1] = 1048570 takes pfn 0x6 outside physical memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run.ValidatePFNs(limit)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPFNDeltasBytes(t *testing.T) {
	for _, d := range [][]int64{nil, {1}, {7, -500, 1, 1 << 40, -(1 << 40)}} {
		b := AppendPFNDeltas(nil, d)
		if len(d) == 0 && b != nil {
			t.Fatalf("no steps encode as %x, want nothing", b)
		}
		got, err := ParsePFNDeltas(b, uint32(len(d)+1))
		if err != nil || !slices.Equal(got, d) {
			t.Fatalf("round trip of %v = %v, %v", d, got, err)
		}
	}
	if _, err := ParsePFNDeltas(AppendPFNDeltas(nil, []int64{1, 2}), 5); err == nil || err.Error() != "decode pfn deltas: 2 steps for 5 pages" {
		t.Fatalf("a step count that does not fit the run: %v", err)
	}
	if _, err := ParsePFNDeltas([]byte{0x80}, 2); err == nil {
		t.Fatal("a truncated varint was accepted")
	}
}

// pfnList makes a run's PFNs from fuzz input: first, then one step per
// byte (-128..127, a step that would reach 0 or below taken as +1).
func pfnList(first uint64, steps []byte) []uint64 {
	pfns := []uint64{first%(1<<40) + 1}
	for _, b := range steps[:min(len(steps), 4095)] {
		last, s := pfns[len(pfns)-1], int64(int8(b))
		if s <= -int64(last) {
			s = 1
		}
		pfns = append(pfns, uint64(int64(last)+s))
	}
	return pfns
}

// FuzzPFNs: whatever PFNs a run has, the builders encode them in the
// canonical form (steps only when not consecutive), every reader gives
// them back, and cutting a run and joining the pieces give the fields the
// builders make of the pieces and of the whole.
func FuzzPFNs(f *testing.F) {
	f.Add(uint64(100), []byte{}, uint16(0))
	f.Add(uint64(100), []byte{1, 1, 1}, uint16(1))
	f.Add(uint64(1000), []byte{7, 0x80, 1, 1, 5}, uint16(2))
	f.Add(uint64(3), []byte{0xfd, 0xff, 1}, uint16(7))
	f.Fuzz(func(t *testing.T, first uint64, steps []byte, cut uint16) {
		pfns := pfnList(first, steps)
		n := uint32(len(pfns))
		pfn, d := EncodePFNs(pfns)
		consecutive := true
		for i := 1; i < len(pfns); i++ {
			consecutive = consecutive && pfns[i] == pfns[i-1]+1
		}
		if pfn != pfns[0] || (d == nil) != consecutive || d != nil && len(d) != int(n)-1 {
			t.Fatalf("EncodePFNs(%v) = %d %v: not the canonical form", pfns, pfn, d)
		}
		r := &PageRun{Count: n, Pfn: pfn, PfnDeltas: d}
		if got := pfnsOf(r); !slices.Equal(got, pfns) {
			t.Fatalf("ForEachPFN = %v, want %v", got, pfns)
		}
		if got := spansOf(t, r); !slices.Equal(got, pfns) {
			t.Fatalf("ForEachPFNSpan expands to %v, want %v", got, pfns)
		}
		if i := uint32(cut) % n; r.PFNAt(i) != pfns[i] {
			t.Fatalf("PFNAt(%d) = %d, want %d", i, r.PFNAt(i), pfns[i])
		}
		if err := r.ValidatePFNs(1 << 52); err != nil {
			t.Fatalf("ValidatePFNs refused %v: %v", pfns, err)
		}
		if got, err := ParsePFNDeltas(AppendPFNDeltas(nil, d), n); err != nil || !slices.Equal(got, d) {
			t.Fatalf("stored form of %v reads back as %v, %v", d, got, err)
		}
		if n < 2 {
			return
		}
		c := 1 + uint32(cut)%(n-1)
		hp, hd := r.SubPFNs(0, c)
		tp, td := r.SubPFNs(c, n-c)
		wp, wd := EncodePFNs(pfns[:c])
		xp, xd := EncodePFNs(pfns[c:])
		if hp != wp || !slices.Equal(hd, wd) || (hd == nil) != (wd == nil) || tp != xp || !slices.Equal(td, xd) || (td == nil) != (xd == nil) {
			t.Fatalf("cut at %d of %v: %d %v + %d %v, want %d %v + %d %v", c, pfns, hp, hd, tp, td, wp, wd, xp, xd)
		}
		j, ok := JoinPFNs(&PageRun{Count: c, Pfn: hp, PfnDeltas: hd}, &PageRun{Count: n - c, Pfn: tp, PfnDeltas: td})
		if !ok || !slices.Equal(j, d) || (j == nil) != (d == nil) {
			t.Fatalf("joining the pieces of %v: %v %v, want %v", pfns, j, ok, d)
		}
		// The two pieces built one after the other in one PFNSteps.
		var s PFNSteps
		var r1, r2 PFNRun
		for i := uint32(1); i < c; i++ {
			s.Add(&r1, pfns[0], i, pfns[i])
		}
		for i := c + 1; i < n; i++ {
			s.Add(&r2, pfns[c], i-c, pfns[i])
		}
		slab := s.Copy()
		if g1, g2 := r1.Deltas(slab, c), r2.Deltas(slab, n-c); !slices.Equal(g1, wd) || !slices.Equal(g2, xd) {
			t.Fatalf("pieces of %v built in one slab: %v %v, want %v %v", pfns, g1, g2, wd, xd)
		}
	})
}

// FuzzParsePFNDeltas: the stored form never decodes into a step count
// other than count-1, and what it accepts encodes back no longer.
func FuzzParsePFNDeltas(f *testing.F) {
	f.Add(AppendPFNDeltas(nil, []int64{3, -2}), uint32(3))
	f.Add([]byte{0xff, 0xff}, uint32(2))
	f.Fuzz(func(t *testing.T, b []byte, count uint32) {
		d, err := ParsePFNDeltas(b, count)
		if err != nil || len(b) == 0 {
			return
		}
		if len(d) != int(count)-1 {
			t.Fatalf("%d steps accepted for %d pages", len(d), count)
		}
		if again := AppendPFNDeltas(nil, d); len(again) > len(b) {
			t.Fatalf("re-encoding grew: %x -> %x", b, again)
		}
	})
}

// FuzzValidatePFNs: every run ValidatePFNs accepts has count-1 steps or
// none, and every page's PFN lies in 1..limit-1.
func FuzzValidatePFNs(f *testing.F) {
	f.Add(uint64(5), uint16(3), AppendPFNDeltas(nil, []int64{-4, 100}), uint64(1<<20))
	f.Add(uint64(1<<20-2), uint16(3), []byte{}, uint64(1<<20))
	f.Add(uint64(0), uint16(2), AppendPFNDeltas(nil, []int64{3}), uint64(1<<52))
	f.Fuzz(func(t *testing.T, pfn uint64, count uint16, raw []byte, limit uint64) {
		limit = limit%(1<<62) + 1
		var d []int64
		for len(raw) > 0 {
			x, k := binary.Varint(raw)
			if k <= 0 {
				return
			}
			d, raw = append(d, x), raw[k:]
		}
		r := &PageRun{Count: uint32(count) + 1, Pfn: pfn, PfnDeltas: d}
		if r.ValidatePFNs(limit) != nil {
			return
		}
		if len(d) != 0 && len(d) != int(r.Count)-1 {
			t.Fatalf("accepted %d steps for %d pages", len(d), r.Count)
		}
		i := uint32(0)
		r.ForEachPFN(func(_ uint32, p uint64) bool {
			if pfn != 0 && (p == 0 || p >= limit) || pfn == 0 && p != 0 {
				t.Fatalf("accepted run %v: page %d has pfn %#x (limit %#x)", r, i, p, limit)
			}
			i++
			return true
		})
		if i != r.Count {
			t.Fatalf("accepted run expanded to %d pages, want %d", i, r.Count)
		}
	})
}
