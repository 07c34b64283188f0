package resolver

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	"github.com/stratatrace/strata/test/testenv"
)

const benchPages = 1 << 18 // 1 GiB of 4 KiB pages

var (
	benchOnce  sync.Once
	benchChild *resolvertest.Child
	benchErr   string
)

// benchTarget starts (once per test binary) a child with 1 GiB touched in
// 4 KiB pages and 1 GiB touched in THPs. First touch is slow on the VM, so
// every benchmark shares it.
func benchTarget(b testing.TB) *resolvertest.Child {
	testenv.RequireRoot(b)
	benchOnce.Do(func() {
		start := time.Now()
		benchChild = resolvertest.Start(&onceTB{b}, []resolvertest.Region{
			{Name: "4k", Pages: benchPages},
			{Name: "thp", Pages: benchPages, THP: true},
		}, nil)
		b.Logf("touched 2 GiB in %v", time.Since(start))
		if kb, err := benchChild.AnonHugePages(benchChild.Addr["thp"]); err != nil || kb < benchPages*4 {
			benchErr = "THP not granted"
		}
	})
	if benchChild == nil {
		b.Fatal("bench child did not start")
	}
	return benchChild
}

// onceTB lets the shared child outlive the first benchmark: it is killed
// when the test binary exits (its stdin closes).
type onceTB struct{ testing.TB }

func (onceTB) Cleanup(func()) {}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// baseline resolves n pages the naive way: one pagemap pread per page and,
// withFlags, one kpageflags pread per page, plus the node lookup. (It reads
// no kpagecount, which the resolver does for non-exclusive pages, so the
// ratio is, if anything, understated.) It returns wall and CPU time.
func baseline(b *testing.B, pid int, vaddr uint64, n int, nodes *procmem.NodeMap, withFlags bool) (time.Duration, time.Duration) {
	pm, err := procmem.Default().OpenPagemap(pid)
	if err != nil {
		b.Fatal(err)
	}
	defer pm.Close()
	kp, err := procmem.Default().OpenKPages()
	if err != nil {
		b.Fatal(err)
	}
	defer kp.Close()
	var e [1]procmem.Entry
	var f [1]uint64
	present := 0
	start, cpu0 := time.Now(), cpuTime()
	for i := range n {
		if err := pm.Read(e[:], vaddr+uint64(i)*procmem.PageSize()); err != nil {
			b.Fatal(err)
		}
		if pfn := e[0].PFN(); pfn != 0 {
			if withFlags {
				if err := kp.ReadFlags(f[:], pfn); err != nil {
					b.Fatal(err)
				}
			}
			_ = nodes.Node(pfn)
			present++
		}
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if present != n {
		b.Fatalf("baseline: %d of %d pages present", present, n)
	}
	return wall, cpu
}

// floorBufs are the floor's buffers, allocated and touched once so that
// the floor's time holds no page faults of its own.
type floorBufs struct {
	ents  []procmem.Entry
	flags []uint64
	spans []procmem.Span
}

func newFloorBufs(n int) *floorBufs {
	f := &floorBufs{ents: make([]procmem.Entry, n), flags: make([]uint64, n), spans: make([]procmem.Span, n)}
	for i := range n {
		f.ents[i], f.flags[i], f.spans[i] = 1, 1, procmem.Span{N: 1}
	}
	return f
}

// floor measures what no resolver of this range can avoid, in CPU time:
// one bulk pagemap read and one kpageflags entry per present PFN, in sorted
// merged preads (the resolver's reader and merge gap). It returns the
// pagemap read alone (the floor without flags), the whole, and the preads
// of kpageflags.
func floor(b *testing.B, pid int, vaddr uint64, buf *floorBufs) (pagemap, whole time.Duration, preads uint64) {
	pm, err := procmem.Default().OpenPagemap(pid)
	if err != nil {
		b.Fatal(err)
	}
	defer pm.Close()
	kp, err := procmem.Default().OpenKPages()
	if err != nil {
		b.Fatal(err)
	}
	defer kp.Close()
	ents, spans := buf.ents, buf.spans[:0]
	cpu0 := cpuTime()
	if err := pm.Read(ents, vaddr); err != nil {
		b.Fatal(err)
	}
	pagemap = cpuTime() - cpu0
	for i, e := range ents {
		if k := len(spans) - 1; k >= 0 && e.PFN() == spans[k].PFN+uint64(spans[k].N) && int(spans[k].Out)+int(spans[k].N) == i {
			spans[k].N++
		} else {
			spans = append(spans, procmem.Span{PFN: e.PFN(), N: 1, Out: uint32(i)})
		}
	}
	if err := kp.ReadSpans(spans, buf.flags, nil); err != nil {
		b.Fatal(err)
	}
	whole = cpuTime() - cpu0
	preads, _ = kp.Stats()
	return pagemap, whole, preads
}

// baselinePages is how many pages the baseline reads before and after the
// timed loop; interleaving it so makes the ratio robust to load changes.
const baselinePages = 1 << 16

// benchResolve resolves a whole region per iteration and reports pages per
// CPU-second, the ratio to the page-at-a-time baseline, and the ratio of
// the kernel floor's CPU time to the resolver's (1 would be no cost beyond
// the kernel's): with flags, floor is one bulk pagemap read plus the
// kpageflags of every PFN, and recheck-floor adds the second pagemap read
// the recheck asks for; without flags, pagemap-floor is the bulk pagemap
// read alone. The floor is measured after every iteration, off the clock,
// so that both see the same load on a shared machine.
func benchResolve(b *testing.B, region string, opts Options) {
	c := benchTarget(b)
	if region == "thp" && benchErr != "" {
		b.Skip("skipping: " + benchErr)
	}
	r := newResolver(b, opts)
	withFlags := !opts.NoFlags
	vaddr := c.Addr[region]
	bw1, bc1 := baseline(b, c.Pid, vaddr, baselinePages, r.Nodes(), withFlags)
	fb := newFloorBufs(benchPages)
	floor(b, c.Pid, vaddr, fb) // warms the reader

	b.ResetTimer()
	pr0, en0 := r.KPageStats()
	var cpu, pmFloor, fl time.Duration
	var flPreads uint64
	var res Result
	for range b.N {
		cpu0 := cpuTime()
		var err error
		res, err = r.Resolve(c.Pid, vaddr, benchPages*procmem.PageSize())
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
		b.StopTimer()
		p, w, pr := floor(b, c.Pid, vaddr, fb)
		pmFloor, fl, flPreads = pmFloor+p, fl+w, pr
		b.StartTimer()
	}
	b.StopTimer()
	pr1, en1 := r.KPageStats()
	bw2, bc2 := baseline(b, c.Pid, vaddr+benchPages/2*procmem.PageSize(), baselinePages, r.Nodes(), withFlags)
	if res.Present != benchPages {
		b.Fatalf("%d of %d pages present", res.Present, benchPages)
	}
	pages := float64(benchPages) * float64(b.N)
	pps, cpuPPS := pages/b.Elapsed().Seconds(), pages/cpu.Seconds()
	basePPS := 2 * baselinePages / (bw1 + bw2).Seconds()
	baseCPUPPS := 2 * baselinePages / (bc1 + bc2).Seconds()
	perPage := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / pages }
	b.ReportMetric(pps/1e6, "Mpages/s")
	b.ReportMetric(cpuPPS/1e6, "Mpages/cpu-s")
	b.ReportMetric(pps/basePPS, "x-baseline")
	b.ReportMetric(cpuPPS/baseCPUPPS, "x-baseline-cpu")
	what := "pagemap and kpageflags"
	switch {
	case !withFlags:
		what = "pagemap"
		b.ReportMetric(float64(pmFloor)/float64(cpu), "pagemap-floor-over-resolver-cpu")
		b.Logf("%s: floor (bulk pagemap) %.1f ns/page CPU, resolver %.1f ns/page CPU", region, perPage(pmFloor), perPage(cpu))
	case opts.NoRecheck:
		b.ReportMetric(float64(fl)/float64(cpu), "floor-over-resolver-cpu")
		b.Logf("%s: floor (bulk pagemap + kpageflags of every PFN) %.1f ns/page CPU, resolver %.1f ns/page CPU",
			region, perPage(fl), perPage(cpu))
	default:
		b.ReportMetric(float64(fl)/float64(cpu), "floor-over-resolver-cpu")
		b.ReportMetric(float64(fl+pmFloor)/float64(cpu), "recheck-floor-over-resolver-cpu")
		b.Logf("%s: floor (bulk pagemap + kpageflags of every PFN) %.1f ns/page CPU, with the recheck's second pagemap read %.1f, resolver %.1f ns/page CPU",
			region, perPage(fl), perPage(fl+pmFloor), perPage(cpu))
	}
	b.ReportMetric(0, "ns/op")
	b.Logf("%s: per page %.3f kpage preads (floor %.3f), %.3f kpage entries", region, float64(pr1-pr0)/pages, float64(flPreads)/benchPages, float64(en1-en0)/pages)
	b.Logf("%s: %.1f M pages/s wall, %.1f M pages per CPU-second; baseline (pread of %s per page) %.2f M pages/s wall, %.2f M per CPU-second; ratio %.1fx wall, %.1fx CPU; %d runs, %d raced",
		region, pps/1e6, cpuPPS/1e6, what, basePPS/1e6, baseCPUPPS/1e6, pps/basePPS, cpuPPS/baseCPUPPS, len(res.Runs), res.Raced)
}

func BenchmarkResolve(b *testing.B) {
	for _, region := range []string{"4k", "thp"} {
		b.Run(region, func(b *testing.B) { benchResolve(b, region, Options{}) })
		b.Run(region+"-norecheck", func(b *testing.B) { benchResolve(b, region, Options{NoRecheck: true}) })
		b.Run(region+"-noflags", func(b *testing.B) { benchResolve(b, region, Options{NoFlags: true}) })
	}
}

// BenchmarkResolveBatch is the annotator's shape: many 1 MiB blocks of one
// process per call.
func BenchmarkResolveBatch(b *testing.B) {
	for _, region := range []string{"4k", "thp"} {
		b.Run(region, func(b *testing.B) {
			c := benchTarget(b)
			r := newResolver(b, Options{})
			const blocks, size = 256, 1 << 20
			reqs := make([]Request, blocks)
			for i := range reqs {
				reqs[i] = Request{VAddr: c.Addr[region] + uint64(i)*size*3, Length: size, CPUNode: -1}
			}
			out := make([]Result, blocks)
			cpu0 := cpuTime()
			for b.Loop() {
				if err := r.ResolveBatch(c.Pid, reqs, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*blocks), "µs/block")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*blocks), "cpu-µs/block")
		})
	}
}

// BenchmarkResolveWalk is a walked block's shape: the pages of a walk's
// extents (objects laid out between other objects) resolved through the
// pool as the annotator does, one request per extent in one call, beside
// the same number of pages as one contiguous range, in the same run. It
// reports CPU-µs per walk and per range and their ratio, for extents of 1
// and 8 pages a page apart and of 1 page 7 pages apart.
func BenchmarkResolveWalk(b *testing.B) {
	for _, shape := range []struct {
		name       string
		pages, gap uint64
	}{{"1p-gap1", 1, 1}, {"8p-gap1", 8, 1}, {"1p-gap7", 1, 7}} {
		b.Run(shape.name, func(b *testing.B) {
			c := benchTarget(b)
			p, err := NewPool(procmem.Default(), 1, Options{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			const walkPages = 1 << 15 // 128 MiB of objects
			ps := procmem.PageSize()
			n := walkPages / shape.pages
			walk := make([]Request, n)
			for i := range walk {
				walk[i] = Request{VAddr: c.Addr["4k"] + uint64(i)*(shape.pages+shape.gap)*ps, Length: shape.pages * ps, CPUNode: -1}
			}
			whole := []Request{{VAddr: c.Addr["4k"], Length: walkPages * ps, CPUNode: -1}}
			out := make([]Result, n)
			t := Tenant{PID: uint32(c.Pid)}
			var walkCPU, wholeCPU time.Duration
			for b.Loop() {
				cpu0 := cpuTime()
				if err := p.ResolveFor(t, walk, out); err != nil {
					b.Fatal(err)
				}
				walkCPU += cpuTime() - cpu0
				cpu0 = cpuTime()
				if err := p.ResolveFor(t, whole, out[:1]); err != nil {
					b.Fatal(err)
				}
				wholeCPU += cpuTime() - cpu0
			}
			if out[0].Present != walkPages {
				b.Fatalf("%d of %d pages present", out[0].Present, walkPages)
			}
			b.ReportMetric(float64(walkCPU.Microseconds())/float64(b.N), "cpu-µs/walk")
			b.ReportMetric(float64(wholeCPU.Microseconds())/float64(b.N), "cpu-µs/range")
			b.ReportMetric(float64(walkCPU)/float64(wholeCPU), "x-range")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d extents of %d pages: %.1f ms CPU per walk, %.1f ms for the same pages as one range",
				n, shape.pages, float64(walkCPU.Microseconds())/1e3/float64(b.N), float64(wholeCPU.Microseconds())/1e3/float64(b.N))
		})
	}
}
