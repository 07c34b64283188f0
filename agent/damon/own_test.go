package damon

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

// heatSink keeps the samples it is handed.
type heatSink struct{ samples []*stratav1.HeatSample }

func (s *heatSink) AddHeat(h *stratav1.HeatSample) { s.samples = append(s.samples, h) }

// block is a live block of pid 42 whose pages are the PFN spans given as
// first, count pairs.
func block(id uint64, spans ...uint64) Block {
	b := Block{PID: 42, Block: &stratav1.SparkBlock{AppId: "app-1", ExecutorId: "1", RddId: 3, Partition: int32(id),
		BlockId: "rdd_3_" + u(id), HookBlockId: id}, Resolved: time.Unix(1, 0)}
	for i := 0; i+1 < len(spans); i += 2 {
		b.Runs = append(b.Runs, &stratav1.PageRun{Vaddr: 0x7f0000000000 + uint64(i)<<20, Count: uint32(spans[i+1]),
			State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: spans[i]})
	}
	return b
}

// TestOwnKdamond: on an empty admin directory the agent makes its own
// kdamond (the exact writes are testdata/own.golden), turns it on with the
// blocks' physical ranges, reads every region through its stat scheme,
// commits new ranges when blocks come and go, and removes it on Close.
func TestOwnKdamond(t *testing.T) {
	f := newFakeKernel(t)
	// The region from PFN 0x1000 is accessed at every check (20 in an
	// aggregation interval of 4 s sampled every 200 ms); the other is cold
	// for 7 aggregation intervals.
	f.heat = func(_ uint64, r Range) (uint64, uint64) {
		if r.Start == 0x1000*4096 {
			return 20, 3
		}
		return 0, 7
	}
	cfg := DefaultConfig()
	cfg.Ops = "paddr"                     // the fake kernel has fvaddr too
	cfg.MinRegions, cfg.MaxRegions = 3, 4 // two target regions at most
	h, err := Open(f.sysfs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const status = "own: kdamond 0 scheme 0 stat, every region (sampling 200ms, aggregation 4s, 3..4 regions)"
	if h.Mode() != Own || h.Status() != status {
		t.Fatalf("%v %q, want own %q", h.Mode(), h.Status(), status)
	}
	sink := &heatSink{}
	live := []Block{}
	blocks := func() []Block { return live }
	ctx := context.Background()

	h.round(ctx, blocks, sink) // no blocks: nothing to monitor, still off
	if st := f.read("kdamonds/0/state"); st != "off" || len(sink.samples) != 0 {
		t.Fatalf("without blocks: state %s, %d samples", st, len(sink.samples))
	}
	// Three extents; the two closest join: [0x1000, 0x1004) and [0x1006,
	// 0x1008) across a gap of 2 pages, [0x9000, 0x9010) stays apart.
	live = []Block{block(1, 0x1000, 4), block(2, 0x1006, 2, 0x9000, 16)}
	h.round(ctx, blocks, sink) // commits, turns on; reads next round
	if st := f.read("kdamonds/0/state"); st != "on" || len(sink.samples) != 0 {
		t.Fatalf("after the first commit: state %s, %d samples", st, len(sink.samples))
	}
	h.round(ctx, blocks, sink)
	if len(sink.samples) != 2 {
		t.Fatalf("%d samples, want one per block", len(sink.samples))
	}
	b1, b2 := sink.samples[0], sink.samples[1]
	// Block 1 lies in the hot region; block 2 has 2 pages there and 16 in
	// the cold one.
	if b1.GetHookBlockId() != 1 || b1.GetResolvedBytes() != 4*4096 || b1.GetMonitoredBytes() != 4*4096 || b1.GetCoveredBytes() != 4*4096 ||
		b1.AccessRate == nil || b1.GetAccessRate() != 1 || b1.GetColdBytes() != 0 || b1.ColdAgeSeconds != nil || b1.ColdMinAgeSeconds != nil ||
		b1.GetSourceKind() != stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN || b1.GetPartial() ||
		b1.GetSource() != "own: kdamond 0 scheme 0 stat, every region" || b1.GetIntervalNs() != int64(4*time.Second) {
		t.Fatalf("block 1: %v", b1)
	}
	if b2.GetResolvedBytes() != 18*4096 || b2.GetMonitoredBytes() != 18*4096 || b2.GetCoveredBytes() != 18*4096 ||
		b2.GetAccessRate() != float64(2*4096*20)/(18*4096)/20 || b2.GetColdBytes() != 16*4096 ||
		b2.GetColdAgeSeconds() != 7*4 || b2.GetColdMinAgeSeconds() != 7*4 || b2.GetRddId() != 3 || b2.GetPid() != 42 {
		t.Fatalf("block 2: %v", b2)
	}
	// Block 2 goes: the next round commits block 1's range alone.
	live = live[:1]
	h.round(ctx, blocks, sink)
	if n := f.read("kdamonds/0/contexts/0/targets/0/regions/nr_regions"); n != "1" {
		t.Fatalf("%s target regions after block 2 went, want 1", n)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Commits != 2 || st.Reads != 2 || st.Regions != 4 || st.Samples != 3 || st.Errors != 0 {
		t.Fatalf("stats %+v", st)
	}
	golden(t, "testdata/own.golden", strings.Join(f.writes, "\n")+"\n")
}

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("writes differ from %s (rerun with -update to accept):\n%s", path, got)
	}
}
