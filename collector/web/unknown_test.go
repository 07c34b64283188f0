package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

// TestUnknownAppIs404: every /api/v1/apps/{app}/... question about an
// application the store holds no record of answers 404 with a JSON error
// naming the application, as docs/api.md promises; the same questions
// about a known app that select nothing stay 200, and the report of an
// app known only as an analysed job is that job.
func TestUnknownAppIs404(t *testing.T) {
	srv := newServer(t)
	for _, p := range []string{
		"/report", "/rdds", "/rdds/7/blocks", "/rdds/7/blocks?at=now", "/numa", "/numa?at=now", "/faults", "/overhead",
		"/hot", "/hot?rdd=7", "/heat", "/records", "/records?rdd=7", "/trace", "/trace?at=peak", "/occupancy", "/memmap",
		"/moment", "/blocks/1/rdd_7_3",
	} {
		path := "/api/v1/apps/application_nope" + p
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error string `json:"error"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" || derr != nil ||
			!strings.Contains(e.Error, "application_nope") {
			t.Errorf("%s: %s %s, error %q (%v); want 404 with a JSON error naming the app", path, resp.Status,
				resp.Header.Get("Content-Type"), e.Error, derr)
		}
	}
	app := "/api/v1/apps/" + storetest.App
	wantPages(t, srv, []page{
		{app + "/hot?rdd=99", 200, []string{`"pages":[]`}},
		{app + "/records?rdd=99", 200, nil},
		{app + "/faults", 200, []string{`"rdd":7`}},
		{"/api/v1/apps/job_1526555215992_0001/report", 200, []string{`"name":"etl-`, `"rdds":[]`}},
	})
}
