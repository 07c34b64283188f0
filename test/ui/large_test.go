package ui

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store/storetest"
	"github.com/stratatrace/strata/collector/web"
	"github.com/stratatrace/strata/test/testenv"
)

// largeRuns is how many stored page runs the large application must have.
const largeRuns = 100_000

// TestLargeAppRenders loads the application page and the memory map of an
// application with over 100 k stored page runs (2.2 Mi pages, 9 GiB, in
// 4 KiB runs scattered over 24 GiB of PFNs and in THPs) in Chromium, and
// requires each page, map included, to be drawn within 2 s once the map's
// PFN index is built (the first load builds it: 6 s allowed, the margin a
// shared CI machine needs). It logs every time measured.
func TestLargeAppRenders(t *testing.T) {
	testenv.Chromium(t)
	if testing.Short() {
		t.Skip("skipping: stores 2.2 Mi pages (-short)")
	}
	ctx := context.Background()
	s := storetest.Open(t)
	batches, pages, runs := storetest.BenchBatches(22, 100)
	if runs < largeRuns {
		t.Fatalf("fixture has %d runs, want at least %d", runs, largeRuns)
	}
	for _, b := range batches {
		if _, err := s.Append(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	h, err := web.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := newBrowser(t)

	load := func(path string) time.Duration {
		start := time.Now()
		b.open(t, srv.URL+path)
		return time.Since(start)
	}
	for _, page := range []struct{ name, path string }{
		{"application", "/apps/app-bench"},
		{"memory map", "/apps/app-bench/memory"},
	} {
		first := load(page.path)
		var best time.Duration
		for i := range 3 {
			d := load(page.path)
			if i == 0 || d < best {
				best = d
			}
		}
		t.Logf("%s page over %d runs (%d pages): first load %v, best of 3 more %v", page.name, runs, pages, first.Round(time.Millisecond),
			best.Round(time.Millisecond))
		if first > 6*time.Second || best > 2*time.Second {
			t.Errorf("%s page: first load %v (limit 6 s), then %v (limit 2 s)", page.name, first, best)
		}
	}
	// A zoom: the map answers a window of one NUMA node's first MiB.
	start := time.Now()
	b.open(t, srv.URL+"/apps/app-bench/memory?from=4096&to=4352")
	t.Logf("zoomed map: %v", time.Since(start).Round(time.Millisecond))
	b.shot(t, "memory-large")
	var m answer.PhysMap
	if err := getJSON(srv.URL+"/api/v1/apps/app-bench/memmap", &m); err != nil {
		t.Fatal(err)
	}
	if m.Runs != uint64(runs) || m.Pages != uint64(pages) {
		t.Errorf("map read %d runs, %d pages; stored %d runs, %d pages", m.Runs, m.Pages, runs, pages)
	}
}
