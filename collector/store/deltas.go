package store

import stratav1 "github.com/stratatrace/strata/proto/strata/v1"

// encodeDeltas is a run's PFN steps as the backends store them:
// stratav1.AppendPFNDeltas's compact form, nil when the PFNs are
// consecutive.
func encodeDeltas(d []int64) []byte {
	if len(d) == 0 {
		return nil
	}
	return stratav1.AppendPFNDeltas(make([]byte, 0, 3*len(d)), d)
}

// decodeDeltas reads a stored run's PFN steps (stratav1.ParsePFNDeltas):
// exactly pages-1 of them, or none.
func decodeDeltas(b []byte, pages uint32) ([]int64, error) {
	return stratav1.ParsePFNDeltas(b, pages)
}
