package tracer

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"
	"github.com/stratatrace/strata/test/testenv"
)

// TestHeaderConstants checks the constants Go repeats from bpf/strata.h
// against the #defines there.
func TestHeaderConstants(t *testing.T) {
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "bpf", "strata.h"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defs := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[0] == "#define" {
			if v, err := strconv.ParseInt(fields[2], 0, 64); err == nil {
				defs[fields[1]] = v
			}
		}
	}
	for name, want := range map[string]int64{
		"STRATA_BUCKET_SHIFT":  bucketShift,
		"STRATA_GRANULE_SHIFT": granuleShift,
		"STRATA_PAGE_SHIFT":    pageShift,
		"STRATA_SLOTS":         rangeSlots,
		"STRATA_FENCES":        fences,
		"STRATA_LEVEL_BUCKET":  levelBucket,
		"STRATA_LEVEL_GRANULE": levelGranule,
		"STRATA_CELL_SPLIT":    cellSplit,
		"STRATA_CELL_RUN":      cellRun,
	} {
		if got, ok := defs[name]; !ok || got != want {
			t.Errorf("%s = %d in strata.h (found %v), %d in Go", name, got, ok, want)
		}
	}
	// A granule holds at most 1 << granuleShift ranges of a byte; the
	// binary search must cover that many plus one.
	if steps := defs["STRATA_RUN_STEPS"]; 1<<steps < 1<<granuleShift+1 {
		t.Errorf("STRATA_RUN_STEPS %d cannot search %d entries", steps, 1<<granuleShift)
	}
}

// TestRangeSetUnion checks that run_ref shares the bytes of ranges in
// struct range_set, which Go sees as Ranges only (bpf2go writes a union as
// its first member) and reads as run_ref through runRef.
func TestRangeSetUnion(t *testing.T) {
	spec, err := loadStrata()
	if err != nil {
		t.Fatal(err)
	}
	var rs *btf.Struct
	if err := spec.Types.TypeByName("range_set", &rs); err != nil {
		t.Fatal(err)
	}
	var union *btf.Union
	var at btf.Bits
	for _, m := range rs.Members {
		if u, ok := m.Type.(*btf.Union); ok {
			union, at = u, m.Offset
		}
	}
	if union == nil {
		t.Fatal("range_set has no union")
	}
	want := map[string]uint32{"ranges": uint32(unsafe.Sizeof(strataRangeSet{}.Ranges)), "run": uint32(unsafe.Sizeof(strataRunRef{}))}
	for _, m := range union.Members {
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[m.Name]; !ok || uint32(size) != w || m.Offset != 0 {
			t.Errorf("union member %s: %d bytes at %d, Go has %d", m.Name, size, m.Offset, w)
		}
	}
	if got := at.Bytes(); got != uint32(unsafe.Offsetof(strataRangeSet{}.Ranges)) {
		t.Errorf("union at byte %d, Ranges at %d", got, unsafe.Offsetof(strataRangeSet{}.Ranges))
	}
	if unsafe.Sizeof(strataRunRef{}) > unsafe.Sizeof(strataRangeSet{}.Ranges) {
		t.Error("run_ref larger than ranges")
	}
}
