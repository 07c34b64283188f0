package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
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
		// The report carries each RDD's heat in words and figures.
		{"/api/v1/apps/" + app + "/report", 200, []string{`"heat":"1.25 acc/s/GiB, 50.0% cold >= 1m0s","heat_latest":{"samples":1,`,
			`"heat":"partial: ` + shared + `: 0.0% cold >= 1m0s"`, `"heat_cold_for_seconds":60}`}},
		{"/api/v1/apps/" + app + "/report?cold_for=0s", 200, []string{`"heat_cold_for_seconds":0}`,
			`"heat":"partial: ` + shared + `: 100.0% cold >= 0s"`}},
		{"/api/v1/apps/" + app + "/report?cold_for=x", 400, []string{`"error":"`}},
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

// cell is the attributes the heat map gives a partition's cell of one read
// time.
func cell(part int32, t int64, samples int, aps, coldShare string, partial bool) string {
	return fmt.Sprintf(`data-partition="%d" data-start-ns="%d" data-end-ns="%d" data-samples="%d" data-aps="%s" data-cold-share="%s" data-partial="%t"`,
		part, t, t, samples, aps, coldShare, partial)
}

// The RDD page's heat map: a row per partition, a column per read time,
// each cell with its samples' accesses per second per GiB and cold share
// (rdd_7_3 at 2.5 then 1.25 with half cold for 70 s; rdd_7_1 at 4), the
// colour on a scale to 5; a shared kdamond's partial samples without a
// rate; by a moment, only the samples read up to it.
func TestRDDHeatMap(t *testing.T) {
	srv := serve(t, storetest.HeatBatches(), nil)
	app := storetest.App
	t10, t20 := storetest.T0+10e9, storetest.T0+20e9
	_, body := get(t, srv, "/apps/"+app+"/rdds/7")
	for _, want := range []string{
		cell(1, t20, 1, "4", "0", false), cell(3, t10, 1, "2.5", "0", false), cell(3, t20, 1, "1.25", "0.5", false),
		`fill="#ca3144"`, "0 to 5 accesses/s per GiB",
		"partition 3, 22:13:40.000: 1.25 acc/s/GiB, 50.0% cold &gt;= 1m0s (1 samples)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("RDD 7's heat map lacks %q", want)
		}
	}
	if n := strings.Count(body, `class="heat-cell"`); n != 3 {
		t.Errorf("RDD 7's heat map has %d cells, want 3", n)
	}
	_, body = get(t, srv, "/apps/"+app+"/rdds/7?at="+url.QueryEscape("+15s"))
	if n := strings.Count(body, `class="heat-cell"`); n != 1 || !strings.Contains(body, cell(3, t10, 1, "2.5", "0", false)) {
		t.Errorf("at +15s: %d cells, want rdd_7_3's at T0+10s alone", n)
	}
	_, body = get(t, srv, "/apps/"+app+"/rdds/8")
	if !strings.Contains(body, cell(0, t20, 1, "", "0", true)) || !strings.Contains(body, `fill="#c6d0e0"`) {
		t.Error("RDD 8's partial sample is not a cell without a rate")
	}
	_, body = get(t, srv, "/apps/"+app+"/rdds/7?at="+url.QueryEscape("+1s"))
	if strings.Contains(body, `class="heat-cell"`) || !strings.Contains(body, `<text x="450.0" y="30.0" text-anchor="middle" class="empty">`+jsonform.NoHeat) {
		t.Error("a moment before any sample draws cells")
	}
}

// The memory map's buckets carry the DAMON heat of the blocks holding
// their pages: rdd_7_3's PFNs its latest sample's 1.25 accesses per second
// per GiB, or by a moment before that sample the earlier 2.5; rdd_8_0's
// partial sample gives none.
func TestMemMapHeat(t *testing.T) {
	srv := serve(t, storetest.HeatBatches(), nil)
	base := "/api/v1/apps/" + storetest.App + "/memmap?buckets=4"
	type bucket struct {
		Start uint64   `json:"start"`
		Heat  *float64 `json:"heat"`
	}
	heats := func(query string) map[uint64]float64 {
		t.Helper()
		code, body := get(t, srv, base+query)
		if code != 200 {
			t.Fatalf("memmap%s: %d %s", query, code, body)
		}
		var m struct {
			Buckets []bucket `json:"buckets"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		out := map[uint64]float64{}
		for _, b := range m.Buckets {
			if b.Heat != nil {
				out[b.Start] = *b.Heat
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  map[uint64]float64
	}{
		{"&from=4096&to=4100", map[uint64]float64{0x1000: 1.25, 0x1001: 1.25, 0x1002: 1.25}},
		{"&from=4096&to=4100&at=" + url.QueryEscape("+15s"), map[uint64]float64{0x1000: 2.5, 0x1001: 2.5, 0x1002: 2.5}},
		{"&from=12288&to=12292", map[uint64]float64{}},
	} {
		if got := heats(tc.query); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("memmap%s: heat %v, want %v", tc.query, got, tc.want)
		}
	}
}

// The job page shows the cross-layer heuristics on cached blocks with
// their numbers: the job analysed with the per-block input a real store
// answers for storetest.CacheBatch (a two-node machine).
func TestJobPageCacheHeuristics(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	storetest.MustAppend(t, s, storetest.CacheBatch(1))
	blocks, err := s.CachedBlocks(ctx, storetest.CacheApp)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := heuristics.NewEngine(heuristics.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	res := eng.AnalyzeWithTrace(&job.Job{ID: "job-cacheuse", AppID: storetest.CacheApp, Type: job.Spark, Spark: &job.SparkApp{}},
		&heuristics.TraceSummary{AppID: storetest.CacheApp, NUMANodes: 2, Blocks: blocks})
	srv := serve(t, []*stratav1.Batch{storetest.CacheBatch(1)}, []*stratav1.JobResult{res})
	wantPages(t, srv, []page{{"/jobs/job-cacheuse", 200, []string{
		`<div class="heuristic" data-name="Hot Data on a Remote NUMA Node" data-severity="critical"`,
		`<tr><th>Remote share of hot cached data&#39;s accesses</th><td>0.7500</td></tr>`,
		`<tr><th>rdd 5</th><td>75.0 % of 4 accesses remote in 1 hot blocks (hot by DAMON heat); pages on node 1: 4, accessed from node 0: 3, node 1: 1</td></tr>`,
	}}})
}
