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

func TestPercentString(t *testing.T) {
	for _, tc := range []struct {
		n, d int64
		want string
	}{{1, 4, "25.00 %"}, {1, 0, "NaN"}, {0, 5, "0 %"}} {
		if got := PercentString(tc.n, tc.d); got != tc.want {
			t.Errorf("PercentString(%d, %d) = %q, want %q", tc.n, tc.d, got, tc.want)
		}
	}
}
