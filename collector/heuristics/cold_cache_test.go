package heuristics

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// cachedBlock is a block of rdd of 4 MiB (1024 pages of 4 KiB) with gets
// gets, the first the put's read-back.
func cachedBlock(rdd int32, part int32, gets uint64, freed bool) job.CachedBlock {
	b := job.CachedBlock{RDD: rdd, Partition: part, Gets: gets, PutReads: min(gets, 1), Pages: 1024, PageSize: 4096,
		PagesByNode: map[int32]uint64{0: 1024}, GetsByNode: map[int32]uint64{0: gets}}
	if freed {
		b.FreedNs = 1
	}
	return b
}

// rddBlocks is n blocks of rdd with gets each.
func rddBlocks(rdd int32, n int, gets uint64, freed bool) []job.CachedBlock {
	var out []job.CachedBlock
	for i := range n {
		out = append(out, cachedBlock(rdd, int32(i), gets, freed))
	}
	return out
}

func TestColdCache(t *testing.T) {
	h := &ColdCache{p: coldCache.of(defaults(t))}
	f64 := func(v float64) *float64 { return &v }
	// RDD 1 read 20 times (the put's read-back and 19 reads); RDD 2 only
	// read back by its put: 4 blocks each, 16 MiB each.
	hot, cold := rddBlocks(1, 4, 20, false), rddBlocks(2, 4, 1, true)
	damonCold := rddBlocks(3, 4, 5, false)
	for i := range damonCold {
		damonCold[i].Heat = &job.BlockHeat{MonitoredBytes: 4 << 20, CoveredBytes: 4 << 20, ColdBytes: 4 << 20, ColdMinAgeSeconds: f64(120)}
	}
	youngCold := rddBlocks(4, 4, 5, false)
	for i := range youngCold {
		youngCold[i].Heat = &job.BlockHeat{MonitoredBytes: 4 << 20, CoveredBytes: 4 << 20, ColdBytes: 4 << 20, ColdMinAgeSeconds: f64(30)}
	}
	for _, tc := range []struct {
		name   string // the rule it checks
		blocks []job.CachedBlock
		sev    Severity
		score  int64
		cold   []string // rdd details
		skip   bool
	}{
		{"read again: not cold", hot, None, 0, nil, false},
		{"one of two RDDs never read after its put: half the bytes", append(append([]job.CachedBlock{}, hot...), cold...), Critical, 4, []string{"rdd 2"}, false},
		{"read, but DAMON saw it cold for 2 minutes", append(append([]job.CachedBlock{}, hot...), damonCold...), Critical, 4, []string{"rdd 3"}, false},
		{"cold for less than damon_cold_for_sec: not cold", append(append([]job.CachedBlock{}, hot...), youngCold...), None, 0, nil, false},
		{"one cold block of 4 MiB in 68 MiB: 5.9 %", append(append([]job.CachedBlock{}, rddBlocks(1, 16, 3, false)...), cachedBlock(9, 0, 0, false)), Low, 0, []string{"rdd 9"}, false},
		{"less than min_bytes in all", rddBlocks(2, 3, 1, false), None, 0, nil, true},
		{"no blocks", nil, None, 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, &TraceSummary{Blocks: tc.blocks})
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != tc.score)) {
				t.Fatalf("got %v score %d skip %v, want %v score %d skip %v: %+v", r.Severity, r.Score, r.Skip, tc.sev, tc.score, tc.skip, r.Details)
			}
			var rdds []string
			for _, d := range r.Details {
				if strings.HasPrefix(d.Name, "rdd ") {
					rdds = append(rdds, d.Name)
					if d.Text != coldAdvice {
						t.Errorf("%s: advice %q", d.Name, d.Text)
					}
				}
			}
			if strings.Join(rdds, ",") != strings.Join(tc.cold, ",") {
				t.Errorf("cold RDDs %v, want %v", rdds, tc.cold)
			}
		})
	}
	r := h.ApplyTrace(nil, &TraceSummary{Blocks: append(append([]job.CachedBlock{}, hot...), cold...)})
	if v, _ := findDetail(r, "rdd 2"); v != "16 MB in 4 blocks, read 0 times after caching, then freed; DAMON: no samples" {
		t.Errorf("rdd 2 detail %q", v)
	}
	if v, _ := findDetail(r, "Cold share of cached bytes"); v != "0.5000" {
		t.Errorf("cold share %q", v)
	}
	r = h.ApplyTrace(nil, &TraceSummary{Blocks: append(append([]job.CachedBlock{}, hot...), damonCold...)})
	if v, _ := findDetail(r, "rdd 3"); v != "16 MB in 4 blocks, read 16 times after caching, then idle, cached to the end; DAMON: 100.0 % of its monitored bytes cold for at least 60 s" {
		t.Errorf("rdd 3 detail %q", v)
	}
}
