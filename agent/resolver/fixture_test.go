package resolver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// A fake /proc for pid 7 with every kind of page, and the two-node sysfs of
// the procmem fixtures (128 MiB blocks: blocks 0-2 on node 0, 3 and 5 on
// node 1). Swap has no device on the development VM, so this is where the
// swapped path is exercised.
const (
	fxBase  = 0x10000000
	fxPages = 41
	fxNode1 = 3 * 0x8000000 / 4096 // first PFN of block 3, on node 1
	present = uint64(procmem.EntryPresent)
	excl    = uint64(procmem.EntryExclusive)
	swapped = uint64(procmem.EntrySwapped)
	anonLRU = 1<<12 | 1<<5 | 1<<11 // anon, lru, mmap
)

func writeAt(t *testing.T, path string, off uint64, vals ...uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[i*8:], v)
	}
	if _, err := f.WriteAt(b, int64(off*8)); err != nil {
		t.Fatal(err)
	}
}

func fixtureFS(t *testing.T) procmem.FS {
	t.Helper()
	if procmem.PageSize() != 4096 {
		t.Skip("skipping: the fixture assumes 4 KiB pages")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	pm := filepath.Join(dir, "7", "pagemap")
	flags := filepath.Join(dir, "kpageflags")
	counts := filepath.Join(dir, "kpagecount")
	ents := make([]uint64, fxPages)
	for i := range 4 {
		ents[i] = present | excl | uint64(100+i)
		writeAt(t, flags, uint64(100+i), anonLRU)
		writeAt(t, counts, uint64(100+i), 1)
	}
	ents[4] = present | excl | fxNode1
	writeAt(t, flags, fxNode1, anonLRU)
	writeAt(t, counts, fxNode1, 1)
	ents[5] = swapped | 0x50<<5 | 2
	ents[6] = swapped | 0x51<<5 | 2
	ents[7] = swapped | 0x60<<5 | 2
	ents[8] = 0 // in a VMA, never touched
	ents[9] = 0 // no VMA
	ents[10] = present | excl | 200
	writeAt(t, flags, 200, 1<<procmem.KPFNoPage)
	writeAt(t, counts, 200, 1)
	ents[11] = present | excl // PFN hidden
	// Two 16-page THP folios: 1024..1039 seen from its fifth page, then 1040..1055.
	for p := uint64(1024); p < 1056; p++ {
		f := uint64(anonLRU | 1<<procmem.KPFTHP | 1<<procmem.KPFCompoundTail)
		if p%16 == 0 {
			f = anonLRU | 1<<procmem.KPFTHP | 1<<procmem.KPFCompoundHead
		}
		writeAt(t, flags, p, f)
		writeAt(t, counts, p, 1)
	}
	for i := 12; i < 40; i++ {
		ents[i] = present | excl | uint64(1028+i-12)
	}
	ents[40] = present | 5000 // shared: kpagecount is read
	writeAt(t, flags, 5000, anonLRU)
	writeAt(t, counts, 5000, 2)
	writeAt(t, flags, fxNode1+100, 0) // the files reach node 1's PFNs
	writeAt(t, counts, fxNode1+100, 0)
	writeAt(t, pm, fxBase/4096, ents...)
	maps := fmt.Sprintf("%x-%x rw-p 00000000 00:00 0 \n%x-%x rw-p 00000000 00:00 0 \n",
		fxBase, fxBase+9*4096, fxBase+10*4096, fxBase+fxPages*4096)
	if err := os.WriteFile(filepath.Join(dir, "7", "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	return procmem.FS{Proc: dir, Sys: "../procmem/testdata/sys2"}
}

func TestResolveFixture(t *testing.T) {
	fs := fixtureFS(t)
	const (
		P  = uint32(stratav1.PageState_PAGE_STATE_PRESENT)
		X  = uint32(stratav1.PageState_PAGE_STATE_EXCLUSIVE)
		S  = uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
		U  = uint32(stratav1.PageState_PAGE_STATE_UNMAPPED)
		R  = uint32(stratav1.PageState_PAGE_STATE_RACED)
		H  = uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
		F  = uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
		C  = uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE)
		T  = uint32(stratav1.PageState_PAGE_STATE_THP)
		th = anonLRU | 1<<procmem.KPFTHP
	)
	want := []struct {
		vpage, count, state uint32
		pfn, flags, kcount  uint64
		folio               uint32
		node                int32
		swapType            uint32
		swapOff             uint64
	}{
		{0, 4, P | X | C, 100, anonLRU, 1, 0, 0, 0, 0},
		{4, 1, P | X, fxNode1, anonLRU, 1, 0, 1, 0, 0},
		{5, 2, S, 0, 0, 0, 0, -1, 2, 0x50},
		{7, 1, S, 0, 0, 0, 0, -1, 2, 0x60},
		{8, 1, 0, 0, 0, 0, 0, -1, 0, 0},
		{9, 1, U, 0, 0, 0, 0, -1, 0, 0},
		{10, 1, P | X | R | C, 200, 1 << procmem.KPFNoPage, 1, 0, 0, 0, 0},
		{11, 1, P | X | H | F, 0, 0, 0, 0, -1, 0, 0},
		{12, 12, P | X | T | C, 1028, th, 1, 16, 0, 0, 0},
		{24, 16, P | X | T | C, 1040, th, 1, 16, 0, 0, 0},
		{40, 1, P | C, 5000, anonLRU, 2, 0, 0, 0, 0},
	}
	for _, opts := range []Options{{}, {ChunkPages: 1, ReadAllCounts: true, NoRecheck: true}} {
		r, err := New(fs, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out := make([]Result, 1)
		// The accessing CPU is on node 1: pages on node 0 are cross-node.
		if err := r.ResolveBatch(7, []Request{{VAddr: fxBase, Length: fxPages * 4096, CPUNode: 1}}, out); err != nil {
			t.Fatal(err)
		}
		res := out[0]
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Pages != fxPages || res.Present != 36 || res.Swapped != 3 || res.Unmapped != 1 || res.Raced != 1 || res.Hidden != 1 || res.THP != 28 {
			t.Errorf("counts %+v", res)
		}
		if res.Warning == nil || res.Warning.Error() != ErrPFNHidden.Error() {
			t.Errorf("warning %v, want only ErrPFNHidden", res.Warning)
		}
		if len(res.Runs) != len(want) {
			for _, r := range res.Runs {
				t.Log(r)
			}
			t.Fatalf("%d runs, want %d", len(res.Runs), len(want))
		}
		for i, w := range want {
			g := res.Runs[i]
			if g.GetVaddr() != fxBase+uint64(w.vpage)*4096 || g.GetCount() != w.count || g.GetState() != w.state ||
				g.GetPfn() != w.pfn || g.GetKpageflags() != w.flags || g.GetKpagecount() != w.kcount ||
				g.GetFolioPages() != w.folio || g.GetNumaNode() != w.node || g.GetSwapType() != w.swapType || g.GetSwapOffset() != w.swapOff {
				t.Errorf("run %d = %v, want %+v", i, g, w)
			}
		}
		// Expansion restores the compound bits the runs cleared.
		if p := res.Runs[8].Page(0, 4096); p.KPageFlags&(1<<procmem.KPFCompoundTail) == 0 {
			t.Errorf("pfn 1028: flags %#x, want a compound tail", p.KPageFlags)
		}
		if p := res.Runs[9].Page(0, 4096); p.KPageFlags&(1<<procmem.KPFCompoundHead) == 0 {
			t.Errorf("pfn 1040: flags %#x, want a compound head", p.KPageFlags)
		}
		if p := res.Runs[2].Page(1, 4096); p.SwapType != 2 || p.SwapOffset != 0x51 {
			t.Errorf("second swapped page: %+v", p)
		}
	}
}

func TestResolveFixtureNoFlags(t *testing.T) {
	fs := fixtureFS(t)
	if err := os.Remove(filepath.Join(fs.Proc, "kpagecount")); err != nil {
		t.Fatal(err)
	}
	r, err := New(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Resolve(7, fxBase, 4*4096)
	if err != nil {
		t.Fatal(err)
	}
	want := uint32(stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_EXCLUSIVE | stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
	if len(res.Runs) != 1 || res.Runs[0].GetState() != want || res.Runs[0].GetPfn() != 100 || res.Runs[0].GetNumaNode() != 0 {
		t.Errorf("runs %v, want one flags-unknown run with PFN and node", res.Runs)
	}
	if !errorsIs(res.Warning, ErrFlagsUnavailable) {
		t.Errorf("warning %v, want ErrFlagsUnavailable", res.Warning)
	}
	// Asking for them later cannot succeed either, and says why.
	added, err := r.AddFlags(7, -1, res.Runs)
	if !errorsIs(err, ErrFlagsUnavailable) || len(added) != 1 || added[0] != res.Runs[0] {
		t.Errorf("AddFlags: %v, %v; want the run back and ErrFlagsUnavailable", added, err)
	}
}

// TestResolveFixtureNoFlagsAsked resolves the fixture without kpageflags,
// by option and by request: pages keep their presence, PFN, node and swap
// entry, present ones are FLAGS_UNKNOWN with a warning that says why, and
// neither kpageflags nor kpagecount is read. AddFlags then reads them for
// the runs that need them and gives back what a full resolution gives.
func TestResolveFixtureNoFlagsAsked(t *testing.T) {
	fs := fixtureFS(t)
	full, err := New(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	want, err := full.Resolve(7, fxBase, fxPages*4096)
	if err != nil {
		t.Fatal(err)
	}
	noFlags, err := New(fs, Options{NoFlags: true})
	if err != nil {
		t.Fatal(err)
	}
	defer noFlags.Close()
	const (
		P = uint32(stratav1.PageState_PAGE_STATE_PRESENT)
		X = uint32(stratav1.PageState_PAGE_STATE_EXCLUSIVE)
		F = uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN | stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ)
		H = uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN)
	)
	for _, tt := range []struct {
		name string
		r    *Resolver
		mode FlagsMode
	}{
		{"option", noFlags, FlagsDefault},
		{"request", full, FlagsSkip},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p0, _ := tt.r.KPageStats()
			out := make([]Result, 1)
			if err := tt.r.ResolveBatch(7, []Request{{VAddr: fxBase, Length: fxPages * 4096, CPUNode: -1, Flags: tt.mode}}, out); err != nil {
				t.Fatal(err)
			}
			res := out[0]
			if p1, _ := tt.r.KPageStats(); p1 != p0 {
				t.Errorf("%d kpageflags/kpagecount preads, want none", p1-p0)
			}
			if res.Pages != fxPages || res.Present != 36 || res.Swapped != 3 || res.Unmapped != 1 || res.Hidden != 1 || res.Raced != 0 || res.THP != 0 {
				t.Errorf("counts %+v", res)
			}
			if !errors.Is(res.Warning, ErrFlagsNotRead) || !errors.Is(res.Warning, ErrPFNHidden) || errors.Is(res.Warning, ErrFlagsUnavailable) {
				t.Errorf("warning %v, want ErrFlagsNotRead and ErrPFNHidden", res.Warning)
			}
			got := pages(t, res.Runs, fxBase, fxPages)
			for i, w := range pages(t, want.Runs, fxBase, fxPages) {
				g := got[i]
				if g.PFN != w.PFN || g.NUMANode != w.NUMANode || g.SwapType != w.SwapType || g.SwapOffset != w.SwapOffset {
					t.Fatalf("page %d: %+v, full resolution %+v", i, g, w)
				}
				// Known from pagemap alone: every state bit but those
				// kpageflags gives; present pages with a PFN are
				// FLAGS_UNKNOWN and FLAGS_NOT_READ, with nothing in the flag fields.
				fromFlags := uint32(stratav1.PageState_PAGE_STATE_THP | stratav1.PageState_PAGE_STATE_RACED | stratav1.PageState_PAGE_STATE_HUGETLB)
				wantState := w.State &^ fromFlags
				if w.State&(P|H) == P {
					wantState |= F
				}
				if g.State != wantState || g.KPageFlags != 0 || g.KPageCount != 0 {
					t.Fatalf("page %d: state %#x flags %#x count %d, want state %#x and no flags", i, g.State, g.KPageFlags, g.KPageCount, wantState)
				}
			}
			// The pages with flags to read: present, not hidden.
			added, err := tt.r.AddFlags(7, -1, res.Runs)
			if err != nil {
				t.Fatal(err)
			}
			if len(added) != len(want.Runs) {
				t.Fatalf("AddFlags: %d runs, want %d:\n%v", len(added), len(want.Runs), added)
			}
			for i, w := range want.Runs {
				if !proto.Equal(added[i], w) {
					t.Errorf("AddFlags run %d = %v, want %v", i, added[i], w)
				}
			}
		})
	}
	// A request may ask for flags from a resolver that skips them by default.
	out := make([]Result, 1)
	if err := noFlags.ResolveBatch(7, []Request{{VAddr: fxBase, Length: fxPages * 4096, CPUNode: -1, Flags: FlagsRead}}, out); err != nil {
		t.Fatal(err)
	}
	if len(out[0].Runs) != len(want.Runs) || !proto.Equal(out[0].Runs[8], want.Runs[8]) || errors.Is(out[0].Warning, ErrFlagsNotRead) {
		t.Errorf("FlagsRead on a NoFlags resolver: %v, warning %v", out[0].Runs, out[0].Warning)
	}
	// Only some runs: the others come back as they were.
	res, err := noFlags.Resolve(7, fxBase, fxPages*4096)
	if err != nil {
		t.Fatal(err)
	}
	some := []*stratav1.PageRun{res.Runs[0], res.Runs[2], res.Runs[len(res.Runs)-1]}
	added, err := noFlags.AddFlags(7, -1, some)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 3 || !proto.Equal(added[0], want.Runs[0]) || added[1] != some[1] || !proto.Equal(added[2], want.Runs[len(want.Runs)-1]) {
		t.Errorf("AddFlags of three runs: %v", added)
	}
}
