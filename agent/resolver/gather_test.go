package resolver

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// TestGatheredMatchesAlone resolves a walk's shape of requests (extents of
// 1 to 600 pages, 1 to 300 pages apart, starting and ending inside THPs,
// running into untouched pages and over an unmapped page) in one batch,
// where a chunk reads the nearby ones together, and each on its own: every
// result is the same, and without flags the batch makes a third of the
// reads or fewer.
func TestGatheredMatchesAlone(t *testing.T) {
	testenv.RequireRoot(t)
	const n = 4096
	c := resolvertest.Start(t, []resolvertest.Region{
		{Name: "full", Pages: n, Touch: resolvertest.TouchAll},
		{Name: "half", Pages: n, Touch: resolvertest.TouchHalf},
		{Name: "thp", Pages: n, Touch: resolvertest.TouchAll, THP: true},
		{Name: "hole", Hole: true, Touch: resolvertest.TouchAll},
	}, nil)
	ps := procmem.PageSize()
	var reqs []Request
	extent := func(region string, page, pages uint64) {
		reqs = append(reqs, Request{VAddr: c.Addr[region] + page*ps, Length: pages * ps, CPUNode: int32(len(reqs)%3) - 1})
	}
	for _, region := range []string{"full", "half", "thp"} {
		sizes := []uint64{1, 3, 1, 8, 600, 2, 1, 40, 1, 1, 130}
		gaps := []uint64{1, 1, 5, 300, 2, 1, 256, 7, 1, 90, 3}
		at := uint64(100) // inside the first THP of "thp"
		for k := range sizes {
			if at+sizes[k] > n {
				break
			}
			extent(region, at, sizes[k])
			at += sizes[k] + gaps[k]
		}
	}
	extent("hole", 0, 1)
	extent("hole", 1, 2) // the unmapped page and the one after
	// Requests gather skips: one mid-page (its page is the one before's),
	// one below the one before.
	reqs = append(reqs, Request{VAddr: reqs[len(reqs)-1].VAddr + ps + 8, Length: 8, CPUNode: -1}, Request{VAddr: c.Addr["full"], Length: ps, CPUNode: -1})
	if kb, err := c.AnonHugePages(c.Addr["thp"]); err != nil || kb < n*4 {
		t.Logf("THP not granted (AnonHugePages %d KiB, %v): the THP extents are 4 KiB pages", kb, err)
	}
	for _, opts := range []Options{{}, {ChunkPages: 512}, {NoRecheck: true}, {NoFlags: true}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			r := newResolver(t, opts)
			together := make([]Result, len(reqs))
			s0 := readSyscalls(t)
			if err := r.ResolveBatch(c.Pid, reqs, together); err != nil {
				t.Fatal(err)
			}
			s1 := readSyscalls(t)
			for i, q := range reqs {
				var alone [1]Result
				if err := r.ResolveBatch(c.Pid, []Request{q}, alone[:]); err != nil {
					t.Fatal(err)
				}
				a, b := alone[0], together[i]
				if (a.Err == nil) != (b.Err == nil) || a.Pages != b.Pages || a.Present != b.Present || a.Unmapped != b.Unmapped ||
					a.THP != b.THP || a.Raced != b.Raced || fmt.Sprint(a.Warning) != fmt.Sprint(b.Warning) {
					t.Fatalf("request %d %#x+%#x: alone %+v, in the batch %+v", i, q.VAddr, q.Length, a, b)
				}
				// The two reads are moments apart: a page's volatile flags
				// may differ, and its run is then cut elsewhere. The pages
				// agree but for those flags, the runs wherever none changed.
				pa, pb := pages(t, a.Runs, q.VAddr&^(ps-1), int(a.Pages)), pages(t, b.Runs, q.VAddr&^(ps-1), int(b.Pages))
				if !slices.Equal(pa, pb) {
					if !slices.Equal(settled(pa), settled(pb)) {
						t.Fatalf("request %d %#x+%#x: pages differ: alone %v, in the batch %v", i, q.VAddr, q.Length, a.Runs, b.Runs)
					}
					continue
				}
				if len(a.Runs) != len(b.Runs) {
					t.Fatalf("request %d %#x+%#x: alone %d runs, in the batch %d", i, q.VAddr, q.Length, len(a.Runs), len(b.Runs))
				}
				for k := range a.Runs {
					if !proto.Equal(a.Runs[k], b.Runs[k]) {
						t.Fatalf("request %d run %d: alone %v, in the batch %v", i, k, a.Runs[k], b.Runs[k])
					}
				}
			}
			s2 := readSyscalls(t)
			// Without flags every read is of pagemap (or maps): the
			// gathered requests share theirs.
			if opts.NoFlags && 3*(s1-s0) > s2-s1 {
				t.Errorf("read syscalls: %d for the batch, %d one request at a time; want at most a third", s1-s0, s2-s1)
			}
			t.Logf("%d requests: %d read syscalls together, %d alone", len(reqs), s1-s0, s2-s1)
		})
	}
}

// readSyscalls is this process's count of read system calls so far
// (/proc/self/io syscr: read, pread and their kin).
func readSyscalls(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no syscr in /proc/self/io")
	return 0
}

// volatileFlags are the kpageflags bits the kernel changes on a page
// without anyone touching it (a new page reaches the LRU lists from a
// per-CPU batch later, reclaim ages it, a kdamond monitoring physical
// addresses marks the pages it samples idle): two reads of one page may
// differ in them.
const volatileFlags = 1<<2 | 1<<5 | 1<<6 | 1<<25 // REFERENCED, LRU, ACTIVE, IDLE

// settled is pages without volatileFlags.
func settled(pages []stratav1.Page) []stratav1.Page {
	out := slices.Clone(pages)
	for i := range out {
		out[i].KPageFlags &^= volatileFlags
	}
	return out
}
