package web_test

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The heat API answers the store's Heat in its form: exactly the form of
// storetest.WantHeat for the stored HeatBatch, with the RDDs' words.
func TestHeatAPI(t *testing.T) {
	srv := serve(t, []*stratav1.Batch{storetest.HeatBatch(1)}, nil)
	app := storetest.App
	var want bytes.Buffer
	if err := jsonform.NewEncoder(&want).Encode(jsonform.NewHeat(app, storetest.WantHeat())); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv, "/api/v1/apps/"+app+"/heat")
	if code != 200 || strings.TrimSpace(body) != strings.TrimSpace(want.String()) {
		t.Fatalf("heat = %d\n%s\nwant\n%s", code, body, want.String())
	}
	shared := strings.Replace(storetest.HeatShared, "shared: ", "shared ", 1)
	wantPages(t, srv, []page{
		{"/api/v1/apps/" + app + "/heat", 200, []string{`"rdd":7,"says":"1.25 acc/s/GiB, 50.0% cold >= 1m0s"`,
			`"rdd":8,"says":"partial: ` + shared + `: 0.0% cold >= 1m0s"`, `"cold_for_seconds":60`}},
		{"/api/v1/apps/" + app + "/heat?rdd=8&cold_for=0s", 200, []string{`"says":"partial: ` + shared + `: 100.0% cold >= 0s"`}},
		{"/api/v1/apps/" + app + "/heat?cold_for=" + url.QueryEscape("-1s"), 400, []string{`"error":"`}},
		{"/api/v1/apps/" + app + "/heat?rdd=99", 200, []string{`{"app":"` + app + `","cold_for_seconds":60,"rdds":[]}`}},
		{"/api/v1/apps/other/heat", 404, []string{`{"error":"application other: not found: no records"}`}},
	})
}

// An RDD's page says its heat over each block's latest sample, and each
// block's; by a moment before any sample, none.
func TestRDDPageHeat(t *testing.T) {
	srv := serve(t, []*stratav1.Batch{storetest.HeatBatch(1)}, nil)
	app := storetest.App
	shared := strings.Replace(storetest.HeatShared, "shared: ", "shared ", 1)
	wantPages(t, srv, []page{
		{"/apps/" + app + "/rdds/7", 200, []string{`<span data-col="rdd-heat">1.25 acc/s/GiB, 50.0% cold &gt;= 1m0s</span>`,
			`<td data-col="heat">1.25 acc/s/GiB, 50.0% cold &gt;= 1m0s</td>`}},
		{"/apps/" + app + "/rdds/8", 200, []string{`<span data-col="rdd-heat">partial: ` +
			strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(shared) + `: 0.0% cold &gt;= 1m0s</span>`}},
		{"/apps/" + app + "/rdds/7?at=" + url.QueryEscape("+1s"), 200, []string{
			`<span data-col="rdd-heat">` + jsonform.NoHeat + `</span>`, `<td data-col="heat"><span class="muted">no sample</span></td>`}},
	})
	srv = newServer(t)
	wantPages(t, srv, []page{{"/apps/" + app + "/rdds/7", 200, []string{`<span data-col="rdd-heat">` + jsonform.NoHeat + `</span>`}}})
}
