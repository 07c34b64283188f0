package xxh32

import "testing"

// Published xxHash32 values (seed 0): the empty input, a tail-only input
// and one long enough for the 16-byte stripes.
func TestSum(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02cc5d05},
		{"abc", 0x32d153ff},
		{"Nobody inspects the spammish repetition", 0xe2293b2f},
	} {
		if got := Sum([]byte(c.in), 0); got != c.want {
			t.Errorf("Sum(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
}
