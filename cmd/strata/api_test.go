package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	"github.com/stratatrace/strata/collector/web"
)

// apiCollector starts one real collector that serves the query service
// over gRPC and the web UI's /api/v1 over HTTP from one store, holding the
// report scenario (storetest.App, analysed as a job), the sample as app
// "app-pmu", the coverage scenario, the looking-back scenario
// (storetest.MomentApp) and the fixture jobs.
func apiCollector(t *testing.T) *servertest.Collector {
	t.Helper()
	cover := storetest.CoverageBatches()
	for i, b := range cover {
		b.Seq = 100 + uint64(i) // the report scenario's batches took 1 and 2
	}
	heat := storetest.HeatBatch(950) // its heat samples only: App's other answers stay the report scenario's
	heat.Records, heat.Workloads, heat.Processes = nil, nil, nil
	batches := append(append(reportBatches(), cover...), storetest.MomentBatch(900), heat)
	jobs := append(storetest.Jobs(), reportJob())
	c := servertest.StartWith(t, batches, jobs, func(c *server.Config) { c.HTTP = "127.0.0.1:0" },
		server.WithHTTPHandler("/", func(d server.HTTPDeps) (http.Handler, error) { return web.New(d.Store, d.Logger) }))
	if c.HTTPAddr == "" {
		t.Fatal("the collector serves no HTTP")
	}
	return c
}

// apiGet returns the body of /api/v1/path, which must answer 200.
func apiGet(t *testing.T, c *servertest.Collector, path string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + c.HTTPAddr + "/api/v1" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return b
}

// lines splits JSON lines (the CLI's output, an NDJSON answer).
func lines(b []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// elements are the elements of a JSON array answer, or of the array under
// key of an object answer, as the answer wrote them.
func elements(t *testing.T, b []byte, key string) [][]byte {
	t.Helper()
	var arr []json.RawMessage
	if key == "" {
		if err := json.Unmarshal(b, &arr); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
	} else {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if err := json.Unmarshal(obj[key], &arr); err != nil {
			t.Fatalf("decode %s of %s: %v", key, b, err)
		}
	}
	out := make([][]byte, len(arr))
	for i, e := range arr {
		out[i] = e
	}
	return out
}

// Every line `strata … -o json` prints is, byte for byte, the /api/v1
// element of the same answer: one record, page, report, RDD … in one
// form, from one encoder.
func TestCLILinesAreAPIElements(t *testing.T) {
	c := apiCollector(t)
	app, pmu, cover := url.PathEscape(storetest.App), "app-pmu", url.PathEscape(storetest.CoverageApp)
	jobs := storetest.Jobs()
	for _, tc := range []struct {
		name string
		cli  []string // after --collector ADDR -o json
		api  string   // /api/v1 path
		// how the API holds the elements: "lines" (NDJSON), "object"
		// (the answer is the one element), "" (an array) or a key of an
		// object holding an array
		form string
	}{
		{"records", []string{"records", "--app", storetest.App}, "/apps/" + app + "/records", "lines"},
		{"records of a block", []string{"records", "--app", pmu, "--block", "rdd_7_3", "--access", "read"},
			"/apps/" + pmu + "/records?block=rdd_7_3&access=read", "lines"},
		{"records with coverage", []string{"records", "--app", storetest.CoverageApp}, "/apps/" + cover + "/records", "lines"},
		{"trace", []string{"trace", "--app", pmu}, "/apps/" + pmu + "/trace", "lines"},
		{"trace of a partition", []string{"trace", "--app", pmu, "--rdd", "7", "--partition", "3", "--limit", "4"},
			"/apps/" + pmu + "/trace?rdd=7&partition=3&limit=4", "lines"},
		{"trace with coverage", []string{"trace", "--app", storetest.CoverageApp}, "/apps/" + cover + "/trace", "lines"},
		{"trace at a moment", []string{"trace", "--app", storetest.MomentApp, "--at", "+5s"},
			"/apps/" + url.PathEscape(storetest.MomentApp) + "/trace?at=%2B5s", "lines"},
		{"trace at the peak", []string{"trace", "--app", storetest.MomentApp, "--rdd", "1", "--at", "peak"},
			"/apps/" + url.PathEscape(storetest.MomentApp) + "/trace?rdd=1&at=peak", "lines"},
		{"report", []string{"report", "--app", storetest.App}, "/apps/" + app + "/report", "object"},
		{"report with page walks", []string{"report", "--app", pmu}, "/apps/" + pmu + "/report", "object"},
		{"report with coverage", []string{"report", "--app", storetest.CoverageApp}, "/apps/" + cover + "/report", "object"},
		{"numa", []string{"numa", "--app", pmu}, "/apps/" + pmu + "/numa", ""},
		{"heat", []string{"heat", "--app", storetest.App}, "/apps/" + app + "/heat", "object"},
		{"heat of an RDD, cold for 0s", []string{"heat", "--app", storetest.App, "--rdd", "8", "--cold-for", "0s"},
			"/apps/" + app + "/heat?rdd=8&cold_for=0s", "object"},
		{"heat of an app without samples", []string{"heat", "--app", pmu}, "/apps/" + pmu + "/heat", "object"},
		{"numa at a moment", []string{"numa", "--app", storetest.MomentApp, "--at", "+3s"},
			"/apps/" + url.PathEscape(storetest.MomentApp) + "/numa?at=%2B3s", ""},
		{"faults", []string{"faults", "--app", pmu}, "/apps/" + pmu + "/faults", ""},
		{"overhead", []string{"overhead", "--app", pmu}, "/apps/" + pmu + "/overhead", ""},
		{"hot", []string{"hot", "--app", storetest.App, "--limit", "20"}, "/apps/" + app + "/hot?limit=20", "pages"},
		{"jobs", []string{"jobs"}, "/jobs?limit=100", "jobs"},
		{"job", []string{"job", jobs[2].GetJobId()}, "/jobs/" + jobs[2].GetJobId(), "object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := lines([]byte(strata(t, append(append(tc.cli[:1:1], "--collector", c.Addr, "-o", "json"), tc.cli[1:]...)...)))
			body := apiGet(t, c, tc.api)
			var api [][]byte
			switch tc.form {
			case "lines":
				api = lines(body)
			case "object":
				api = [][]byte{bytes.TrimSuffix(body, []byte("\n"))}
			default:
				api = elements(t, body, tc.form)
			}
			if len(cli) == 0 {
				t.Fatalf("strata %s printed nothing", strings.Join(tc.cli, " "))
			}
			if len(cli) != len(api) {
				t.Fatalf("strata %s: %d lines, %s: %d elements\n%s\n%s", strings.Join(tc.cli, " "), len(cli), tc.api, len(api),
					bytes.Join(cli, []byte("\n")), body)
			}
			for i := range cli {
				if !bytes.Equal(cli[i], api[i]) {
					t.Errorf("line %d:\nstrata %s\n%s\n%s\n%s", i, strings.Join(tc.cli, " "), cli[i], tc.api, api[i])
				}
			}
		})
	}
}

// TestHeatCommand: `strata heat` prints each RDD's heat in the words the
// API and the report use, over the samples stored (storetest.WantHeat),
// and says so when an app has none.
func TestHeatCommand(t *testing.T) {
	c := apiCollector(t)
	out := strata(t, "heat", "--collector", c.Addr, "--app", storetest.App)
	want := storetest.WantHeat()
	if len(want.RDDs) == 0 {
		t.Fatal("the fixture has no heat")
	}
	for _, r := range want.RDDs {
		says := jsonform.HeatWords(r.Latest, want.ColdFor)
		if !strings.Contains(out, fmt.Sprintf("%d", r.RDD)) || !strings.Contains(out, says) {
			t.Errorf("strata heat: no line for RDD %d saying %q:\n%s", r.RDD, says, out)
		}
	}
	if out := strata(t, "heat", "--collector", c.Addr, "--app", "app-pmu"); strings.Count(out, "\n") != 1 {
		t.Errorf("strata heat of an app without samples printed rows:\n%s", out)
	}
}

// TestApps: `strata apps -o json` prints the elements of /api/v1/apps byte
// for byte, its table one line per application; the address may be
// HOST:PORT or a URL; an endpoint that refuses the connection is an
// error that says so.
func TestApps(t *testing.T) {
	c := apiCollector(t)
	api := elements(t, apiGet(t, c, "/apps"), "")
	if len(api) < 4 {
		t.Fatalf("the collector lists %d apps", len(api))
	}
	for _, addr := range []string{c.HTTPAddr, "http://" + c.HTTPAddr + "/"} {
		cli := lines([]byte(strata(t, "apps", "--http", addr, "-o", "json")))
		if len(cli) != len(api) {
			t.Fatalf("strata apps --http %s: %d lines, /api/v1/apps %d elements", addr, len(cli), len(api))
		}
		for i := range cli {
			if !bytes.Equal(cli[i], api[i]) {
				t.Errorf("line %d:\n%s\n%s", i, cli[i], api[i])
			}
		}
	}
	table := strings.Split(strings.TrimSpace(strata(t, "apps", "--http", c.HTTPAddr)), "\n")
	if len(table) != len(api)+1 || !strings.HasPrefix(table[0], "APP ") {
		t.Fatalf("table:\n%s", strings.Join(table, "\n"))
	}
	for _, app := range []string{storetest.App, storetest.CoverageApp, storetest.MomentApp, "app-pmu"} {
		if !strings.Contains(strings.Join(table, "\n"), app+" ") {
			t.Errorf("the table does not list %s", app)
		}
	}
	// NAME is the app's analysed job's (the report job's, finishing
	// last), "-" without one; LIVE BLOCKS its RDDs' live blocks, as the
	// report counts them.
	apps := jsonLines[jsonform.App](t, strata(t, "apps", "--http", c.HTTPAddr, "-o", "json"))
	for _, a := range apps {
		report := jsonLines[appReport](t, strata(t, "report", "--collector", c.Addr, "--app", a.AppID, "-o", "json"))[0]
		var live uint64
		for _, x := range report.RDDs {
			live += x.LiveBlocks
		}
		wantName := map[string]string{storetest.App: "LogisticRegression"}[a.AppID]
		if a.Name != wantName || a.LiveBlocks != live {
			t.Errorf("%s: name %q, live blocks %d; want %q and the report's %d", a.AppID, a.Name, a.LiveBlocks, wantName, live)
		}
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(a.AppID) + ` +` + regexp.QuoteMeta(orDash(a.Name)) + ` `)
		if !row.MatchString(strings.Join(table, "\n")) {
			t.Errorf("the table has no row %s:\n%s", row, strings.Join(table, "\n"))
		}
	}
	if !strings.Contains(table[0], " NAME ") || !strings.Contains(table[0], " LIVE BLOCKS ") {
		t.Errorf("table header %q: want NAME and LIVE BLOCKS", table[0])
	}
	bare := strings.Split(strings.TrimSpace(strata(t, "apps", "--http", c.HTTPAddr, "--no-headers")), "\n")
	if len(bare) != len(api) || strings.HasPrefix(bare[0], "APP ") {
		t.Errorf("apps --no-headers:\n%s", strings.Join(bare, "\n"))
	}
	if out, errOut, code := call("apps", "--http", "127.0.0.1:1"); code != 1 || out != "" || !strings.Contains(errOut, "connection refused") {
		t.Errorf("refused: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
