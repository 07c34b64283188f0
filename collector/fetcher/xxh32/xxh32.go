// Package xxh32 computes the 32-bit xxHash, the checksum lz4-java's block
// stream (Spark's lz4 event-log codec) stores after every block. The
// fetcher verifies it when reading; the test generator writes it.
package xxh32

import (
	"encoding/binary"
	"math/bits"
)

const (
	p1 = 2654435761
	p2 = 2246822519
	p3 = 3266489917
	p4 = 668265263
	p5 = 374761393
)

// Sum returns the 32-bit xxHash of b with the given seed.
func Sum(b []byte, seed uint32) uint32 {
	n := len(b)
	h := seed + p5
	if n >= 16 {
		v := [4]uint32{seed + p1 + p2, seed + p2, seed, seed - p1}
		for ; len(b) >= 16; b = b[16:] {
			for i := range v {
				v[i] = bits.RotateLeft32(v[i]+binary.LittleEndian.Uint32(b[4*i:])*p2, 13) * p1
			}
		}
		h = bits.RotateLeft32(v[0], 1) + bits.RotateLeft32(v[1], 7) + bits.RotateLeft32(v[2], 12) + bits.RotateLeft32(v[3], 18)
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h = (h ^ h>>15) * p2
	h = (h ^ h>>13) * p3
	return h ^ h>>16
}
