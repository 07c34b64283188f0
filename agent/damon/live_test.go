package damon

import (
	"bufio"
	"context"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// TestThisMachine runs against the node's own DAMON, sharing the kdamond
// something else runs (this VM's proactive reclaim: kdamond 0, paddr,
// pageout). It never writes a kdamond's inputs: one round of the shared
// mode writes update_schemes_tried_regions once (it waits for the next
// aggregation interval), reads the regions (each in System RAM as
// /proc/iomem lists it, summing to the scheme's total_bytes), and joins a
// block placed on the first region's pages. Without a running kdamond the
// own mode would start one; this test does not, and says so.
func TestThisMachine(t *testing.T) {
	testenv.RequireRoot(t)
	s := Sysfs{Root: "/sys"}
	before := s.Detect()
	switch before.Mode {
	case Unavailable:
		t.Skipf("skipping: DAMON unavailable here: %s", before.Reason)
	case Own:
		t.Skip("skipping: no kdamond runs here; the own mode would start one, which this test does not do")
	}
	h, err := Open(s, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	t.Logf("status: %s", h.Status())
	v := h.views[0]
	if h.Mode() != Shared || !strings.HasPrefix(v.source, "shared: kdamond ") || !strings.HasPrefix(h.Status(), v.source) {
		t.Fatalf("mode %v, status %q", h.Mode(), h.Status())
	}
	ram := systemRAM(t)
	var regions []Region
	var placed Block
	// The block list is read after the update: the regions are fresh then.
	blocks := func() []Block {
		regions, err = s.TriedRegions(v.ctx.Kdamond, v.ctx.Index, v.scheme.Index, v.ctx.AddrUnit)
		if err != nil || len(regions) == 0 {
			return nil
		}
		first := regions[0].Start / page
		placed = block(1, first, 4)
		return []Block{placed}
	}
	// Agents of other tests may share the kdamond at the same time: their
	// update holds DAMON's sysfs lock (EBUSY here) or rebuilds the tried
	// regions under this read. Such a round counts an error; try again.
	var sink *heatSink
	for try := 1; ; try++ {
		sink = &heatSink{}
		errs := h.Stats().Errors
		h.round(context.Background(), blocks, sink)
		if h.Stats().Errors == errs && err == nil {
			break
		}
		if try == 5 {
			t.Fatalf("5 rounds failed: %v; stats %+v", err, h.Stats())
		}
		t.Logf("round %d failed (%v), again", try, err)
		time.Sleep(time.Second)
	}
	if st := h.Stats(); st.Reads == 0 {
		t.Fatalf("stats %+v", st)
	}
	total, err := s.readUint(contextDir(v.ctx.Kdamond, v.ctx.Index) + "/schemes/" + strconv.Itoa(v.scheme.Index) + "/tried_regions/total_bytes")
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, r := range regions {
		sum += r.End - r.Start
		if !within(r.Range, ram) {
			t.Errorf("region %#x-%#x outside System RAM %v", r.Start, r.End, ram)
		}
		if v.ctx.Ranges != nil && overlap([]Range{r.Range}, v.ctx.Ranges) != r.End-r.Start {
			t.Errorf("region %#x-%#x outside the kdamond's target %v", r.Start, r.End, v.ctx.Ranges)
		}
		if r.NrAccesses < v.scheme.Pattern.NrMin || r.NrAccesses > v.scheme.Pattern.NrMax || r.Age < v.scheme.Pattern.AgeMin {
			t.Errorf("region %+v outside the scheme's pattern %+v", r, v.scheme.Pattern)
		}
	}
	if sum != total {
		t.Fatalf("regions sum to %d bytes, total_bytes says %d", sum, total)
	}
	t.Logf("%d regions, %d MiB, from %s", len(regions), sum>>20, v.source)
	if len(regions) == 0 {
		if len(sink.samples) != 0 {
			t.Fatalf("samples %v without blocks", sink.samples)
		}
		return
	}
	// The block on the first region's first 4 pages is covered exactly
	// where regions are: a first region smaller than 4 pages leaves the
	// rest to the regions that follow it (or to none).
	span := []Range{pr(regions[0].Start/page, 4)}
	var want, wantCold uint64
	for _, r := range regions {
		n := overlap(span, []Range{r.Range})
		want += n
		if r.NrAccesses == 0 {
			wantCold += n
		}
	}
	if len(sink.samples) != 1 {
		t.Fatalf("%d samples, want 1", len(sink.samples))
	}
	got := sink.samples[0]
	if got.GetResolvedBytes() != 4*page || got.GetCoveredBytes() != want || !got.GetPartial() || got.GetSource() != v.source ||
		got.GetSourceKind() != stratav1.HeatSourceKind_HEAT_SOURCE_KIND_SHARED || got.GetHookBlockId() != placed.Block.GetHookBlockId() {
		t.Fatalf("sample %v, want %d bytes covered", got, want)
	}
	if got.GetColdBytes() != wantCold {
		t.Fatalf("sample %v: cold %d, want %d", got, got.GetColdBytes(), wantCold)
	}
	// Nothing the kdamond takes as input changed.
	if after := s.Detect(); !reflect.DeepEqual(after.Kdamonds, before.Kdamonds) {
		t.Fatalf("kdamonds changed:\n%+v\n%+v", before.Kdamonds, after.Kdamonds)
	}
}

// systemRAM reads the top-level System RAM ranges of /proc/iomem (root
// sees their addresses), as [start, end) in bytes.
func systemRAM(t *testing.T) []Range {
	f, err := os.Open("/proc/iomem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Range
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		span, name, ok := strings.Cut(line, " : ")
		if !ok || name != "System RAM" || strings.HasPrefix(line, " ") {
			continue
		}
		lo, hi, _ := strings.Cut(span, "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b == 0 {
			t.Fatalf("/proc/iomem line %q", line)
		}
		out = append(out, Range{a, b + 1})
	}
	if len(out) == 0 {
		t.Fatal("/proc/iomem lists no System RAM")
	}
	return out
}

// within reports whether r lies inside one of rs.
func within(r Range, rs []Range) bool {
	for _, x := range rs {
		if r.Start >= x.Start && r.End <= x.End {
			return true
		}
	}
	return false
}
