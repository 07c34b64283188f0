package heuristics

import (
	"math"
	"testing"
)

// The two text parsers of the package: threshold expressions and memory
// strings. Neither may panic; accepted values must be usable numbers.

func FuzzParseParam(f *testing.F) {
	for _, s := range []string{"10, 50, 100, 200", "1/8,1/4,1/2,1", "2&", "", "(1+2)*3", "-1e3", "((((1))))", "1/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range []int{1, 4} {
			v, ok := ParseParam(s, n)
			if ok && len(v) != n {
				t.Fatalf("ParseParam(%q, %d) = %v", s, n, v)
			}
		}
	})
}

func FuzzStringToBytes(f *testing.F) {
	for _, s := range []string{"8.79e0 MB", "2G", "384", "1,024 KB", "-1g", "1e400 T", ".5k", "1 PB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := StringToBytes(s)
		if err == nil && (b < 0 || b > math.MaxInt64) {
			t.Fatalf("StringToBytes(%q) = %d", s, b)
		}
		if err == nil {
			_ = BytesToString(b)
		}
	})
}

// TestPercentString checks the rule in docs/heuristics.md#percentages: a
// percentage whose Java (long) cast is 0 (strictly between -1 and 1) is
// "0 %", the rest has two decimals rounded half to even. The expected
// strings were printed by the same rule run on JDK 17.
func TestPercentString(t *testing.T) {
	for _, tc := range []struct {
		n, d int64
		want string
	}{
		{1, 4, "25.00 %"},
		{1, 0, "NaN"},
		{0, 5, "0 %"},
		{1, 200, "0 %"},          // 0.5 %
		{5, 1000, "0 %"},         // 0.5 %
		{999, 100000, "0 %"},     // 0.999 %
		{-1, 200, "0 %"},         // -0.5 %
		{-99, 10000, "0 %"},      // -0.99 %
		{1, 100, "1.00 %"},       // exactly 1 %
		{-1, 100, "-1.00 %"},     // exactly -1 %
		{-199, 100, "-199.00 %"}, // negative, whole
		{9, 800, "1.12 %"},       // 1.125 exactly: tie, to even
		{11, 800, "1.38 %"},      // 1.375 exactly: tie, to even
		{13, 800, "1.62 %"},      // 1.625 exactly: tie, to even
		{-9, 800, "-1.12 %"},     // -1.125: tie, to even
		{2675, 100000, "2.67 %"}, // 2.67499…: below the tie in binary
		{1005, 100000, "1.00 %"}, // 1.00499…: below the tie in binary
		{1, 3, "33.33 %"},
		{2, 3, "66.67 %"},
		{123456789, 1000, "12345678.90 %"},
		{math.MaxInt64, 1, "922337203685477600000.00 %"},
		{math.MinInt64, 1, "-922337203685477600000.00 %"},
	} {
		if got := PercentString(tc.n, tc.d); got != tc.want {
			t.Errorf("PercentString(%d, %d) = %q, want %q", tc.n, tc.d, got, tc.want)
		}
	}
}
