package procmem

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/test/testenv"
)

// TestLiveSelf reads this process's own pagemap for a buffer it touched, then
// kpageflags, kpagecount and the node map, and checks them against each
// other and against move_pages.
func TestLiveSelf(t *testing.T) {
	testenv.RequireRoot(t)
	const pages = 64
	mem, err := unix.Mmap(-1, 0, pages*int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := 0; i < len(mem); i += int(pageSize) * 2 { // every other page
		mem[i] = 1
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))

	fs := Default()
	pm, err := fs.OpenPagemap(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	ents := make([]Entry, pages)
	if err := pm.Read(ents, base); err != nil {
		t.Fatal(err)
	}
	var spans []Span
	for i, e := range ents {
		if e.Present() != (i%2 == 0) {
			t.Fatalf("page %d: entry %#x, present should be %v", i, uint64(e), i%2 == 0)
		}
		if e.Present() {
			if e.PFN() == 0 || !e.Exclusive() {
				t.Fatalf("page %d: entry %#x: want a PFN and exclusive", i, uint64(e))
			}
			spans = append(spans, Span{PFN: e.PFN(), N: 1, Out: uint32(len(spans))})
		}
	}
	k, err := fs.OpenKPages()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	flags := make([]uint64, len(spans))
	counts := make([]uint64, len(spans))
	if err := k.ReadSpans(spans, flags, counts); err != nil {
		t.Fatal(err)
	}
	for i := range flags {
		const anon, nopage = 1 << 12, 1 << KPFNoPage
		if flags[i]&anon == 0 || flags[i]&nopage != 0 || counts[i] != 1 {
			t.Errorf("page %d: kpageflags %#x kpagecount %d, want anon and one mapping", i, flags[i], counts[i])
		}
	}

	nodes, err := fs.LoadNodeMap()
	if errors.Is(err, ErrNoNodeInfo) {
		t.Skipf("skipping node check: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]uintptr, pages)
	for i := range addrs {
		addrs[i] = uintptr(base + uint64(i)*pageSize)
	}
	status := make([]int32, pages)
	if err := MovePagesNodes(os.Getpid(), addrs, status); err != nil {
		t.Fatal(err)
	}
	for i, e := range ents {
		switch {
		case e.Present() && status[i] != nodes.Node(e.PFN()):
			t.Errorf("page %d: move_pages node %d, sysfs node %d", i, status[i], nodes.Node(e.PFN()))
		case !e.Present() && status[i] != -int32(unix.ENOENT):
			t.Errorf("page %d: absent, move_pages status %d, want -ENOENT", i, status[i])
		}
	}
}

// TestVMAAtSelf asks PROCMAP_QUERY (or the fallback) about a mapping with a
// hole punched in it.
func TestVMAAtSelf(t *testing.T) {
	ps := int(pageSize)
	mem, err := unix.Mmap(-1, 0, 3*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	if err := unix.MunmapPtr(unsafe.Pointer(&mem[ps]), uintptr(ps)); err != nil {
		t.Fatal(err)
	}
	defer unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(ps))
	defer unix.MunmapPtr(unsafe.Pointer(&mem[2*ps]), uintptr(ps))
	m, err := Default().OpenMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := uint64(ps)
	for _, tt := range []struct{ addr, start, end uint64 }{
		{base, base, base + p},
		{base + p, base + 2*p, base + 3*p}, // the hole: the next mapping
		{base + 2*p + 5, base + 2*p, base + 3*p},
	} {
		v, ok, err := m.VMAAt(tt.addr)
		// Neighbouring mappings may merge with ours; only the hole is certain.
		if err != nil || !ok || v.Start > tt.start || v.End < tt.end || (tt.addr == base+p && v.Start != base+2*p) {
			t.Errorf("VMAAt(%#x) = %+v, %v, %v; want [%#x, %#x)", tt.addr, v, ok, err, tt.start, tt.end)
		}
		want := pageSize
		if m.noQuery {
			want = 0 // unknown without PROCMAP_QUERY
		}
		if v.PageSize != want {
			t.Errorf("VMAAt(%#x): page size %d, want %d", tt.addr, v.PageSize, want)
		}
	}
	t.Logf("PROCMAP_QUERY in use: %v", !m.noQuery)
}
