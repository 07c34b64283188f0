package tracer

import (
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stratatrace/strata/agent/tracer/internal/fillmark"
	"github.com/stratatrace/strata/test/testenv"
	"golang.org/x/sys/unix"
)

// BenchmarkFaultOverhead measures the CPU time per page fault of a child
// that writes every page of a 64 MiB mapping and drops it with
// MADV_DONTNEED, twice per run (32,768 faults), with the mapping as 64
// blocks of 1 MiB, 4096 of 16 KiB (4 per 64 KiB granule), or 65,536 and
// 262,144 blocks of 64 bytes (4 and 16 per page: runs of 64 and 256 blocks
// per granule), the pages in order or scattered. One tracer per
// configuration is loaded up front with its fault hook detached; each
// measurement attaches one, runs, detaches it and runs once more with no
// hook at all ("base"), in alternating order, so a pair is ~0.2 s apart.
// The ratio printed is the median of the paired ratios; the programs' own
// time per run from the kernel's BPF statistics follows in a separate pass.
// Run with -benchtime 1x; STRATA_TRACER_BENCH=count,sample64 runs only the
// configurations named.
func BenchmarkFaultOverhead(b *testing.B) {
	testenv.RequireRoot(b)
	const (
		pages  = 16384
		iters  = 2
		faults = pages * iters
		pairs  = 25
	)
	type config struct {
		name     string
		untraced bool   // the child is not tracked (its pid bit is clear)
		every    uint32 // sample 1 in every; 0 = counters only
		dense    bool   // the mapping as 4096 blocks of 16 KiB, not 64 of 1 MiB
		tiny     int    // the mapping's pages each holding this many 64-byte blocks
		stride   int    // touch the pages in a scattered order (k*stride mod pages)
		extra    int    // more blocks registered elsewhere in the child
		tr       *Tracer
	}
	configs := []*config{
		{name: "untraced", untraced: true},
		{name: "count"},
		{name: "count+64k", extra: 65536 - 64},
		{name: "count-dense", dense: true},
		{name: "count-tiny4", tiny: 4},
		{name: "count-tiny16", tiny: 16},
		{name: "tiny16-scatter", tiny: 16, stride: 4099},
		{name: "sample64", every: 64},
		{name: "sample1", every: 1},
	}
	if only := os.Getenv("STRATA_TRACER_BENCH"); only != "" {
		configs = slices.DeleteFunc(configs, func(c *config) bool {
			return !slices.Contains(strings.Split(only, ","), c.name)
		})
	}
	c := startChild(b, pages)
	for _, cf := range configs {
		tr := loadTracer(b, Config{SampleEvery: cf.every, DisableEvents: cf.every == 0, MaxBlocks: max(65536, uint32(pages*cf.tiny))})
		cf.tr = tr
		if err := tr.Track(c.pid); err != nil {
			b.Fatal(err)
		}
		n, per := 64, 256
		if cf.dense {
			n, per = 4096, 4
		}
		for i := 0; i < n && cf.tiny == 0; i++ {
			if err := tr.RegisterBlock(c.pid, uint64(i), c.page(i*per), c.page((i+1)*per)); err != nil {
				b.Fatal(err)
			}
		}
		// 64-byte blocks spread over each page; the child writes byte 0 of
		// the page, in the first.
		for i := 0; i < pages*cf.tiny; i++ {
			s := c.page(i/cf.tiny) + uint64(i%cf.tiny*os.Getpagesize()/cf.tiny)
			if err := tr.RegisterBlock(c.pid, uint64(i), s, s+64); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < cf.extra; i++ {
			s := uint64(0x200000000000) + uint64(i)<<20
			if err := tr.RegisterBlock(c.pid, uint64(1000+i), s, s+1<<20); err != nil {
				b.Fatal(err)
			}
		}
		if cf.untraced {
			atomic.AndUint64(tr.pidWord(c.pid), ^uint64(1<<(c.pid&63)))
		}
		if err := tr.faultLink.set(false); err != nil {
			b.Fatal(err)
		}
		go func() { // consume events as the annotator would
			for range tr.Events() {
			}
		}()
	}
	c.do("loop 4 0 %d w", pages) // warm up: first touch in this VM is erratic
	// measure runs the child's loop in cf's order, with cf's fault hook
	// attached when on.
	measure := func(cf *config, on bool) (perFault float64, wall time.Duration) {
		if on {
			if err := cf.tr.faultLink.set(true); err != nil {
				b.Fatal(err)
			}
			defer cf.tr.faultLink.set(false)
		}
		start := time.Now()
		cpu := c.do("loop %d 0 %d w %d", iters, pages, max(cf.stride, 1))
		return float64(cpu) / faults, time.Since(start)
	}
	ratios := map[string][]float64{}
	var baseNs []float64
	var baseWall time.Duration
	for p := 0; p < pairs; p++ {
		for i := range configs {
			cf := configs[(i+p)%len(configs)]
			var x, y float64
			var w time.Duration
			if (p+i)%2 == 0 {
				y, w = measure(cf, false)
				x, _ = measure(cf, true)
			} else {
				x, _ = measure(cf, true)
				y, w = measure(cf, false)
			}
			baseNs = append(baseNs, y)
			baseWall += w
			ratios[cf.name] = append(ratios[cf.name], x/y)
		}
	}
	time.Sleep(30 * time.Millisecond)
	for _, cf := range configs {
		st, _ := cf.tr.Stats()
		want := uint64(pairs * faults)
		if cf.untraced {
			want = 0
		}
		if st.MatchedFaults != want || st.KernelDrops != 0 {
			b.Errorf("%s: matched %d faults (want %d), kernel drops %d", cf.name, st.MatchedFaults, want, st.KernelDrops)
		}
	}
	// The programs' own time per invocation, from the kernel's BPF run-time
	// statistics, switched on only for this pass (they add two clock reads
	// to every run of every BPF program on the node).
	bpfNs := map[string][]float64{}
	if st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		for _, cf := range configs {
			for r := 0; r < 3; r++ {
				s0, _ := cf.tr.fault.Stats()
				measure(cf, true)
				if s1, err := cf.tr.fault.Stats(); err == nil && s0 != nil && s1.RunCount > s0.RunCount {
					bpfNs[cf.name] = append(bpfNs[cf.name], float64(s1.Runtime-s0.Runtime)/float64(s1.RunCount-s0.RunCount))
				}
			}
		}
		st.Close()
	}
	base := median(baseNs)
	b.Logf("base %.0f ns/fault (median of %d runs), %.0f faults/s", base, len(baseNs),
		float64(len(baseNs)*faults)/baseWall.Seconds())
	for _, cf := range configs {
		m, bn := median(ratios[cf.name]), median(bpfNs[cf.name])
		q1, q3 := quartiles(ratios[cf.name])
		b.Logf("%-11s ratio %.3f (quartiles %.3f-%.3f of %d pairs)  bpf %3.0f ns/run (ratio %.3f)",
			cf.name, m, q1, q3, len(ratios[cf.name]), bn, (base+bn)/base)
		b.ReportMetric(m, cf.name+"-ratio")
	}
}

func quartiles(v []float64) (q1, q3 float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/4], s[3*len(s)/4]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkRingbuf500k drives the fault program through BPF_PROG_TEST_RUN
// (raw_tp hook, every call a matched fault, SampleEvery 1) at a paced
// 500,000 events/s for 2 s with the default ring size and drain deadline,
// while a consumer reads Events(): kernel-side drops must be zero.
func BenchmarkRingbuf500k(b *testing.B) {
	const (
		rate   = 500_000
		period = 2 * time.Millisecond
		total  = 1_000_000
	)
	tr := selfTracer(b, Config{Hook: HookRaw, SampleEvery: 1, NoMajorFaults: true})
	var got atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range tr.Events() {
			if got.Add(1) >= total {
				return
			}
		}
	}()
	// Two paced producers (this machine has two CPUs); each test run is
	// one syscall, so the pace is only reached when the CPUs are free.
	const producers = 2
	perTick := int(rate * period / time.Second / producers)
	start := time.Now()
	var sentTotal atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := &ebpf.RunOptions{Context: []uint64{selfAddr + 64, 0, 0x6}}
			for tick := 0; sentTotal.Load() < total; tick++ {
				for i := 0; i < perTick; i++ {
					if _, err := tr.fault.Run(opts); err != nil {
						return
					}
				}
				sentTotal.Add(int64(perTick))
				if d := time.Until(start.Add(time.Duration(tick+1) * period)); d > 0 {
					time.Sleep(d)
				}
			}
		}()
	}
	wg.Wait()
	sent := int(sentTotal.Load())
	if sent == 0 {
		b.Skip("skipping: BPF_PROG_TEST_RUN unavailable for raw_tp")
	}
	elapsed := time.Since(start)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	st, _ := tr.Stats()
	b.Logf("sent %d events in %v (%.0f/s), ring %d MiB, drain %v: delivered %d, kernel drops %d, user drops %d",
		sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), tr.cfg.RingBytes>>20,
		tr.cfg.DrainInterval, st.Delivered, st.KernelDrops, st.UserDrops)
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(st.KernelDrops), "kernel-drops")
	if st.KernelDrops != 0 {
		b.Errorf("kernel drops %d at %.0f events/s", st.KernelDrops, float64(sent)/elapsed.Seconds())
	}
}

// BenchmarkReaderDrain fills the default 8 MiB ring with 140,000 events
// (BPF_PROG_TEST_RUN, no reader running), then starts the reader and
// consumer and times the drain: the user side's capacity in events/s. With
// the ring's ~150,000-record buffer it bounds the fault rate the defaults
// absorb without kernel drops when every fault is sampled.
func BenchmarkReaderDrain(b *testing.B) {
	const n = 140_000
	tr := selfTracer(b, Config{Hook: HookRaw, SampleEvery: 1, NoMajorFaults: true, manualDrain: true})
	opts := &ebpf.RunOptions{Context: []uint64{selfAddr + 64, 0, 0x6}}
	for i := 0; i < n; i++ {
		if _, err := tr.fault.Run(opts); err != nil {
			b.Skipf("skipping: BPF_PROG_TEST_RUN: %v", err)
		}
	}
	go func() {
		for range tr.Events() {
		}
	}()
	start := time.Now()
	tr.startReader()
	for tr.delivered.Load()+tr.userDrops.Load() < n && time.Since(start) < 10*time.Second {
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	st, _ := tr.Stats()
	read := st.Delivered + st.UserDrops
	b.Logf("read %d events from the ring in %v: %.0f events/s (%d to the channel, %d dropped there); kernel drops %d",
		read, el.Round(time.Millisecond), float64(read)/el.Seconds(), st.Delivered, st.UserDrops, st.KernelDrops)
	b.ReportMetric(float64(read)/el.Seconds(), "events/s")
}

// selfAddr is a block registered for the benchmark process itself by
// selfTracer; BPF_PROG_TEST_RUN "faults" at it count as this process's.
const selfAddr = 0x7e0000000000

func selfTracer(b *testing.B, cfg Config) *Tracer {
	tr := loadTracer(b, cfg)
	self := uint32(os.Getpid())
	if err := tr.Track(self); err != nil {
		b.Fatal(err)
	}
	if err := tr.RegisterBlock(self, 1, selfAddr, selfAddr+1<<20); err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkFillMarks: what a put pays for its two fill marks (the hook's
// natives fillBegin and fillEnd, here the test binary's copies), in one
// child's thread CPU per begin+end pair: without the fill probes, then with
// them attached (each call traps into the kernel for its uprobe). Then the
// fault path: a traced thread's faults with no fill open and with one.
// Run with -benchtime=1x; b.N is not used.
func BenchmarkFillMarks(b *testing.B) {
	if !fillmark.Available {
		b.Skip("skipping: the fill natives need cgo")
	}
	const pairs = 20000
	tr := loadTracer(b, Config{NoMajorFaults: true})
	c := startChild(b, 1024)
	c.do("marks 1000 0")
	plain := c.do("marks %d 0", pairs)
	attachSelf(b, tr)
	c.do("marks 1000 0")
	marked := c.do("marks %d 0", pairs)
	stored := c.do("marks %d 1", pairs)
	b.Logf("per put: %.0f ns of calls without probes, %.0f ns with them (%.0f ns stored)",
		float64(plain)/pairs, float64(marked)/pairs, float64(stored)/pairs)
	b.ReportMetric(float64(marked-plain)/pairs, "ns/put")

	if err := tr.Track(c.pid); err != nil {
		b.Fatal(err)
	}
	const rounds, pages = 40, 1024
	var open, closed int64
	for i := 0; i < 3; i++ {
		closed += c.do("loop %d 0 %d w", rounds, pages)
		open += c.do("fb 7; loop %d 0 %d w; fe 0", rounds, pages)
	}
	faults := float64(3 * rounds * pages)
	b.Logf("per traced fault: %.0f ns outside a fill, %.0f ns inside one (thread CPU, fault and MADV_DONTNEED)",
		float64(closed)/faults, float64(open)/faults)
	b.ReportMetric(float64(open-closed)/faults, "ns/fault-in-fill")
}
