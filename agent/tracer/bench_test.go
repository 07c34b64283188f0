package tracer

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stratatrace/strata/test/testenv"
	"golang.org/x/sys/unix"
)

// BenchmarkFaultOverhead measures the CPU time per page fault of a child
// that writes every page of a 64 MiB mapping and drops it with
// MADV_DONTNEED, 8 times per run (131,072 faults), under interleaved
// configurations, each paired with a run of "base" (no tracer loaded) next
// to it; it prints the median of the paired ratios. Run with -benchtime 1x;
// STRATA_TRACER_BENCH=base,count runs only the configurations named.
func BenchmarkFaultOverhead(b *testing.B) {
	testenv.RequireRoot(b)
	const (
		pages  = 16384
		iters  = 8
		faults = pages * iters
		rounds = 7
	)
	type config struct {
		name   string
		load   bool   // tracer loaded
		track  bool   // child tracked, its mapping registered as 64 blocks of 1 MiB
		dense  bool   // ... as 4096 blocks of 16 KiB instead (granule entries)
		every  uint32 // sample 1 in every; 0 = counters only
		blocks int    // extra blocks registered elsewhere in the child
	}
	configs := []config{
		{name: "base"},
		{name: "untraced", load: true},
		{name: "count", load: true, track: true},
		{name: "count+64k", load: true, track: true, blocks: 65536 - 64},
		{name: "count-dense", load: true, track: true, dense: true},
		{name: "sample64", load: true, track: true, every: 64},
		{name: "sample1", load: true, track: true, every: 1},
	}
	if only := os.Getenv("STRATA_TRACER_BENCH"); only != "" { // e.g. base,count
		configs = slices.DeleteFunc(configs, func(c config) bool {
			return !slices.Contains(strings.Split(only, ","), c.name)
		})
	}
	bpfNs := map[string][]float64{}
	c := startChild(b, pages)
	c.do("loop 2 0 %d w", pages) // warm up: first touch in this VM is erratic
	ns := map[string][]float64{}
	ratios := map[string][]float64{}
	rate := map[string][]float64{}
	drops := map[string]uint64{}
	// run measures one configuration: set up, fault, tear down. With stats
	// set it only records the program's own run time.
	stats := false
	run := func(cf config) float64 {
		var tr *Tracer
		if cf.load {
			tr = loadTracer(b, Config{SampleEvery: cf.every, DisableEvents: cf.every == 0, MaxBlocks: 65536})
			defer tr.Close()
			if cf.track {
				if err := tr.Track(c.pid); err != nil {
					b.Fatal(err)
				}
				n, per := 64, 256
				if cf.dense {
					n, per = 4096, 4
				}
				for i := 0; i < n; i++ {
					if err := tr.RegisterBlock(c.pid, uint64(i), c.page(i*per), c.page((i+1)*per)); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < cf.blocks; i++ {
					s := uint64(0x200000000000) + uint64(i)<<20
					if err := tr.RegisterBlock(c.pid, uint64(1000+i), s, s+1<<20); err != nil {
						b.Fatal(err)
					}
				}
			}
			go func() { // consume events as the annotator would
				for range tr.Events() {
				}
			}()
		}
		var s0 *ebpf.ProgramStats
		if tr != nil && stats {
			s0, _ = tr.fault.Stats()
		}
		start := time.Now()
		cpu := c.do("loop %d 0 %d w", iters, pages)
		wall := time.Since(start)
		perFault := float64(cpu) / faults
		if stats {
			if s1, err := tr.fault.Stats(); err == nil && s0 != nil && s1.RunCount > s0.RunCount {
				bpfNs[cf.name] = append(bpfNs[cf.name], float64(s1.Runtime-s0.Runtime)/float64(s1.RunCount-s0.RunCount))
			}
			return perFault
		}
		ns[cf.name] = append(ns[cf.name], perFault)
		rate[cf.name] = append(rate[cf.name], faults/wall.Seconds())
		if tr == nil {
			return perFault
		}
		time.Sleep(3 * tr.cfg.DrainInterval)
		st, _ := tr.Stats()
		if cf.track && st.MatchedFaults != faults {
			b.Errorf("%s: matched %d faults, want %d", cf.name, st.MatchedFaults, faults)
		}
		drops[cf.name] += st.KernelDrops
		return perFault
	}
	// Each configuration is paired with a base run right next to it (base
	// first in even rounds, last in odd ones), and its ratio is the median
	// of the paired ratios: slow drifts of this shared machine cancel.
	base := config{name: "base"}
	for r := 0; r < rounds; r++ {
		order := slices.Clone(configs)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, cf := range order {
			if cf.name == "base" {
				continue
			}
			var x, y float64
			if r%2 == 0 {
				y = run(base)
				x = run(cf)
			} else {
				x = run(cf)
				y = run(base)
			}
			ratios[cf.name] = append(ratios[cf.name], x/y)
		}
	}
	// Then the programs' own time per invocation from the kernel's BPF
	// run-time statistics, which are switched on only for this pass (they
	// add two clock reads to every run of every BPF program on the node).
	if st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		stats = true
		for r := 0; r < 3; r++ {
			for _, cf := range configs {
				if cf.load {
					run(cf)
				}
			}
		}
		st.Close()
	}
	baseNs := median(ns["base"])
	b.Logf("base %.0f ns/fault (median of %d runs), %.0f faults/s", baseNs, len(ns["base"]), median(rate["base"]))
	for _, cf := range configs {
		if cf.name == "base" {
			continue
		}
		m, bn := median(ratios[cf.name]), median(bpfNs[cf.name])
		b.Logf("%-11s ratio %.3f (paired runs %v)  bpf %3.0f ns/run (ratio %.3f)  %.0f faults/s  kernel drops %d",
			cf.name, m, fmtRatios(ratios[cf.name]), bn, (baseNs+bn)/baseNs, median(rate[cf.name]), drops[cf.name])
		b.ReportMetric(m, cf.name+"-ratio")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func fmtRatios(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return "[" + strings.Join(out, " ") + "]"
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
