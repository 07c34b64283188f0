package resolver

import (
	"errors"
	"os"
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// pages expands runs into pages, checking that they tile the range.
func pages(t *testing.T, runs []*stratav1.PageRun, vaddr uint64, n int) []stratav1.Page {
	t.Helper()
	ps := procmem.PageSize()
	var out []stratav1.Page
	next := vaddr
	for _, r := range runs {
		if r.GetVaddr() != next || r.GetCount() == 0 {
			t.Fatalf("run at %#x count %d, want a run at %#x", r.GetVaddr(), r.GetCount(), next)
		}
		for i := range r.GetCount() {
			out = append(out, r.Page(i, ps))
		}
		next += uint64(r.GetCount()) * ps
	}
	if len(out) != n {
		t.Fatalf("runs cover %d pages, want %d", len(out), n)
	}
	return out
}

// independent reads pagemap and kpageflags one page at a time, with nothing
// shared with the resolver but the entry decoding.
func independent(t *testing.T, pid int, vaddr uint64, n int) ([]procmem.Entry, []uint64, []uint64) {
	t.Helper()
	pm, err := procmem.Default().OpenPagemap(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	kp, err := procmem.Default().OpenKPages()
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	ents := make([]procmem.Entry, n)
	flags := make([]uint64, n)
	counts := make([]uint64, n)
	for i := range ents {
		if err := pm.Read(ents[i:i+1], vaddr+uint64(i)*procmem.PageSize()); err != nil {
			t.Fatal(err)
		}
		if ents[i].Present() {
			if err := kp.ReadFlags(flags[i:i+1], ents[i].PFN()); err != nil {
				t.Fatal(err)
			}
			if err := kp.ReadCounts(counts[i:i+1], ents[i].PFN()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ents, flags, counts
}

func newResolver(t testing.TB, opts Options) *Resolver {
	t.Helper()
	r, err := New(procmem.Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestResolveLive(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 2048 // 8 MiB per region
	c := resolvertest.Start(t, []resolvertest.Region{
		{Name: "full", Pages: n, Touch: resolvertest.TouchAll},
		{Name: "half", Pages: n, Touch: resolvertest.TouchHalf},
		{Name: "thp", Pages: n, Touch: resolvertest.TouchAll, THP: true},
		{Name: "hole", Hole: true, Touch: resolvertest.TouchAll},
		{Name: "zero", Pages: 16, Touch: resolvertest.TouchRead},
	}, nil)
	// Small chunks make the runs cross chunk boundaries too.
	for _, opts := range []Options{{}, {ChunkPages: 512, NoRecheck: true}} {
		r := newResolver(t, opts)
		t.Run("full", func(t *testing.T) {
			res, err := r.Resolve(c.Pid, c.Addr["full"], n*procmem.PageSize())
			if err != nil {
				t.Fatal(err)
			}
			if res.Warning != nil || res.Pages != n || res.Present != n || res.THP != 0 || res.Raced != 0 {
				t.Fatalf("result %+v", res)
			}
			ents, flags, counts := independent(t, c.Pid, c.Addr["full"], n)
			for i, p := range pages(t, res.Runs, c.Addr["full"], n) {
				if !p.Is(stratav1.PageState_PAGE_STATE_PRESENT) || p.PFN != ents[i].PFN() || p.KPageFlags&^(1<<25) != flags[i]&^(1<<25) {
					t.Fatalf("page %d: %+v, independent pfn %#x flags %#x", i, p, ents[i].PFN(), flags[i])
				}
				if p.KPageCount != counts[i] || p.NUMANode != r.Nodes().Node(p.PFN) || (r.Nodes() != nil && p.NUMANode < 0) {
					t.Fatalf("page %d: count %d node %d", i, p.KPageCount, p.NUMANode)
				}
			}
			// Node per page from sysfs agrees with move_pages(2).
			if r.Nodes() == nil {
				t.Skip("skipping node check: no memory block information in sysfs")
			}
			addrs := make([]uintptr, n)
			status := make([]int32, n)
			for i := range addrs {
				addrs[i] = uintptr(c.Addr["full"] + uint64(i)*procmem.PageSize())
			}
			if err := procmem.MovePagesNodes(c.Pid, addrs, status); err != nil {
				t.Fatal(err)
			}
			for i, p := range pages(t, res.Runs, c.Addr["full"], n) {
				if p.NUMANode != status[i] {
					t.Fatalf("page %d: node %d, move_pages %d", i, p.NUMANode, status[i])
				}
			}
			t.Logf("%d pages in %d runs", n, len(res.Runs))
		})
		t.Run("half", func(t *testing.T) {
			// Start mid-page and end mid-page: the range widens to whole pages.
			res, err := r.Resolve(c.Pid, c.Addr["half"]+100, n*procmem.PageSize()-200)
			if err != nil {
				t.Fatal(err)
			}
			if res.Pages != n || res.Present != n/2 || res.Unmapped != 0 {
				t.Fatalf("pages %d present %d unmapped %d, want %d %d 0", res.Pages, res.Present, res.Unmapped, n, n/2)
			}
			ps := pages(t, res.Runs, c.Addr["half"], n)
			for i, p := range ps {
				if p.Is(stratav1.PageState_PAGE_STATE_PRESENT) != (i < n/2) || p.State&uint32(stratav1.PageState_PAGE_STATE_UNMAPPED) != 0 {
					t.Fatalf("page %d state %#x", i, p.State)
				}
			}
			if last := res.Runs[len(res.Runs)-1]; last.GetCount() != n/2 || last.GetState() != 0 || last.GetNumaNode() != -1 {
				t.Errorf("untouched half: %v", last)
			}
		})
		t.Run("thp", func(t *testing.T) {
			if kb, err := c.AnonHugePages(c.Addr["thp"]); err != nil || kb < n*4 {
				t.Skipf("skipping: THP not granted (AnonHugePages %d KiB, %v)", kb, err)
			}
			// Start in the middle of the first THP: the folio size still comes out.
			off := uint64(100) * procmem.PageSize()
			res, err := r.Resolve(c.Pid, c.Addr["thp"]+off, n*procmem.PageSize()-off)
			if err != nil {
				t.Fatal(err)
			}
			if res.THP != n-100 || res.Present != n-100 {
				t.Fatalf("thp %d present %d, want %d", res.THP, res.Present, n-100)
			}
			if len(res.Runs) != n/512 {
				t.Fatalf("%d runs, want %d", len(res.Runs), n/512)
			}
			for i, run := range res.Runs {
				want := uint32(512)
				if i == 0 {
					want = 412
				}
				if run.GetCount() != want || run.GetFolioPages() != 512 || run.GetState()&uint32(stratav1.PageState_PAGE_STATE_THP) == 0 ||
					run.GetKpageflags()&(1<<stratav1.KPFTHP) == 0 || run.GetKpageflags()&(3<<15) != 0 {
					t.Fatalf("run %d: %v", i, run)
				}
			}
			ents, flags, counts := independent(t, c.Pid, c.Addr["thp"]+off, n-100)
			for i, p := range pages(t, res.Runs, c.Addr["thp"]+off, n-100) {
				if p.PFN != ents[i].PFN() || p.KPageFlags&^(1<<25) != flags[i]&^(1<<25) || p.KPageCount != counts[i] {
					t.Fatalf("page %d: pfn %#x flags %#x, independent %#x %#x", i, p.PFN, p.KPageFlags, ents[i].PFN(), flags[i])
				}
			}
		})
		t.Run("zero", func(t *testing.T) {
			// Read-only touches map the shared zero page: present, one PFN
			// for all, so one run per page.
			res, err := r.Resolve(c.Pid, c.Addr["zero"], 16*procmem.PageSize())
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range pages(t, res.Runs, c.Addr["zero"], 16) {
				if !p.Is(stratav1.PageState_PAGE_STATE_PRESENT) || p.KPageFlags&(1<<24) == 0 || p.PFN == 0 {
					t.Fatalf("page %d: %+v, want the zero page", i, p)
				}
			}
		})
		t.Run("hole", func(t *testing.T) {
			res, err := r.Resolve(c.Pid, c.Addr["hole"], 3*procmem.PageSize())
			if err != nil {
				t.Fatal(err)
			}
			ps := pages(t, res.Runs, c.Addr["hole"], 3)
			if res.Unmapped != 1 || ps[1].State != uint32(stratav1.PageState_PAGE_STATE_UNMAPPED) ||
				!ps[0].Is(stratav1.PageState_PAGE_STATE_PRESENT) || !ps[2].Is(stratav1.PageState_PAGE_STATE_PRESENT) {
				t.Fatalf("hole: %+v", ps)
			}
		})
	}
}

func TestResolveBatchCPUNode(t *testing.T) {
	testenv.RequireRoot(t)
	c := resolvertest.Start(t, []resolvertest.Region{{Name: "a", Pages: 64}}, nil)
	r := newResolver(t, Options{})
	reqs := []Request{
		{VAddr: c.Addr["a"], Length: 64 * procmem.PageSize(), CPUNode: -1},
		{VAddr: c.Addr["a"], Length: 64 * procmem.PageSize(), CPUNode: 1 << 20}, // a node nothing is on
		{VAddr: c.Addr["a"], Length: 0, CPUNode: -1},
	}
	out := make([]Result, len(reqs))
	if err := r.ResolveBatch(c.Pid, reqs, out); err != nil {
		t.Fatal(err)
	}
	for _, run := range out[0].Runs {
		if run.GetState()&uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE) != 0 {
			t.Errorf("unknown CPU node, yet CROSS_NODE: %v", run)
		}
	}
	for _, run := range out[1].Runs {
		if run.GetState()&uint32(stratav1.PageState_PAGE_STATE_CROSS_NODE) == 0 {
			t.Errorf("CPU on another node, yet no CROSS_NODE: %v", run)
		}
	}
	if !errors.Is(out[2].Err, ErrBadRange) {
		t.Errorf("empty range: %v, want ErrBadRange", out[2].Err)
	}
}

func TestResolveGone(t *testing.T) {
	testenv.RequireRoot(t)
	r := newResolver(t, Options{})
	c := resolvertest.Start(t, []resolvertest.Region{{Name: "a", Pages: 4}}, nil)
	// A zombie: /proc/PID exists, its memory does not.
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile("/proc/" + itoa(c.Pid) + "/stat")
		if err != nil || containsState(b, 'Z') {
			break
		}
	}
	if _, err := r.Resolve(c.Pid, c.Addr["a"], 4096); !errors.Is(err, ErrProcessGone) {
		t.Errorf("zombie: %v, want ErrProcessGone", err)
	}
	c.Stop()
	if _, err := r.Resolve(c.Pid, c.Addr["a"], 4096); !errors.Is(err, ErrProcessGone) {
		t.Errorf("reaped: %v, want ErrProcessGone", err)
	}
}

func TestResolveOutOfRange(t *testing.T) {
	testenv.RequireRoot(t)
	r := newResolver(t, Options{})
	// Past the 57-bit user space of any x86-64 or arm64 kernel.
	if _, err := r.Resolve(os.Getpid(), 1<<60, 4096); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("kernel address: %v, want ErrOutOfRange", err)
	}
	if _, err := r.Resolve(os.Getpid(), ^uint64(0)-10, 100); !errors.Is(err, ErrBadRange) {
		t.Errorf("wrapping range: %v, want ErrBadRange", err)
	}
}

// TestResolveRaces resolves a region whose pages the child frees and
// re-faults in a loop. Pages freed or reused between the pagemap and
// kpageflags reads must come back RACED; every page not marked so must have
// the flags of a mapped anonymous page.
func TestResolveRaces(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 1024
	c := resolvertest.Start(t, []resolvertest.Region{{Name: "churn", Pages: n, Touch: resolvertest.TouchChurn}}, nil)
	const anonMapped = 1<<12 | 1<<11
	var raced, present uint64
	for _, opts := range []Options{{ChunkPages: 512}, {ChunkPages: 512, NoRecheck: true}} {
		r := newResolver(t, opts)
		for range 30 {
			res, err := r.Resolve(c.Pid, c.Addr["churn"], n*procmem.PageSize())
			if err != nil {
				t.Fatal(err)
			}
			raced += res.Raced
			present += res.Present
			if opts.NoRecheck {
				continue // without the second read a reused page can pass
			}
			for _, run := range res.Runs {
				st := run.GetState()
				if st&uint32(stratav1.PageState_PAGE_STATE_PRESENT) == 0 || st&uint32(stratav1.PageState_PAGE_STATE_RACED) != 0 {
					continue
				}
				if f := run.GetKpageflags(); f&anonMapped != anonMapped || f&(1<<procmem.KPFBuddy|1<<procmem.KPFNoPage) != 0 {
					t.Fatalf("run not marked raced with flags %#x: %v", f, run)
				}
			}
		}
	}
	t.Logf("%d present page reads, %d raced", present, raced)
	if raced == 0 {
		t.Log("no race was caught this time (timing dependent)")
	}
}

// TestResolveNoFlagsLive resolves 4 KiB pages and THPs without kpageflags:
// PFNs and nodes as pagemap and sysfs give them, PMD-mapped THPs still
// known as THP folios of 512 pages from PAGEMAP_SCAN, no kpageflags read;
// then AddFlags fills in two runs as a full resolution sees them.
func TestResolveNoFlagsLive(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 2048
	c := resolvertest.Start(t, []resolvertest.Region{
		{Name: "4k", Pages: n},
		{Name: "thp", Pages: n, THP: true},
	}, nil)
	r := newResolver(t, Options{NoFlags: true})
	full := newResolver(t, Options{})
	ps := procmem.PageSize()
	t.Run("4k", func(t *testing.T) {
		res, err := r.Resolve(c.Pid, c.Addr["4k"], n*ps)
		if err != nil {
			t.Fatal(err)
		}
		if res.Present != n || res.THP != 0 || !errors.Is(res.Warning, ErrFlagsNotRead) {
			t.Fatalf("result %+v", res)
		}
		ents, flags, counts := independent(t, c.Pid, c.Addr["4k"], n)
		for i, p := range pages(t, res.Runs, c.Addr["4k"], n) {
			if p.PFN != ents[i].PFN() || p.NUMANode != r.Nodes().Node(p.PFN) || p.KPageFlags != 0 || p.KPageCount != 0 ||
				!p.Is(stratav1.PageState_PAGE_STATE_PRESENT|stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN) ||
				p.State&uint32(stratav1.PageState_PAGE_STATE_THP|stratav1.PageState_PAGE_STATE_RACED) != 0 {
				t.Fatalf("page %d: %+v, pagemap pfn %#x", i, p, ents[i].PFN())
			}
		}
		// Flags for the first run and the last, as one would for pages shown.
		some := []*stratav1.PageRun{res.Runs[0], res.Runs[len(res.Runs)-1]}
		added, err := r.AddFlags(c.Pid, -1, some)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		for _, run := range added {
			off := int((run.GetVaddr() - c.Addr["4k"]) / ps)
			for k := range run.GetCount() {
				p := run.Page(k, ps)
				i := off + int(k)
				if p.Is(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN) || p.PFN != ents[i].PFN() ||
					p.KPageFlags&^(1<<25) != flags[i]&^(1<<25) || p.KPageCount != counts[i] {
					t.Fatalf("page %d after AddFlags: %+v, independent flags %#x", i, p, flags[i])
				}
				got++
			}
		}
		if want := int(some[0].GetCount() + some[1].GetCount()); got != want {
			t.Fatalf("AddFlags gave %d pages, want %d", got, want)
		}
	})
	t.Run("thp", func(t *testing.T) {
		if kb, err := c.AnonHugePages(c.Addr["thp"]); err != nil || kb < n*4 {
			t.Skipf("skipping: THP not granted (AnonHugePages %d KiB, %v)", kb, err)
		}
		want, err := full.Resolve(c.Pid, c.Addr["thp"], n*ps)
		if err != nil {
			t.Fatal(err)
		}
		p0, _ := r.KPageStats()
		res, err := r.Resolve(c.Pid, c.Addr["thp"], n*ps)
		if err != nil {
			t.Fatal(err)
		}
		if p1, _ := r.KPageStats(); p1 != p0 {
			t.Errorf("%d kpageflags preads, want none", p1-p0)
		}
		if r.noScan {
			t.Skip("skipping: no PAGEMAP_SCAN, so no THP without flags")
		}
		if res.THP != n || len(res.Runs) != n/512 || len(want.Runs) != n/512 {
			t.Fatalf("%d THP pages in %d runs (full resolution: %d runs), want %d in %d", res.THP, len(res.Runs), len(want.Runs), n, n/512)
		}
		for i, run := range res.Runs {
			w := want.Runs[i]
			if run.GetVaddr() != w.GetVaddr() || run.GetCount() != 512 || run.GetPfn() != w.GetPfn() || run.GetFolioPages() != 512 ||
				run.GetNumaNode() != w.GetNumaNode() || run.GetState() != w.GetState()|uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN|stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ) {
				t.Fatalf("run %d = %v, full resolution %v", i, run, w)
			}
		}
		added, err := r.AddFlags(c.Pid, -1, res.Runs[1:2])
		if err != nil {
			t.Fatal(err)
		}
		if len(added) != 1 || !sameRun(added[0], want.Runs[1]) {
			t.Fatalf("AddFlags: %v, want %v", added, want.Runs[1])
		}
	})
}

// sameRun compares two runs but for the IDLE flag, which kdamond flips
// between reads.
func sameRun(x, y *stratav1.PageRun) bool {
	const idle = 1 << 25
	return x.GetVaddr() == y.GetVaddr() && x.GetCount() == y.GetCount() && x.GetState() == y.GetState() &&
		x.GetPfn() == y.GetPfn() && x.GetKpageflags()&^idle == y.GetKpageflags()&^idle && x.GetFolioPages() == y.GetFolioPages() &&
		x.GetKpagecount() == y.GetKpagecount() && x.GetNumaNode() == y.GetNumaNode() && len(x.GetPfnDeltas()) == len(y.GetPfnDeltas())
}

// TestMidReuse: a present private anonymous page reads ANON and MMAP in
// kpageflags; one that does not was read between its unmap and its reuse
// (the churn test caught one once: LRU and UPTODATE only, same PFN at the
// same address on both pagemap reads).
func TestMidReuse(t *testing.T) {
	const (
		anon, mmap, lru, uptodate = 1 << procmem.KPFAnon, 1 << procmem.KPFMmap, 1 << 5, 1 << 3
		zero, huge                = 1 << procmem.KPFZeroPage, 1 << procmem.KPFHuge
	)
	private := procmem.Entry(procmem.EntryPresent | 42)
	shared := private | procmem.EntryFileShared
	for _, tt := range []struct {
		name  string
		e     procmem.Entry
		flags uint64
		want  bool
	}{
		{"mapped anon", private, anon | mmap | lru | uptodate, false},
		{"anon, unmapped", private, anon | lru | uptodate, true},
		{"neither", private, lru | uptodate, true},
		{"zero page", private, zero | mmap, false},
		{"hugetlb", private, huge | mmap, false},
		{"file page", shared, mmap | lru | uptodate, false},
	} {
		if got := midReuse(tt.e, tt.flags); got != tt.want {
			t.Errorf("%s: midReuse = %v, want %v", tt.name, got, tt.want)
		}
	}
}
