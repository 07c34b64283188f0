package workloads

import (
	"math"
	"testing"
	"time"
)

func TestPairRatios(t *testing.T) {
	s := time.Second
	p := Paired{
		WallWithout: []time.Duration{10 * s, 20 * s, 0, 8 * s},
		WallWith:    []time.Duration{11 * s, 19 * s, 5 * s},
	}
	got := p.PairRatios()
	want := []float64{1.1, 0.95} // the third pair has no untraced time, the fourth no traced run
	if len(got) != len(want) {
		t.Fatalf("PairRatios = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("PairRatios = %v, want %v", got, want)
		}
	}
	// WallRatio is the median of each kind, then the ratio: the traced
	// runs' median (of 5, 11, 19 s) is 11 s, the untraced runs' (of 0, 8,
	// 10, 20 s) 9 s.
	if r := p.WallRatio(); math.Abs(r-11.0/9) > 1e-12 {
		t.Fatalf("WallRatio = %v, want %v", r, 11.0/9)
	}
}

func TestSpread(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		runs []time.Duration
		want float64
	}{
		{nil, 0},
		{[]time.Duration{10 * s}, 0},
		{[]time.Duration{9 * s, 10 * s, 11 * s}, 0.1},
		{[]time.Duration{10 * s, 10 * s}, 0},
		{[]time.Duration{12 * s, 8 * s, 10 * s, 10 * s}, 0.2},
	} {
		if got := Spread(c.runs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Spread(%v) = %v, want %v", c.runs, got, c.want)
		}
	}
}

func TestPooled(t *testing.T) {
	if m, lo, hi := Pooled(nil); m != 0 || lo != 0 || hi != 0 {
		t.Fatalf("Pooled(nil) = %v %v %v, want zeroes", m, lo, hi)
	}
	// Equal ratios: no spread, the interval is the point.
	m, lo, hi := Pooled([]float64{1.03, 1.03, 1.03, 1.03})
	if math.Abs(m-1.03) > 1e-12 || math.Abs(lo-1.03) > 1e-12 || math.Abs(hi-1.03) > 1e-12 {
		t.Fatalf("Pooled(equal) = %v [%v, %v], want 1.03 [1.03, 1.03]", m, lo, hi)
	}
	// Geometric, not arithmetic: 2× and 0.5× cancel.
	if m, _, _ := Pooled([]float64{2, 0.5}); math.Abs(m-1) > 1e-12 {
		t.Fatalf("Pooled(2, 0.5) mean = %v, want 1", m)
	}
	// Noisy ratios around 1.02: the interval holds the mean, is narrower
	// with four times the pairs (about half as wide), and is the same on
	// every call (fixed seed).
	noisy := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = 1.02 * (1 + 0.07*float64(i%7-3)/3) // ±7 %, symmetric
		}
		return out
	}
	m16, lo16, hi16 := Pooled(noisy(14))
	m64, lo64, hi64 := Pooled(noisy(56))
	if !(lo16 < m16 && m16 < hi16) || !(lo64 < m64 && m64 < hi64) {
		t.Fatalf("interval does not hold the mean: %v [%v, %v], %v [%v, %v]", m16, lo16, hi16, m64, lo64, hi64)
	}
	w16, w64 := hi16-lo16, hi64-lo64
	if r := w16 / w64; r < 1.6 || r > 2.5 {
		t.Fatalf("interval widths %v (14 pairs) and %v (56 pairs): ratio %v, want about 2", w16, w64, r)
	}
	if m, l, h := Pooled(noisy(14)); m != m16 || l != lo16 || h != hi16 {
		t.Fatalf("Pooled not reproducible: %v [%v, %v] then %v [%v, %v]", m16, lo16, hi16, m, l, h)
	}
	if math.Abs(m64-1.02) > 0.005 {
		t.Fatalf("Pooled mean %v, want about 1.02", m64)
	}
}
