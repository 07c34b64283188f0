package web_test

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The looking-back scenario (an application whose blocks are all freed by
// its end) on the pages and API: an RDD's page and the map show its peak
// by default and say so, another moment when asked, and each block as
// last resolved with at=last; the moment API says the same.
func TestLookingBack(t *testing.T) {
	srv := serve(t, []*stratav1.Batch{storetest.MomentBatch(1)}, nil)
	app := "/apps/" + storetest.MomentApp
	peak := "the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB; the application has ended"
	// html/template writes "+" as "&#43;".
	peakHTML := strings.ReplaceAll(peak, "+", "&#43;")
	wantPages(t, srv, []page{
		{app + "/rdds/1", 200, []string{"Showing " + peakHTML + ".", "2 live then", "Pages at the moment",
			`<tr data-block="rdd_1_0">`, `<td class="num" data-col="pages">4</td>`, `<td class="num" data-col="pages">2</td>`}},
		{app + "/rdds/2?at=%2B3s", 200, []string{"&#43;3s): its RDDs held 56.0 KiB", `<td class="num" data-col="pages">8</td>`}},
		{app + "/rdds/2?at=%2B4s", 200, []string{"0 live then", `<td data-col="resolved" class="muted">not live then</td>`}},
		{app + "/rdds/2?at=last", 200, []string{"Showing each block as last resolved while it was live.", "Pages then",
			`<td class="num" data-col="bytes" title="32768 bytes">`}},
		{app + "/rdds/1?at=yesterday", 400, []string{`at &#34;yesterday&#34;`}},
		{app + "/memory?at=peak", 200, []string{`data-at="peak"`}},
		{"/api/v1" + app + "/moment", 200, []string{`"kind":"peak","default":true,"says":"` + peak + `"`}},
		{"/api/v1" + app + "/moment?at=now", 200, []string{`"at":"","kind":"now","default":false`, `"bytes":0,"pages":0`}},
		{"/api/v1" + app + "/memmap?from=768&to=776&at=%2B2s", 200, []string{`"pages":14`, `"block_id":"rdd_2_0"`, `"kind":"at"`}},
		{"/api/v1" + app + "/rdds/2/blocks?at=%2B4s", 200, []string{`[]`}},
		{"/api/v1" + app + "/rdds/2/blocks?at=peak", 200, []string{`"block_id":"rdd_2_0"`, `"pages":8`}},
		{"/api/v1" + app + "/memmap?at=tomorrow", 400, []string{`"error":"invalid query: at \"tomorrow\"`}},
		{"/api/v1/apps/nope/moment", 404, []string{`"error"`}},
	})
}

// The dashboard's badges count the jobs of one window of days up to the
// latest job, say which, and let it be chosen.
func TestDashboardWindow(t *testing.T) {
	srv := serve(t, nil, storetest.UIJobs())
	wantPages(t, srv, []page{
		// UIJobs: three jobs finish in the first seconds of 1970, one a day
		// later; 60 days up to it hold all four.
		{"/", 200, []string{"of the 4 jobs that finished in the 60 days up to the latest finished job (- – 1970-01-02 00:00:05 UTC)",
			`<option value="60" selected>60 days</option>`, `<option value="7">7 days</option>`}},
		// One day up to the latest: only the job that finished a day later.
		{"/?days=1", 200, []string{"of the 1 jobs that finished in the 1 days up to the latest finished job (1970-01-01 00:00:05 – 1970-01-02 00:00:05 UTC)",
			`<option value="1" selected>1 days</option>`,
			`<li data-severity="severe"><span class="sev" style="background:`, `&amp;from=5000">1</a>`}},
		{"/?days=x", 400, []string{"days"}},
	})
}
