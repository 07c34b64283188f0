package ui

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestUIMoment drives the time control of the memory map and of an RDD's
// page in Chromium against a strata-collector holding the looking-back
// scenario (storetest.MomentBatch: an application whose blocks are all
// freed by its end). The map opens at the app's peak and says so; "now",
// a time typed in and the slider each redraw it with exactly the blocks
// live then; the RDD page lists the pages each block held at the moment.
func TestUIMoment(t *testing.T) {
	b := newBrowser(t)
	bin := bins(t)
	col := startCollector(t, bin, t.TempDir())
	push(t, col.grpc, []*stratav1.Batch{storetest.MomentBatch(1)})
	appPage := col.http + "/apps/" + url.PathEscape(storetest.MomentApp)

	// bars returns the map's bars, one page each over PFNs 0x100-0x500,
	// as PFN -> RDD; want is the scenario's blocks at T0+dt the same way.
	bars := func() map[uint64]string {
		var got [][2]string
		b.eval(t, `[...document.querySelectorAll("rect.bucket")].map((r) => [r.dataset.start, r.dataset.rdd])`, &got)
		out := map[uint64]string{}
		for _, g := range got {
			var pfn uint64
			fmt.Sscan(g[0], &pfn)
			out[pfn] = g[1]
		}
		return out
	}
	want := func(dt int64) map[uint64]string {
		out := map[uint64]string{}
		for pfn, block := range storetest.MomentPFNs(dt) {
			out[pfn] = strings.Split(block, "_")[1]
		}
		return out
	}
	says := func() string {
		got := b.texts(t, ".memmap .moment-says")
		if len(got) != 1 {
			t.Fatalf("%d moment lines on the map", len(got))
		}
		return got[0]
	}
	check := func(what string, dt int64, words string) {
		t.Helper()
		if got := bars(); !reflect.DeepEqual(got, want(dt)) {
			t.Errorf("%s: bars %v, want %v", what, got, want(dt))
		}
		if got := says(); got != "Showing "+words+"." {
			t.Errorf("%s: the map says %q, want %q", what, got, words)
		}
	}
	const ended = "; the application has ended"
	// redraw runs actions that make the map load again and waits for the
	// new map: the state is cleared first, so a map not yet reloading is
	// not taken for the new one.
	redraw := func(what string, actions ...chromedp.Action) {
		t.Helper()
		var cleared string
		b.eval(t, `document.querySelector(".memmap").dataset.state = ""`, &cleared)
		b.run(t, what, actions...)
		b.waitMap(t)
	}

	b.open(t, appPage+"/memory?from=256&to=1280")
	check("default", 2e9, "the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB"+ended)
	b.shot(t, "moment-peak")

	redraw("now", chromedp.Click(".memmap .moment-now", chromedp.ByQuery))
	check("now", 6e9, "now, its RDDs hold 0 B"+ended)

	redraw("type a time", chromedp.SetValue(".memmap .moment-at", "+5s", chromedp.ByQuery),
		chromedp.Click(".memmap .moment-go", chromedp.ByQuery))
	check("+5s", 5e9, "2023-11-14 22:13:25.000 UTC (+5s): its RDDs held 24.0 KiB (at most 56.0 KiB, at +2s)"+ended)
	var loc string
	b.eval(t, `location.search`, &loc)
	if !strings.Contains(loc, "at=%2B5s") {
		t.Errorf("the address %q does not keep the moment", loc)
	}
	b.shot(t, "moment-5s")

	// The slider, moved to 1.5 s after the start.
	var moved bool
	redraw("move the slider", chromedp.Evaluate(`(() => { const s = document.querySelector(".memmap .moment-slider");
		s.value = "1500"; s.dispatchEvent(new Event("change")); return true; })()`, &moved))
	check("slider at 1.5s", 15e8, "2023-11-14 22:13:21.500 UTC (+1.5s): its RDDs held 24.0 KiB (at most 56.0 KiB, at +2s)"+ended)
	b.noErrors(t, "the memory map's time control")

	// An RDD's page: by default the peak, each block with its pages then.
	pages := func() map[string]string {
		out := map[string]string{}
		for _, block := range []string{"rdd_1_0", "rdd_1_1"} {
			got := b.texts(t, fmt.Sprintf(`#block-table tr[data-block=%q] td[data-col="pages"]`, block))
			if len(got) == 1 {
				out[block] = got[0]
			}
		}
		return out
	}
	b.open(t, appPage+"/rdds/1")
	if got, w := pages(), map[string]string{"rdd_1_0": "4", "rdd_1_1": "2"}; !reflect.DeepEqual(got, w) {
		t.Errorf("RDD 1 at the peak: pages %v, want %v", got, w)
	}
	if got := b.texts(t, "#moment-says"); len(got) != 1 || !strings.Contains(got[0], "the moment its RDDs held the most") {
		t.Errorf("RDD page says %q", got)
	}
	// The slider to 0.5 s: rdd_1_1 was not yet cached.
	b.follow(t, "move the RDD page's slider", chromedp.Evaluate(`(() => { const s = document.querySelector("#moment .moment-slider");
		s.value = "500"; s.dispatchEvent(new Event("change")); return true; })()`, &moved))
	b.eval(t, `location.search`, &loc)
	if loc != "?at=%2B0.5s" {
		t.Errorf("the RDD page's slider went to %q", loc)
	}
	if got, w := pages(), map[string]string{"rdd_1_0": "4"}; !reflect.DeepEqual(got, w) {
		t.Errorf("RDD 1 at +0.5s: pages %v, want %v", got, w)
	}
	b.open(t, appPage+"/rdds/1?at=%2B6s")
	if got := b.texts(t, `#block-table td[data-col="resolved"]`); !reflect.DeepEqual(got, []string{"not live then", "not live then"}) {
		t.Errorf("RDD 1 after its end: %q", got)
	}
}
