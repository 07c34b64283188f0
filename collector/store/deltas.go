package store

import (
	"encoding/binary"
	"fmt"
)

// encodeDeltas stores a run's PFN steps as consecutive zigzag varints
// (encoding/binary's Varint); nil when the PFNs are consecutive.
func encodeDeltas(d []int64) []byte {
	if len(d) == 0 {
		return nil
	}
	b := make([]byte, 0, 3*len(d))
	for _, x := range d {
		b = binary.AppendVarint(b, x)
	}
	return b
}

// decodeDeltas reverses encodeDeltas for a run of pages pages: there must be
// exactly pages-1 steps, or none.
func decodeDeltas(b []byte, pages uint32) ([]int64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := make([]int64, 0, pages)
	for len(b) > 0 {
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, fmt.Errorf("decode pfn deltas: bad varint at step %d", len(d))
		}
		d = append(d, x)
		b = b[n:]
	}
	if len(d) != int(pages)-1 {
		return nil, fmt.Errorf("decode pfn deltas: %d steps for %d pages", len(d), pages)
	}
	return d, nil
}
