package damon

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseRegion: any four files give a region whose end is past its
// start, scaled by addr_unit without wrapping, or an error; never a panic.
func FuzzParseRegion(f *testing.F) {
	f.Add([]byte("5972623360\n"), []byte("5981978624\n"), []byte("0\n"), []byte("27\n"), uint64(1))
	f.Add([]byte("4096"), []byte("8192"), []byte("20"), []byte("0"), uint64(4096))
	f.Add([]byte("1"), []byte("18446744073709551615"), []byte("1"), []byte("1"), uint64(2))
	f.Add([]byte("-1"), []byte(""), []byte("x"), []byte(" 3 "), uint64(0))
	f.Fuzz(func(t *testing.T, start, end, nr, age []byte, unit uint64) {
		r, err := parseRegion(start, end, nr, age, unit)
		if err != nil {
			return
		}
		if r.End <= r.Start {
			t.Fatalf("region %+v from %q %q", r, start, end)
		}
		if unit <= 1 && (parseOK(t, start) != r.Start || parseOK(t, end) != r.End) {
			t.Fatalf("region %+v from %q %q with unit %d", r, start, end, unit)
		}
		if unit > 1 && (r.Start%unit != 0 || r.End%unit != 0) {
			t.Fatalf("region %+v not in units of %d", r, unit)
		}
	})
}

func parseOK(t *testing.T, b []byte) uint64 {
	v, err := parseUint(b)
	if err != nil {
		t.Fatalf("%q parsed in the region, not alone: %v", b, err)
	}
	return v
}

func TestParseOps(t *testing.T) {
	if got := strings.Join(parseOps([]byte("vaddr\nfvaddr\npaddr\n")), ","); got != "vaddr,fvaddr,paddr" {
		t.Fatalf("ops %q", got)
	}
}

// FuzzChooseOps: any avail_operations gives fvaddr only where it lists
// fvaddr and paddr is not forced, paddr only where it lists paddr, or an
// error naming what it lists; never a panic.
func FuzzChooseOps(f *testing.F) {
	f.Add([]byte("vaddr\nfvaddr\npaddr\n"), false)
	f.Add([]byte("paddr"), false)
	f.Add([]byte("vaddr fvaddr"), true)
	f.Add([]byte(""), false)
	f.Add([]byte("fvaddrpaddr\x00 \t"), true)
	f.Fuzz(func(t *testing.T, avail []byte, paddr bool) {
		want := "auto"
		if paddr {
			want = "paddr"
		}
		listed := parseOps(avail)
		ops, err := chooseOps(listed, want)
		switch {
		case err != nil:
			if ops != "" || (!paddr && slices.Contains(listed, "fvaddr")) || slices.Contains(listed, "paddr") {
				t.Fatalf("%q, paddr %v: %q, %v", avail, paddr, ops, err)
			}
		case ops == "fvaddr":
			if paddr || !slices.Contains(listed, "fvaddr") {
				t.Fatalf("%q, paddr %v: fvaddr", avail, paddr)
			}
		case ops == "paddr":
			if listed != nil && (!slices.Contains(listed, "paddr") || (!paddr && slices.Contains(listed, "fvaddr"))) {
				t.Fatalf("%q, paddr %v: paddr", avail, paddr)
			}
		default:
			t.Fatalf("%q, paddr %v: operations %q", avail, paddr, ops)
		}
	})
}
