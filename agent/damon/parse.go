package damon

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseUint reads one unsigned decimal number, as DAMON's files print
// them ("%lu\n").
func parseUint(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", s, err)
	}
	return v, nil
}

// errEmptyRegion marks a region whose end is not past its start.
var errEmptyRegion = errors.New("region end not past start")

// parseRegion reads one tried region's files (start, end, nr_accesses,
// age) into a Region in bytes: start and end are in units of the
// context's addr_unit (1 byte unless set), which must not overflow.
func parseRegion(start, end, nrAccesses, age []byte, addrUnit uint64) (Region, error) {
	var r Region
	var vals [4]uint64
	for i, b := range [][]byte{start, end, nrAccesses, age} {
		v, err := parseUint(b)
		if err != nil {
			return r, fmt.Errorf("%s: %w", regionFiles[i], err)
		}
		vals[i] = v
	}
	if addrUnit == 0 {
		addrUnit = 1
	}
	if vals[1] <= vals[0] {
		return r, fmt.Errorf("[%d, %d): %w", vals[0], vals[1], errEmptyRegion)
	}
	if vals[1] > ^uint64(0)/addrUnit {
		return r, fmt.Errorf("end %d times addr_unit %d overflows", vals[1], addrUnit)
	}
	r.Start, r.End = vals[0]*addrUnit, vals[1]*addrUnit
	r.NrAccesses, r.Age = vals[2], vals[3]
	return r, nil
}

// regionFiles are a tried region's files parseRegion takes, in order.
var regionFiles = [4]string{"start", "end", "nr_accesses", "age"}

// parseOps lists the operations sets in avail_operations (one per line
// or separated by spaces).
func parseOps(b []byte) []string { return strings.Fields(string(b)) }
