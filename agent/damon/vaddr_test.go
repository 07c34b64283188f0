package damon

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// base is where the test processes' blocks lie in their address spaces.
const base = 0x7f0000000000

// vblock is live block id of process pid over [vaddr, vaddr+length), with
// pages of its walk's objects at the given first-page, count pairs.
func vblock(pid uint32, id, vaddr, length uint64, runs ...uint64) Block {
	b := Block{PID: pid, Block: &stratav1.SparkBlock{AppId: "app-1", ExecutorId: u(uint64(pid)), RddId: 3, Partition: int32(id),
		BlockId: "rdd_3_" + u(id), HookBlockId: id}, Vaddr: vaddr, Length: length, Resolved: time.Unix(1, 0)}
	for i := 0; i+1 < len(runs); i += 2 {
		b.Runs = append(b.Runs, &stratav1.PageRun{Vaddr: runs[i], Count: uint32(runs[i+1]),
			State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: 0x5000 + uint64(i)})
	}
	return b
}

// TestOwnVaddrKdamond: on a kernel with fvaddr the agent's kdamond gets a
// target per process with blocks (pid_target its pid, regions its blocks'
// virtual pages, capped) and a stat scheme per target that keeps that
// target's regions; samples join each process's regions with its own
// blocks only, though two processes use the same addresses. When a
// process's blocks go its target and scheme go; with no blocks left the
// kdamond is turned off, and on again for the next process. The exact
// writes are testdata/own-vaddr.golden.
func TestOwnVaddrKdamond(t *testing.T) {
	f := newFakeKernel(t)
	// Process 100's region from base+0x1000 is accessed at every check (20
	// in an aggregation interval of 4 s sampled every 200 ms), its others
	// are cold for 5 intervals; process 200's are cold for 9.
	f.heat = func(pid uint64, r Range) (uint64, uint64) {
		switch {
		case pid == 100 && r.Start == base+0x1000:
			return 20, 2
		case pid == 100:
			return 0, 5
		}
		return 0, 9
	}
	cfg := DefaultConfig()
	cfg.MinRegions, cfg.MaxRegions = 3, 8 // four target regions at most, over all targets
	h, err := Open(f.sysfs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const status = "own-vaddr: kdamond 0 of the agent's, fvaddr, a target per hooked process and a stat scheme per target " +
		"over every region (sampling 200ms, aggregation 4s, 3..8 regions)"
	if h.Mode() != OwnVaddr || h.Status() != status {
		t.Fatalf("%v %q, want own-vaddr %q", h.Mode(), h.Status(), status)
	}
	sink := &heatSink{}
	var live []Block
	blocks := func() []Block { return live }
	ctx := context.Background()

	h.round(ctx, blocks, sink) // no blocks: no target, still off
	if st := f.read("kdamonds/0/state"); st != "off" || len(sink.samples) != 0 {
		t.Fatalf("without blocks: state %s, %d samples", st, len(sink.samples))
	}
	// Process 100: A's range [base+0x1064, base+0x4064) is pages
	// [0x1000, 0x5000); B's [0x10000, 0x12000) and its walk's object
	// page at 0x100000. Two ranges per target at most: the smaller gap
	// closes, [0x1000, 0x12000) and [0x100000, 0x101000). Process 200:
	// C's pages [0x1000, 0x3000), the same addresses as A's.
	a := vblock(100, 1, base+0x1064, 0x3000)
	b := vblock(100, 2, base+0x10000, 0x2000, base+0x100000, 1)
	c := vblock(200, 1, base+0x1000, 0x2000)
	live = []Block{a, b, c}
	h.round(ctx, blocks, sink) // commits two targets, turns on; reads next round
	if st := f.read("kdamonds/0/state"); st != "on" || len(sink.samples) != 0 {
		t.Fatalf("after the first commit: state %s, %d samples", st, len(sink.samples))
	}
	h.round(ctx, blocks, sink)
	type want struct {
		pid                       uint32
		id                        uint64
		resolved, cold            uint64
		rate, coldAge, coldMinAge float64
		hasColdAge                bool
	}
	check := func(round string, got []*stratav1.HeatSample, ws []want) {
		t.Helper()
		if len(got) != len(ws) {
			t.Fatalf("%s: %d samples, want %d", round, len(got), len(ws))
		}
		for i, w := range ws {
			s := got[i]
			src := "vaddr: kdamond 0 of the agent's, target pid " + u(uint64(w.pid))
			if s.GetPid() != w.pid || s.GetHookBlockId() != w.id || s.GetResolvedBytes() != w.resolved ||
				s.MonitoredBytes == nil || s.GetMonitoredBytes() != w.resolved || s.GetCoveredBytes() != w.resolved ||
				s.AccessRate == nil || s.GetAccessRate() != w.rate || s.GetColdBytes() != w.cold ||
				(s.ColdAgeSeconds != nil) != w.hasColdAge || s.GetColdAgeSeconds() != w.coldAge || s.GetColdMinAgeSeconds() != w.coldMinAge ||
				s.GetSourceKind() != stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN || s.GetPartial() || s.GetSource() != src ||
				s.GetIntervalNs() != int64(4*time.Second) || s.GetSampleIntervalNs() != int64(200*time.Millisecond) {
				t.Fatalf("%s: sample %d = %v, want %+v", round, i, s, w)
			}
		}
	}
	// A lies in process 100's hot region; B has 2 pages there and its
	// object's page in the cold one; C, at A's addresses in process 200,
	// gets process 200's cold region, not A's heat.
	check("first read", sink.samples, []want{
		{100, 1, 4 * page, 0, 1, 0, 0, false},
		{100, 2, 3 * page, page, float64(2*page*20) / (3 * page) / 20, 5 * 4, 5 * 4, true},
		{200, 1, 2 * page, 2 * page, 0, 9 * 4, 9 * 4, true},
	})
	// Process 200 exits (its blocks go): this round reads both targets,
	// then commits process 100 alone, its three ranges uncapped now.
	live = []Block{a, b}
	sink.samples = nil
	h.round(ctx, blocks, sink)
	check("process 200 gone", sink.samples, []want{
		{100, 1, 4 * page, 0, 1, 0, 0, false},
		{100, 2, 3 * page, page, float64(2*page*20) / (3 * page) / 20, 5 * 4, 5 * 4, true},
	})
	if n, pid := f.read("kdamonds/0/contexts/0/targets/nr_targets"), f.read("kdamonds/0/contexts/0/targets/0/pid_target"); n != "1" || pid != "100" {
		t.Fatalf("targets %s, first pid %s; want 1, 100", n, pid)
	}
	sink.samples = nil
	h.round(ctx, blocks, sink) // B's range [0x10000, 0x12000) is a region of its own now, cold
	check("one target", sink.samples, []want{
		{100, 1, 4 * page, 0, 1, 0, 0, false},
		{100, 2, 3 * page, 3 * page, 0, 5 * 4, 5 * 4, true},
	})
	// The last blocks go: the kdamond is turned off; a new process's
	// block turns it on again.
	live = nil
	sink.samples = nil
	h.round(ctx, blocks, sink)
	if st := f.read("kdamonds/0/state"); st != "off" || len(sink.samples) != 0 {
		t.Fatalf("without blocks: state %s, %d samples", st, len(sink.samples))
	}
	live = []Block{vblock(300, 7, base, page)}
	h.round(ctx, blocks, sink)
	if st, pid := f.read("kdamonds/0/state"), f.read("kdamonds/0/contexts/0/targets/0/pid_target"); st != "on" || pid != "300" {
		t.Fatalf("a new process: state %s, pid %s", st, pid)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Commits != 4 || st.Reads != 6 || st.Regions != 12 || st.Samples != 7 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
	golden(t, "testdata/own-vaddr.golden", strings.Join(f.writes, "\n")+"\n")
}

// TestOwnVaddrKernelStopped: DAMON stops a virtual-address kdamond when
// every target's process has exited; the next commit sees its state off
// and turns it on rather than committing to a stopped kdamond.
func TestOwnVaddrKernelStopped(t *testing.T) {
	f := newFakeKernel(t)
	h, err := Open(f.sysfs(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.own
	if err := o.commitTargets([]target{{pid: 1, ranges: []Range{{base, base + page}}}}); err != nil {
		t.Fatal(err)
	}
	f.file("kdamonds/0/state", "off") // process 1 exited
	f.writes = nil
	if err := o.commitTargets([]target{{pid: 2, ranges: []Range{{base, base + page}}}}); err != nil {
		t.Fatal(err)
	}
	if last := f.writes[len(f.writes)-1]; last != "kdamonds/0/state on" || !o.on {
		t.Fatalf("last write %q, on %v", last, o.on)
	}
}

// TestJoinVaddr: each process's tried regions joined with that process's
// blocks by virtual range: exact bytes and rates, by hand (aggregation
// 1 s, sampling 100 ms: nr_accesses 10 is every check).
func TestJoinVaddr(t *testing.T) {
	vr := func(first, n uint64) Range { return Range{base + first*page, base + (first+n)*page} }
	for _, tc := range []struct {
		name    string
		pid     uint32 // the target the regions are of
		monitor []Range
		regions []Region
		blocks  []Block
		// per block, in order: nil for no sample, else resolved,
		// monitored, covered, cold bytes, the rate and the cold ages.
		want []*stratav1.HeatSample
	}{
		{
			name:    "one block over a hot and a cold region",
			pid:     7,
			monitor: []Range{vr(0, 4)},
			regions: []Region{{Range: vr(0, 1), NrAccesses: 10, Age: 1}, {Range: vr(1, 3), NrAccesses: 0, Age: 6}},
			blocks:  []Block{vblock(7, 1, base, 4*page)},
			want: []*stratav1.HeatSample{{ResolvedBytes: 4 * page, CoveredBytes: 4 * page, ColdBytes: 3 * page,
				AccessRate: f64(float64(page*10) / (4 * page) / 10), ColdAgeSeconds: f64(6), ColdMinAgeSeconds: f64(6)}},
		},
		{
			name:    "another process's block at the same addresses gets nothing",
			pid:     7,
			monitor: []Range{vr(0, 4)},
			regions: []Region{{Range: vr(0, 4), NrAccesses: 10}},
			blocks:  []Block{vblock(8, 1, base, 4*page), vblock(7, 2, base+page, page)},
			want:    []*stratav1.HeatSample{nil, {ResolvedBytes: page, CoveredBytes: page, AccessRate: f64(1)}},
		},
		{
			name:    "a range off page boundaries counts the pages holding it",
			pid:     7,
			monitor: []Range{vr(0, 3)},
			regions: []Region{{Range: vr(0, 2), NrAccesses: 5, Age: 0}, {Range: vr(2, 1), NrAccesses: 0, Age: 2}},
			blocks:  []Block{vblock(7, 1, base+100, 2*page)}, // [base+100, base+2*page+100): pages 0, 1, 2
			want: []*stratav1.HeatSample{{ResolvedBytes: 3 * page, CoveredBytes: 3 * page, ColdBytes: page,
				AccessRate: f64(float64(2*page*5) / (3 * page) / 10), ColdAgeSeconds: f64(2), ColdMinAgeSeconds: f64(2)}},
		},
		{
			name:    "a walked block: its array's page and its objects' pages",
			pid:     7,
			monitor: []Range{vr(0, 1), vr(100, 2)},
			regions: []Region{{Range: vr(0, 1), NrAccesses: 0, Age: 4}, {Range: vr(100, 1), NrAccesses: 10, Age: 1},
				{Range: vr(101, 1), NrAccesses: 0, Age: 8}},
			blocks: []Block{vblock(7, 1, base+16, 64, base+100*page, 2)},
			want: []*stratav1.HeatSample{{ResolvedBytes: 3 * page, CoveredBytes: 3 * page, ColdBytes: 2 * page,
				AccessRate: f64(float64(page*10) / (3 * page) / 10), ColdAgeSeconds: f64(6), ColdMinAgeSeconds: f64(4)}},
		},
		{
			name:    "regions that missed part of the block (a stand-in read)",
			pid:     7,
			monitor: []Range{vr(0, 8)},
			regions: []Region{{Range: vr(2, 2), NrAccesses: 3, Age: 0}},
			blocks:  []Block{vblock(7, 1, base, 8*page), vblock(7, 2, base+8*page, 0)},
			want: []*stratav1.HeatSample{{ResolvedBytes: 8 * page, CoveredBytes: 2 * page,
				AccessRate: f64(float64(2*page*3) / (2 * page) / 10)}, nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PageSize = page
			o := &ownKdamond{ctx: Context{Kdamond: ownIndex, Ops: opsFvaddr, AddrUnit: 1, Sample: 100 * time.Millisecond, Aggr: time.Second},
				targets: []target{{pid: tc.pid, ranges: tc.monitor}}}
			h := &Heat{cfg: cfg, own: o}
			snap := h.snapshot(func() []Block { return tc.blocks })
			sink := &heatSink{}
			at := time.Unix(5, 0)
			h.join(o.views()[0], snap, tc.regions, at, sink)
			var got []*stratav1.HeatSample
			for i, w := range tc.want {
				if w == nil {
					continue
				}
				b := tc.blocks[i].Block
				w.AppId, w.ExecutorId, w.Pid, w.RddId, w.Partition, w.BlockId, w.HookBlockId = b.AppId, b.ExecutorId, tc.pid, b.RddId, b.Partition, b.BlockId, b.HookBlockId
				w.TimeUnixNano, w.IntervalNs, w.SampleIntervalNs = at.UnixNano(), int64(time.Second), int64(100*time.Millisecond)
				w.MonitoredBytes = u64p(w.ResolvedBytes)
				w.SourceKind, w.Source = stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN, "vaddr: kdamond 0 of the agent's, target pid 7"
				got = append(got, w)
			}
			if len(sink.samples) != len(got) {
				t.Fatalf("%d samples, want %d: %v", len(sink.samples), len(got), sink.samples)
			}
			for i := range got {
				if !reflect.DeepEqual(sink.samples[i], got[i]) {
					t.Fatalf("sample %d:\n got %v\nwant %v", i, sink.samples[i], got[i])
				}
			}
		})
	}
}

func f64(v float64) *float64 { return &v }
func u64p(v uint64) *uint64  { return &v }

// TestVirtualExtents: a block's virtual pages, merged with its runs', and
// ranges at the top of the address space that would wrap left out.
func TestVirtualExtents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Block
		want  []Range
		bytes uint64
	}{
		{"aligned", vblock(1, 1, base, 2*page), []Range{{base, base + 2*page}}, 2 * page},
		{"unaligned both ends", vblock(1, 1, base+1, page), []Range{{base, base + 2*page}}, 2 * page},
		{"runs inside the range count once", vblock(1, 1, base, 2*page, base+page, 1), []Range{{base, base + 2*page}}, 2 * page},
		{"runs outside", vblock(1, 1, base, page, base+4*page, 2, base+page, 1),
			[]Range{{base, base + 2*page}, {base + 4*page, base + 6*page}}, 4 * page},
		{"empty", vblock(1, 1, base, 0), nil, 0},
		{"wraps", vblock(1, 1, math.MaxUint64-10, 20), nil, 0},
		{"the last page, whose end wraps", vblock(1, 1, math.MaxUint64-page+1, 10), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := virtualExtents(tc.b, page)
			if !reflect.DeepEqual(got, tc.want) || n != tc.bytes {
				t.Fatalf("%v (%d bytes), want %v (%d)", got, n, tc.want, tc.bytes)
			}
		})
	}
}

// TestVaddrTargets: one target per process with pages, in pid order, each
// capped at its share of the limit.
func TestVaddrTargets(t *testing.T) {
	blocks := []Block{vblock(9, 1, 0, 0), vblock(5, 1, 0, 0), vblock(5, 2, 0, 0), vblock(9, 2, 0, 0)}
	exts := [][]Range{{{0, 10}, {20, 30}}, {{100, 110}}, {{120, 130}, {200, 210}}, {{40, 50}}}
	got := vaddrTargets(blocks, exts, 4)
	want := []target{{5, []Range{{100, 130}, {200, 210}}}, {9, []Range{{0, 30}, {40, 50}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if got := vaddrTargets(blocks[:1], [][]Range{nil}, 4); len(got) != 0 {
		t.Fatalf("a block without pages made targets %v", got)
	}
}

// TestOwnVaddrMetricMode: strata_damon_mode says own for the fvaddr
// kdamond, keeping the label set dashboards read.
func TestOwnVaddrMetricMode(t *testing.T) {
	f := newFakeKernel(t)
	h, err := Open(f.sysfs(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Mode() != OwnVaddr {
		t.Fatalf("mode %v", h.Mode())
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(h))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, fam := range families {
		if fam.GetName() != "strata_damon_mode" {
			continue
		}
		for _, m := range fam.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	if want := map[string]float64{"own": 1, "shared": 0, "unavailable": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("strata_damon_mode %v, want %v", got, want)
	}
}

// TestOwnVaddrSchemesAfterAFailedWrite: a commit that fails while writing
// the target schemes leaves their number unknown, so the next commit with
// as many targets writes them again rather than trusting half-written
// files.
func TestOwnVaddrSchemesAfterAFailedWrite(t *testing.T) {
	f := newFakeKernel(t)
	s := f.sysfs()
	broken := true
	s.written = func(rel, v string) {
		f.written(rel, v)
		if broken && strings.HasSuffix(rel, "/schemes/nr_schemes") && v == "2" {
			os.Remove(filepath.Join(f.root, adminDir, "kdamonds/0/contexts/0/schemes/1/action"))
		}
	}
	h, err := Open(s, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	two := []target{{pid: 1, ranges: []Range{{base, base + page}}}, {pid: 2, ranges: []Range{{base, base + page}}}}
	if err := h.own.commitTargets(two); err == nil || h.own.schemes != -1 || h.own.on {
		t.Fatalf("commit with a scheme file missing: %v, schemes %d, on %v", err, h.own.schemes, h.own.on)
	}
	broken = false
	f.writes = nil
	if err := h.own.commitTargets(two); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.writes, "kdamonds/0/contexts/0/schemes/nr_schemes 2") || f.read("kdamonds/0/contexts/0/schemes/1/filters/0/damon_target_idx") != "1" ||
		h.own.schemes != 2 || !h.own.on {
		t.Fatalf("second commit: schemes %d, on %v, writes %v", h.own.schemes, h.own.on, f.writes)
	}
}
