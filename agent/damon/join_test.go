package damon

import (
	"reflect"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

const page = 4096

// pr is [first, first+n) pages as a physical byte range.
func pr(first, n uint64) Range { return Range{first * page, (first + n) * page} }

// TestJoinExactBytes: blocks with known PFN runs against synthetic
// regions give, per block, exactly the bytes of their pages in each kind
// of region.
func TestJoinExactBytes(t *testing.T) {
	// Block A: PFNs 0x1000-0x1003. Block B: PFNs 0x2000, 0x2002, 0x2003
	// (pfn_deltas). Block C: present pages without a visible PFN.
	a := block(1, 0x1000, 4)
	b := block(2)
	b.Runs = []*stratav1.PageRun{{Vaddr: 0x7f0000000000, Count: 3, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: 0x2000, PfnDeltas: []int64{2, 1}}}
	c := block(3)
	c.Runs = []*stratav1.PageRun{{Vaddr: 0x7f0000000000, Count: 8, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_PFN_HIDDEN)}}
	regions := []Region{
		{Range: pr(0x1000, 2), NrAccesses: 5, Age: 1},   // A's first 2 pages
		{Range: pr(0x1002, 14), NrAccesses: 0, Age: 10}, // A's last 2 pages
		{Range: pr(0x2001, 2), NrAccesses: 0, Age: 3},   // B's 0x2002
		{Range: pr(0x2003, 1), NrAccesses: 10, Age: 0},  // B's 0x2003
	}
	monitored := []Range{pr(0x1000, 3), pr(0x2000, 16)}
	v := newView(false, Context{Sample: 100 * time.Millisecond, Aggr: time.Second, Ranges: monitored},
		Scheme{Action: "stat", Pattern: Pattern{SzMax: ^uint64(0), NrMax: 10, AgeMax: 1 << 32}})
	at := time.Unix(1000, 0)
	var got []*stratav1.HeatSample
	for _, blk := range []Block{a, b, c} {
		ext, resolved := extents(blk.Runs, page)
		if resolved == 0 {
			if blk.Block.GetHookBlockId() != 3 {
				t.Fatalf("block %d resolved nothing", blk.Block.GetHookBlockId())
			}
			continue
		}
		got = append(got, v.sample(blk, joinBlock(ext, resolved, monitored, regions), at))
	}
	if len(got) != 2 {
		t.Fatalf("%d samples, want 2 (C has no PFNs)", len(got))
	}
	sa, sb := got[0], got[1]
	// A: 4 pages resolved, 3 monitored, all 4 covered: 2 at 5 of 10
	// checks, 2 cold for 10 intervals of 1 s.
	if sa.GetResolvedBytes() != 4*page || sa.GetMonitoredBytes() != 3*page || sa.GetCoveredBytes() != 4*page ||
		sa.GetAccessRate() != float64(2*page*5)/(4*page)/10 || sa.GetColdBytes() != 2*page ||
		sa.GetColdAgeSeconds() != 10 || sa.GetColdMinAgeSeconds() != 10 {
		t.Fatalf("A: %v", sa)
	}
	// B: 3 pages resolved and monitored; 0x2000 in no region, 0x2002 cold
	// for 3 s, 0x2003 at every check.
	if sb.GetResolvedBytes() != 3*page || sb.GetMonitoredBytes() != 3*page || sb.GetCoveredBytes() != 2*page ||
		sb.GetAccessRate() != float64(page*10)/(2*page)/10 || sb.GetColdBytes() != page ||
		sb.GetColdAgeSeconds() != 3 || sb.GetColdMinAgeSeconds() != 3 {
		t.Fatalf("B: %v", sb)
	}
	if sa.GetTimeUnixNano() != at.UnixNano() || sa.GetSampleIntervalNs() != int64(100*time.Millisecond) || sa.GetIntervalNs() != int64(time.Second) ||
		sa.GetSourceKind() != stratav1.HeatSourceKind_HEAT_SOURCE_KIND_SHARED || sa.GetPartial() || sa.GetBlockId() != "rdd_3_1" {
		t.Fatalf("A's header: %v", sa)
	}
}

// TestJoinUnknowns: a target without listed ranges gives no monitored
// bytes, intervals the kernel tunes give no rate and no ages.
func TestJoinUnknowns(t *testing.T) {
	blk := block(1, 0x1000, 4)
	ext, resolved := extents(blk.Runs, page)
	regions := []Region{{Range: pr(0x1000, 4), NrAccesses: 0, Age: 9}}
	v := newView(false, Context{Sample: time.Millisecond, Aggr: time.Second, Tuned: true},
		Scheme{Action: "pageout", Pattern: Pattern{SzMax: ^uint64(0), NrMax: 0, AgeMin: 5, AgeMax: 1 << 32}})
	s := v.sample(blk, joinBlock(ext, resolved, nil, regions), time.Unix(1, 0))
	if s.MonitoredBytes != nil || s.AccessRate != nil || s.ColdAgeSeconds != nil || s.ColdMinAgeSeconds != nil ||
		s.GetCoveredBytes() != 4*page || s.GetColdBytes() != 4*page || !s.GetPartial() {
		t.Fatalf("sample %v", s)
	}
	if want := "shared: kdamond 0 scheme 0 pageout, regions nr_accesses <= 0 age >= 5 (intervals tuned by the kernel)"; s.GetSource() != want {
		t.Fatalf("source %q, want %q", s.GetSource(), want)
	}
}

func TestExtentsMergeAndDedupe(t *testing.T) {
	runs := []*stratav1.PageRun{
		{Count: 4, Pfn: 0x10},                               // 0x10-0x13
		{Count: 3, Pfn: 0x14, PfnDeltas: []int64{-0x10, 1}}, // 0x14, 0x04, 0x05
		{Count: 2, Pfn: 0x12},                               // 0x12-0x13 again
		{Count: 5},                                          // no PFN
	}
	ext, bytes := extents(runs, page)
	want := []Range{pr(0x4, 2), pr(0x10, 5)}
	if !reflect.DeepEqual(ext, want) || bytes != 7*page {
		t.Fatalf("extents %v (%d bytes), want %v (7 pages)", ext, bytes, want)
	}
}

func TestCapRanges(t *testing.T) {
	rs := []Range{{0, 10}, {12, 20}, {30, 40}, {41, 50}, {100, 110}}
	for _, tc := range []struct {
		limit int
		want  []Range
	}{
		{5, rs},
		{4, []Range{{0, 10}, {12, 20}, {30, 50}, {100, 110}}},
		{3, []Range{{0, 20}, {30, 50}, {100, 110}}},
		{1, []Range{{0, 110}}},
		{0, []Range{{0, 110}}},
	} {
		if got := capRanges(append([]Range(nil), rs...), tc.limit); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("limit %d: %v, want %v", tc.limit, got, tc.want)
		}
	}
	exts := [][]Range{{pr(1, 1), pr(5, 1)}, {pr(2, 1), pr(100, 1)}}
	if got, want := targetRanges(exts, 2), []Range{pr(1, 5), pr(100, 1)}; !reflect.DeepEqual(got, want) {
		t.Errorf("targetRanges %v, want %v", got, want)
	}
}

func TestOverlap(t *testing.T) {
	a := []Range{{0, 10}, {20, 30}, {40, 50}}
	b := []Range{{5, 25}, {28, 45}}
	if got := overlap(a, b); got != 5+5+2+5 {
		t.Fatalf("overlap %d, want 17", got)
	}
	if overlap(a, nil) != 0 || overlap(nil, b) != 0 {
		t.Fatal("overlap with nothing")
	}
}
