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
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
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
	return serve(t, []*stratav1.Batch{storetest.Sample(1)}, storetest.Jobs())
}

// serve is the UI over a fresh store holding batches and jobs.
func serve(t *testing.T, batches []*stratav1.Batch, jobs []*stratav1.JobResult) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	s := storetest.Open(t)
	for _, b := range batches {
		if _, err := s.Append(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
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

// page is a path and what its answer must hold.
type page struct {
	path string
	code int
	want []string
}

// wantPages fetches each page from srv and checks its status and body.
func wantPages(t *testing.T, srv *httptest.Server, pages []page) {
	t.Helper()
	for _, c := range pages {
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
}

// Every page and API answers from the storetest sample, and the numbers
// in the HTML and JSON are the stored ones.
func TestPagesAndAPI(t *testing.T) {
	srv := newServer(t)
	app := storetest.App
	wantPages(t, srv, []page{
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
		{"/api/v1/jobs/timeline?bucket=1s", 200, []string{`"start":"1970-01-01T00:00:02Z"`, `"critical":1`}},
		{"/api/v1/apps/" + app + "/memmap?from=4096&to=4112", 200, []string{`"start":4096`, `"block_id":"rdd_7_3"`, `"colors":{"7":"`}},
		{"/api/v1/apps/" + app + "/records?block=rdd_7_3", 200, []string{`"access":"read"`, `"vaddr":"0x7f0000000000"`}},
		{"/api/v1/apps/" + app + "/trace?rdd=8&limit=2", 200, []string{`"pfn":12288`, `"paddr":"0x3000000"`}},
		{"/api/v1/jobs/job_1526555215992_0003", 200, []string{`"severity":"critical"`, `"score":20`, `"started":"1970-01-01T00:00:01Z"`}},
		{"/api/v1/jobs/job_nope", 404, []string{`{"error":"`}},
		{"/api/v1/apps/" + app + "/report", 200, []string{`{"app":"` + app + `"`, `"rdds":[{"rdd":7,`, `"page_walk":[{"executor_id":"1"`}},
		{"/api/v1/apps/" + app + "/numa", 200, []string{`{"rdd":8,"numa_node":1,"pages":4,"bytes":16384}`}},
		{"/api/v1/apps/" + app + "/faults", 200, []string{`"block_id":"rdd_7_3"`, `"read":9,"write":3,"exec":1,"major":1,"unclassified":4`}},
		{"/api/v1/apps/" + app + "/overhead", 200, []string{`"pmu_status":"unavailable: no hardware PMU"`, `"walk_pct":7.5`}},
		{"/api/v1/apps/" + app + "/hot", 200, []string{`"method":"sampled page faults`, `"pages":[`}},
		{"/api/v1/apps/" + app + "/occupancy?buckets=4", 200, []string{`{"rdd":7,"color":"`, `"points":[{"time":"2023-11-14T22:13:2`}},
		{"/api/v1/apps/" + app + "/blocks/1/rdd_7_3", 200, []string{`"access":"alloc"`, `"vaddr":"0x7f0000000000"`,
			`"ranges":[{"first":4096,"last":4098,"node":0},{"first":8192,"last":8193,"node":1}]`}},
		{"/api/v1/apps/" + app + "/blocks/1/rdd_7_9", 404, []string{`{"error":"`}},
		{"/api/v1/apps/" + app + "/records?access=bogus", 400, []string{`{"error":"invalid query: access \"bogus\"`}},
		{"/static/memmap.js", 200, []string{"MemMap"}},
	})
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

// The coverage scenario's pages and API: the RDD table says what Strata
// resolved of each RDD against Spark's bytes, the RDD page what of each
// block and buffer (a cached batch's buffer by its column), the block
// page what each step held; the JSON carries the same.
func TestCoverage(t *testing.T) {
	srv := serve(t, storetest.CoverageBatches(), nil)
	app := storetest.CoverageApp
	wantPages(t, srv, []page{
		{"/apps/" + app, 200, []string{
			`<td data-col="resolved">buffers 100 %</td>`, `<td class="num" data-col="share">93.8 %</td>`,
			`<td data-col="resolved">walked 49.5 % (1 block); walk cut 28.5 % (1 block) <span class="muted">(400 B shared with other blocks)</span></td>`,
			`<td data-col="resolved">references only: walking off</td>`, `<td class="num" data-col="spark" title="50000 bytes">48.8 KiB</td>`}},
		{"/apps/" + app + "/rdds/3", 200, []string{
			`<div class="buffer" data-chunk="0" data-column="0">column 0 id: buffers, 5.0 KiB in 2 buffers</div>`,
			`<div class="buffer" data-chunk="1" data-column="1">column 1 name: buffers, 6.0 KiB in 2 buffers</div>`,
			`<td data-col="resolved">buffers 93.8 %</td>`}},
		// Each block as last resolved while live: rdd_4_0's second walk.
		{"/apps/" + app + "/rdds/4?at=last", 200, []string{
			`<div class="buffer" data-chunk="0">walked objects, 10.2 KiB in 210 objects (400 B shared)</div>`,
			`<div class="buffer" data-chunk="0">walk cut: its objects, 5.9 KiB in 100 objects</div>`,
			`<td class="num" data-col="share">86.6 %</td>`}},
		// The ended app's default is its peak, at t3: rdd_4_0's first walk.
		{"/apps/" + app + "/rdds/4", 200, []string{
			`<div class="buffer" data-chunk="0">walked objects, 9.8 KiB in 200 objects (400 B shared)</div>`,
			`<div class="buffer" data-chunk="0">walk cut: its objects, 5.9 KiB in 100 objects</div>`,
			`<td class="num" data-col="share">83.3 %</td>`}},
		{"/apps/" + app + "/blocks/1/rdd_4_0", 200, []string{
			`<td data-col="holds">references only: walk pending <span class="muted">3.9 KiB</span></td>`,
			`<td data-col="holds">references only: stale: objects moved by GC 2, walk pending <span class="muted">3.9 KiB</span></td>`,
			`<td data-col="holds">walked objects <span class="muted">10.2 KiB</span></td>`}},
		{"/api/v1/apps/" + app + "/rdds/4/blocks", 200, []string{`"block_id":"rdd_4_1"`, `"resolution":"walk_cut"`, `"objects":100`}},
		{"/api/v1/apps/" + app + "/rdds/x/blocks", 400, []string{`"error"`}},
	})

	_, body := get(t, srv, "/api/v1/apps/"+app+"/rdds")
	var rows []struct {
		RDD           int32    `json:"rdd"`
		SparkBytes    uint64   `json:"spark_bytes"`
		ResolvedBytes uint64   `json:"resolved_bytes"`
		SharedBytes   uint64   `json:"shared_bytes"`
		ResolvedShare *float64 `json:"resolved_share"`
		Resolved      string   `json:"resolved"`
		Parts         []struct {
			Resolution string   `json:"resolution"`
			Bytes      uint64   `json:"bytes"`
			Details    []string `json:"details"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("rdds = %+v", rows)
	}
	for i, x := range storetest.CoverageRDDs(false) {
		r := rows[i]
		if r.RDD != x.GetRddId() || r.SparkBytes != x.GetSparkBytes() || r.ResolvedBytes != x.GetResolvedBytes() ||
			r.SharedBytes != x.GetSharedBytes() || r.ResolvedShare == nil || *r.ResolvedShare != x.GetResolvedShare() ||
			len(r.Parts) != len(x.GetParts()) || r.Parts[0].Bytes != x.GetParts()[0].GetBytes() {
			t.Errorf("rdd %d = %+v, want %v", r.RDD, r, x)
		}
	}
	if rows[3].Resolved != "references only: walking off" || rows[3].Parts[0].Resolution != "references" ||
		rows[3].Parts[0].Details[0] != "walking off" {
		t.Errorf("RDD 5 = %+v", rows[3])
	}
	var blocks []struct {
		BlockID string `json:"block_id"`
		Buffers []struct {
			Chunk      uint32 `json:"chunk"`
			Column     *int32 `json:"column"`
			ColumnName string `json:"column_name"`
			Resolution string `json:"resolution"`
			Bytes      uint64 `json:"bytes"`
		} `json:"buffers"`
	}
	_, body = get(t, srv, "/api/v1/apps/"+app+"/rdds/3/blocks")
	if err := json.Unmarshal([]byte(body), &blocks); err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || len(blocks[0].Buffers) != 2 {
		t.Fatalf("blocks of RDD 3 = %+v", blocks)
	}
	for i, b := range blocks[0].Buffers {
		if b.Chunk != uint32(i) || b.Column == nil || *b.Column != int32(i) || b.ColumnName != []string{"id", "name"}[i] ||
			b.Resolution != "buffers" {
			t.Errorf("buffer %d = %+v", i, b)
		}
	}
}
