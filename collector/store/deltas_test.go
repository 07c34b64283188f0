package store

import (
	"slices"
	"testing"
)

func TestDeltasRoundTrip(t *testing.T) {
	for _, d := range [][]int64{nil, {1}, {7, -500, 1, 1 << 40, -(1 << 40)}} {
		got, err := decodeDeltas(encodeDeltas(d), uint32(len(d)+1))
		if err != nil || !slices.Equal(got, d) {
			t.Fatalf("round trip of %v = %v, %v", d, got, err)
		}
	}
	if _, err := decodeDeltas(encodeDeltas([]int64{1, 2}), 5); err == nil {
		t.Fatal("a step count that does not fit the run was accepted")
	}
	if _, err := decodeDeltas([]byte{0x80}, 2); err == nil {
		t.Fatal("a truncated varint was accepted")
	}
}

func FuzzDecodeDeltas(f *testing.F) {
	f.Add(encodeDeltas([]int64{3, -2}), uint32(3))
	f.Add([]byte{0xff, 0xff}, uint32(2))
	f.Fuzz(func(t *testing.T, b []byte, pages uint32) {
		d, err := decodeDeltas(b, pages)
		if err != nil || len(b) == 0 {
			return
		}
		if again := encodeDeltas(d); len(again) > len(b) {
			t.Fatalf("re-encoding grew: %x -> %x", b, again)
		}
	})
}
