package procmem

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// countingFS writes kpageflags (value = pfn | 1<<40) and kpagecount
// (value = pfn % 3) for pfns [0, n).
func kpageFixture(t *testing.T, n int) FS {
	t.Helper()
	dir := t.TempDir()
	flags := make([]byte, 8*n)
	counts := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(flags[i*8:], uint64(i)|1<<40)
		binary.LittleEndian.PutUint64(counts[i*8:], uint64(i%3))
	}
	for name, b := range map[string][]byte{"kpageflags": flags, "kpagecount": counts} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return FS{Proc: dir}
}

func TestReadSpans(t *testing.T) {
	fs := kpageFixture(t, 4096)
	k, err := fs.OpenKPages()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, gap := range []uint64{0, 1, 16, 1000} {
		k.MergeGap = gap
		// Unsorted, overlapping-by-neighbour, and one past the end of the file.
		spans := []Span{
			{PFN: 100, N: 3, Out: 0},
			{PFN: 10, N: 1, Out: 3},
			{PFN: 103, N: 2, Out: 4},
			{PFN: 120, N: 5, Out: 6},
			{PFN: 4094, N: 4, Out: 11},
		}
		want := map[uint32]uint64{}
		for _, s := range spans {
			for i := range s.N {
				want[s.Out+i] = s.PFN + uint64(i)
			}
		}
		flags := make([]uint64, 15)
		counts := make([]uint64, 15)
		if err := k.ReadSpans(spans, flags, counts); err != nil {
			t.Fatal(err)
		}
		for out, pfn := range want {
			wf, wc := pfn|1<<40, pfn%3
			if pfn >= 4096 {
				wf, wc = 0, 0
			}
			if flags[out] != wf || counts[out] != wc {
				t.Errorf("gap %d: pfn %d at %d: flags %#x count %d, want %#x %d", gap, pfn, out, flags[out], counts[out], wf, wc)
			}
		}
	}
}

func TestKPagesMissing(t *testing.T) {
	fs := kpageFixture(t, 8)
	if err := os.Remove(filepath.Join(fs.Proc, "kpagecount")); err != nil {
		t.Fatal(err)
	}
	k, err := fs.OpenKPages()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.FlagsErr() != nil || !errors.Is(k.CountErr(), ErrFlagsUnavailable) {
		t.Fatalf("flags err %v, count err %v", k.FlagsErr(), k.CountErr())
	}
	if err := k.ReadSpans([]Span{{PFN: 1, N: 1}}, nil, make([]uint64, 1)); !errors.Is(err, ErrFlagsUnavailable) {
		t.Errorf("read counts: %v", err)
	}
	if _, err := (FS{Proc: t.TempDir()}).OpenKPages(); !errors.Is(err, ErrFlagsUnavailable) {
		t.Errorf("open with neither file: %v", err)
	}
}

func TestSortSpans(t *testing.T) {
	var k KPages
	for _, top := range []uint64{0, 1 << 62} { // packed keys, then the fallback
		spans := []Span{{PFN: top | 9, Out: 0}, {PFN: top | 3, Out: 1}, {PFN: top | 7, Out: 2}, {PFN: top | 1, Out: 3}}
		k.sortSpans(spans)
		for i, want := range []uint32{3, 1, 2, 0} {
			if s := k.span(spans, i); s.Out != want {
				t.Fatalf("top %#x: span %d in PFN order is %v, want Out %d", top, i, s, want)
			}
		}
		if spans[0].Out != 0 || spans[3].Out != 3 {
			t.Fatalf("top %#x: spans reordered: %v", top, spans)
		}
	}
	sorted := []Span{{PFN: 1, Out: 7}, {PFN: 2, Out: 8}}
	k.sortSpans(sorted)
	if k.span(sorted, 1).Out != 8 {
		t.Fatalf("sorted spans: %v", k.span(sorted, 1))
	}
}
