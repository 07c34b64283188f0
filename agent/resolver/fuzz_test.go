package resolver

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// FuzzResolveFixture builds a fake /proc from the input: per page one byte
// choosing absent, swapped, hidden, or present (continuing the previous
// PFN or jumping), and per PFN flags with arbitrary compound head/tail bits.
// Whatever the input, the runs must tile the range and expand back to
// exactly the entries, flags and counts the files hold; resolved without
// flags, to the entries, and after AddFlags, to the flags and counts too.
// FuzzResolveFixture resolves a fixture's pages, made from the input, and
// checks every page against its entry; the same pages cut into requests of
// a walk's shape resolve alike in one batch and one at a time.
func FuzzResolveFixture(f *testing.F) {
	if procmem.PageSize() != 4096 {
		f.Skip("skipping: the fixture assumes 4 KiB pages")
	}
	f.Add([]byte{2, 2, 2, 0, 1, 1, 3, 2, 4, 2}, []byte{0x80, 1, 1, 1, 0x80, 1, 0, 1})
	f.Add([]byte{3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []byte{0x80, 1, 1, 1, 1, 1, 1, 1, 0x80, 1, 1, 1})
	// Requests of one page two pages apart, each a folio's head.
	f.Add([]byte{14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14}, []byte{0x80, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, kinds, flagBytes []byte) {
		const base, maxPFN = 0x100000, 4096
		if len(kinds) == 0 || len(kinds) > 256 {
			return
		}
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "9"), 0o755); err != nil {
			t.Fatal(err)
		}
		flags := make([]uint64, maxPFN)
		counts := make([]uint64, maxPFN)
		for p := range flags {
			var b byte
			if len(flagBytes) > 0 {
				b = flagBytes[p%len(flagBytes)]
			}
			flags[p] = anonLRU
			if b&0x80 != 0 {
				flags[p] |= 1<<procmem.KPFCompoundHead | 1<<procmem.KPFTHP
			} else if b&1 != 0 {
				flags[p] |= 1<<procmem.KPFCompoundTail | 1<<procmem.KPFTHP
			}
			counts[p] = uint64(b>>1&3) + 1
		}
		ents := make([]uint64, len(kinds))
		pfn := uint64(7)
		for i, k := range kinds {
			switch k % 6 {
			case 0:
				ents[i] = 0
			case 1:
				ents[i] = swapped | uint64(i)<<5 | uint64(k>>3)
			case 2:
				pfn = (pfn + 1) % maxPFN
				ents[i] = present | pfn
			case 3:
				pfn = (pfn*131 + uint64(k)) % maxPFN
				ents[i] = present | pfn
			case 4:
				ents[i] = present | excl
			case 5:
				pfn = (pfn + 1) % maxPFN
				ents[i] = present | excl | pfn
			}
			if procmem.Entry(ents[i]).Hidden() && k%6 != 4 {
				ents[i] |= 1 // PFN 0 would read as hidden
			}
		}
		for name, vals := range map[string][]uint64{"kpageflags": flags, "kpagecount": counts} {
			b := make([]byte, 8*len(vals))
			for i, v := range vals {
				binary.LittleEndian.PutUint64(b[i*8:], v)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b := make([]byte, 8*(base/4096+len(ents)))
		for i, e := range ents {
			binary.LittleEndian.PutUint64(b[8*(base/4096+i):], e)
		}
		if err := os.WriteFile(filepath.Join(dir, "9", "pagemap"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		maps := []byte("100000-7fffffff rw-p 00000000 00:00 0 \n")
		if err := os.WriteFile(filepath.Join(dir, "9", "maps"), maps, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{ChunkPages: 512}, {ChunkPages: 1, ReadAllCounts: true}, {NoFlags: true}} {
			r, err := New(procmem.FS{Proc: dir, Sys: "../procmem/testdata/sys2"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Resolve(9, base, uint64(len(ents))*4096)
			if err == nil && opts.NoFlags {
				// Without flags, then with them for the pages that need
				// them: the same pages as a full resolution.
				for i, p := range pages(t, res.Runs, base, len(ents)) {
					e := procmem.Entry(ents[i])
					if e.Present() && !e.Hidden() && (p.PFN != e.PFN() || !p.Is(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN) || p.KPageFlags != 0) {
						t.Fatalf("page %d without flags: %+v for entry %#x", i, p, ents[i])
					}
				}
				res.Runs, err = r.AddFlags(9, -1, res.Runs)
			}
			r.Close()
			if err == nil {
				gatheredAsAlone(t, procmem.FS{Proc: dir, Sys: "../procmem/testdata/sys2"}, opts, 9, base, kinds)
			}
			if err != nil {
				t.Fatal(err)
			}
			pages := pages(t, res.Runs, base, len(ents))
			for i, p := range pages {
				e := procmem.Entry(ents[i])
				if p.Is(stratav1.PageState_PAGE_STATE_PRESENT) != e.Present() || p.Is(stratav1.PageState_PAGE_STATE_SWAPPED) != e.Swapped() {
					t.Fatalf("page %d: state %#x for entry %#x", i, p.State, ents[i])
				}
				if e.Swapped() && (p.SwapType != e.SwapType() || p.SwapOffset != e.SwapOffset()) {
					t.Fatalf("page %d: swap %d/%#x for entry %#x", i, p.SwapType, p.SwapOffset, ents[i])
				}
				if !e.Present() || e.PFN() == 0 {
					continue
				}
				if p.PFN != e.PFN() || p.KPageFlags != flags[p.PFN] {
					t.Fatalf("page %d (opts %+v): pfn %d flags %#x, want %d %#x\nruns %v", i, opts, p.PFN, p.KPageFlags, e.PFN(), flags[e.PFN()], res.Runs)
				}
				if p.Is(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN) {
					t.Fatalf("page %d: flags unknown", i)
				}
				wantCount := counts[p.PFN]
				if e.Exclusive() && !opts.ReadAllCounts {
					wantCount = 1
				}
				if p.KPageCount != wantCount {
					t.Fatalf("page %d: count %d, want %d", i, p.KPageCount, wantCount)
				}
			}
		}
	})
}

// gatheredAsAlone cuts the n pages at base into requests of 1 to 7 pages, 0
// to 2 pages apart, as kinds says, and checks that a batch, where nearby
// requests share a chunk, resolves each as it resolves alone. The batch
// goes first, on a fresh Resolver: nothing read before can stand in for
// what it does not read.
func gatheredAsAlone(t *testing.T, fs procmem.FS, opts Options, pid int, base uint64, kinds []byte) {
	t.Helper()
	r, err := New(fs, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var reqs []Request
	for i, at := 0, uint64(0); at < uint64(len(kinds)); i++ {
		k := uint64(kinds[i%len(kinds)])
		n := min(k%7+1, uint64(len(kinds))-at)
		reqs = append(reqs, Request{VAddr: base + at*4096, Length: n * 4096, CPUNode: -1})
		at += n + k/7%3
	}
	together := make([]Result, len(reqs))
	if err := r.ResolveBatch(pid, reqs, together); err != nil {
		t.Fatal(err)
	}
	for i, q := range reqs {
		var alone [1]Result
		if err := r.ResolveBatch(pid, []Request{q}, alone[:]); err != nil {
			t.Fatal(err)
		}
		a, b := alone[0], together[i]
		if fmt.Sprint(a.Err) != fmt.Sprint(b.Err) || a.Pages != b.Pages || a.Present != b.Present || a.Raced != b.Raced || len(a.Runs) != len(b.Runs) {
			t.Fatalf("request %d %#x+%#x: alone %+v, in a batch %+v", i, q.VAddr, q.Length, a, b)
		}
		for k := range a.Runs {
			if !proto.Equal(a.Runs[k], b.Runs[k]) {
				t.Fatalf("request %d run %d: alone %v, in a batch %v", i, k, a.Runs[k], b.Runs[k])
			}
		}
	}
}
