package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
	"github.com/stratatrace/strata/collector/web"
)

// get fetches path from srv and returns status and body.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	s := storetest.Open(t)
	if _, err := s.Append(ctx, storetest.Sample(1)); err != nil {
		t.Fatal(err)
	}
	for _, j := range storetest.Jobs() {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	h, err := web.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Every page and API answers from the storetest sample, and the numbers
// in the HTML and JSON are the stored ones.
func TestPagesAndAPI(t *testing.T) {
	srv := newServer(t)
	app := storetest.App
	for _, c := range []struct {
		path string
		code int
		want []string
	}{
		{"/", 200, []string{"Worst recent jobs", "job_1526555215992_0003", app}},
		{"/jobs?severity=moderate", 200, []string{"2 jobs", "job_1526555215992_0002", "job_1526555215992_0003"}},
		{"/jobs/job_1526555215992_0003", 200, []string{"Executor GC", "spark.serializer", "Kryo is not the serializer", "memory view"}},
		{"/jobs/job_nope", 404, []string{"not found"}},
		{"/apps", 200, []string{app}},
		{"/apps/" + app, 200, []string{`data-rdd="7"`, `<td class="num" data-col="present">5</td>`, `<td class="num" data-col="swapped">1</td>`, "40.0%"}},
		{"/apps/" + app + "/memory", 200, []string{`class="memmap"`}},
		{"/apps/" + app + "/rdds/7", 200, []string{"rdd_7_3"}},
		{"/apps/" + app + "/blocks/1/rdd_7_3", 200, []string{"0x1000–0x1002", "0x2000–0x2001", `data-col="swapped">1<`}},
		{"/apps/" + app + "/overhead", 200, []string{"unavailable: no hardware PMU", "7.50%"}},
		{"/apps/nope", 404, []string{"no records"}},
		{"/api/v1/jobs?severity=critical", 200, []string{`"total":1`, `"job_id":"job_1526555215992_0003"`}},
		{"/api/v1/jobs?severity=bogus", 400, []string{`"error"`}},
		{"/api/v1/jobs/timeline?bucket=1s", 200, []string{`"start_ms":2000`, `"critical":1`}},
		{"/api/v1/apps/" + app + "/memmap?from=4096&to=4112", 200, []string{`"start":4096`, `"block_id":"rdd_7_3"`, `"colors":{"7":"`}},
		{"/api/v1/apps/" + app + "/records?block=rdd_7_3", 200, []string{`"access":"ACCESS_KIND_READ"`}},
		{"/api/v1/apps/" + app + "/trace?rdd=8&limit=2", 200, []string{`"pfn":"12288"`}},
		{"/static/memmap.js", 200, []string{"MemMap"}},
	} {
		code, body := get(t, srv, c.path)
		if code != c.code {
			t.Errorf("%s: status %d, want %d\n%s", c.path, code, c.code, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: body lacks %q", c.path, w)
			}
		}
	}
	_, body := get(t, srv, "/api/v1/apps/"+app+"/rdds")
	var rows []struct {
		RDD      int32   `json:"rdd"`
		Present  uint64  `json:"present"`
		Swapped  uint64  `json:"swapped"`
		THPShare float64 `json:"thp_share"`
		Reads    uint64  `json:"reads"`
		Faults   struct {
			Read uint64 `json:"read"`
		} `json:"faults"`
	}
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Present != 5 || rows[0].Swapped != 1 || rows[0].THPShare != 0.4 || rows[0].Reads != 1 ||
		rows[0].Faults.Read != 9 || rows[1].Present != 4 {
		t.Fatalf("rdds = %+v", rows)
	}
}
