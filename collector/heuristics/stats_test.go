package heuristics

import (
	"slices"
	"testing"
)

// Vectors ST-1..ST-11 (docs/heuristics.md#test-vectors) and the examples
// of docs/heuristics.md#statistics.
func TestStatisticsVectors(t *testing.T) {
	if got := Average([]int64{2, 4, 6, 8, 10}); got != 6 {
		t.Errorf("ST-1 average = %d, want 6", got)
	}
	if got := Average(nil); got != 0 {
		t.Errorf("ST-1 average([]) = %d, want 0", got)
	}
	if got := Average([]int64{1, 2}); got != 1 {
		t.Errorf("average truncates: %d, want 1", got)
	}
	tens := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, tc := range []struct {
		p    int
		want int64
	}{{100, 100}, {50, 50}, {0, 0}, {10, 10}, {4, 10}} {
		if got := Percentile(tens, tc.p); got != tc.want {
			t.Errorf("ST-3 percentile(%d) = %d, want %d", tc.p, got, tc.want)
		}
	}
	for _, tc := range []struct {
		xs   []int64
		want int64
	}{{[]int64{3, 1, 2}, 2}, {[]int64{4, 1, 3, 2}, 2}, {[]int64{1, 2}, 1}, {nil, 0}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
	if got := DescribeFactor(0, 0, "test"); got != "" {
		t.Errorf("ST-5 describeFactor(0,0) = %q", got)
	}
	if got := DescribeFactor(10, 2, "test"); got != "(5.00test)" {
		t.Errorf("ST-5 describeFactor(10,2) = %q", got)
	}
	for _, tc := range []struct {
		mbs  int64
		want string
	}{{10000, "0.003 GB Hours"}, {213234343, "57.844 GB Hours"}, {23424, "0.006 GB Hours"},
		{635322, "0.172 GB Hours"}, {213, "0 GB Hours"}, {0, "0 GB Hours"}} {
		if got := GBHoursString(tc.mbs); got != tc.want {
			t.Errorf("ST-7 GBHoursString(%d) = %q, want %q", tc.mbs, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ms   int64
		want string
	}{{0, "0 sec"}, {45 * 60_000, "45 min"}, {3_600_000, "1 hr"}, {3_723_000, "1 hr 2 min 3 sec"}} {
		if got := ReadableTimespan(tc.ms); got != tc.want {
			t.Errorf("ReadableTimespan(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

func TestParseParamVectors(t *testing.T) {
	// ST-9 (docs/heuristics.md#override-file: threshold lists).
	if v, ok := ParseParam("10, 50, 100, 200", 4); !ok || !slices.Equal(v, []float64{10, 50, 100, 200}) {
		t.Errorf("ST-9 list: %v %v", v, ok)
	}
	if _, ok := ParseParam("2, 4, 8", 4); ok {
		t.Error("ST-9 wrong count accepted")
	}
	if _, ok := ParseParam("2&", 1); ok {
		t.Error("ST-9 2& accepted")
	}
	if v, ok := ParseParam("2", 1); !ok || !slices.Equal(v, []float64{2}) {
		t.Errorf("ST-9 single: %v %v", v, ok)
	}
	if _, ok := ParseParam("", 4); ok {
		t.Error("ST-9 empty accepted")
	}
	if v, ok := ParseParam("1/8, 1/4, (1+1)/4, -2*-0.5", 4); !ok || !slices.Equal(v, []float64{0.125, 0.25, 0.5, 1}) {
		t.Errorf("expressions: %v %v", v, ok)
	}
	if _, ok := ParseParam("(1", 1); ok {
		t.Error("unbalanced parenthesis accepted")
	}
}

func TestMemoryStringVectors(t *testing.T) {
	// ST-11: all (long)(8.79 × 2^20).
	for _, s := range []string{"8.79e0 MB", "8.79E0 MB", "0.879e1 MB", "+0.879e+1 MB", "87.9e-1 MB", "8,790e-3 MB", "8,790,000e-6 MB"} {
		if got, err := StringToBytes(s); err != nil || got != 9216983 {
			t.Errorf("ST-11 StringToBytes(%q) = %d, %v; want 9216983", s, got, err)
		}
	}
	for _, tc := range []struct {
		s    string
		want int64
	}{{"384", 384}, {"2G", 2 << 30}, {"512m", 512 << 20}, {"1g", 1 << 30}, {"4k", 4096}, {"1TB", 1 << 40}, {"", 0}, {"100 B", 100}} {
		if got, err := StringToBytes(tc.s); err != nil || got != tc.want {
			t.Errorf("StringToBytes(%q) = %d, %v; want %d", tc.s, got, err, tc.want)
		}
	}
	for _, s := range []string{"-1g", "lots", "1 PB"} {
		if _, err := StringToBytes(s); err == nil {
			t.Errorf("StringToBytes(%q) accepted", s)
		}
	}
	for _, tc := range []struct {
		b    int64
		want string
	}{{9000, "8.79 KB"}, {1000 << 30, "1,000 GB"}, {0, "0 B"}, {2 << 30, "2 GB"}, {20_000_000, "19.07 MB"}, {500 << 20, "500 MB"}} {
		if got := BytesToString(tc.b); got != tc.want {
			t.Errorf("BytesToString(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestFindTwoGroups(t *testing.T) {
	rep := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		values []int64
		a, b   []int64
	}{
		{"1 MB vs 100 MB", append(rep(200, 1*mb1), rep(200, 100*mb1)...), rep(200, 1*mb1), rep(200, 100*mb1)},
		{"50 MB vs 100 MB (difference, not midpoint)", append(rep(200, 50*mb1), rep(200, 100*mb1)...), rep(200, 50*mb1), rep(200, 100*mb1)},
		{"all zero", rep(5, 0), nil, rep(5, 0)},
		{"empty", nil, nil, nil},
	} {
		a, b := FindTwoGroups(tc.values)
		if !slices.Equal(a, tc.a) || !slices.Equal(b, tc.b) {
			t.Errorf("%s: groups of %d and %d, want %d and %d", tc.name, len(a), len(b), len(tc.a), len(tc.b))
		}
	}
}
