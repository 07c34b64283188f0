package agent

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/test/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden from this run's scrape")

// golden lists what /metrics exposed before each package exported its own
// collector (generated once from the central table's agent, faults
// loaded): users' dashboards and deploy/grafana read these names.
const golden = "testdata/metrics.golden"

// TestMetricsUnchanged: an agent with its fault tracer loaded exposes
// exactly the golden list: every strata_ family with its type, help text
// and series, and the process and Go series the dashboards read.
func TestMetricsUnchanged(t *testing.T) {
	testenv.RequireRoot(t)
	cfg := runAgent(t, func(c *config.Config) { c.Faults, c.HTTPInsecure = "on", true })
	resp, err := http.Get("http://" + cfg.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := exposition(parseScrape(t, string(text)))
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	compareLines(t, got, readGolden(t))
}

func parseScrape(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return families
}

// dashboardRuntime are the families of client_golang's process and Go
// collectors that the dashboards and docs/agent.md read.
var dashboardRuntime = []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines"}

// exposition describes a scrape as the golden file does, sorted: for
// each family a line "name TYPE help" and, for each series with labels,
// a line "name{label=value,...}". strata_build_info's version labels are
// shown as *, since they change with every build.
func exposition(families map[string]*dto.MetricFamily) []string {
	var out []string
	for name, f := range families {
		if !strings.HasPrefix(name, "strata_") && !slices.Contains(dashboardRuntime, name) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s", name, f.GetType(), f.GetHelp()))
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if name == "strata_build_info" && l.GetName() != "component" {
					v = "*"
				}
				labels = append(labels, l.GetName()+"="+v)
			}
			sort.Strings(labels)
			out = append(out, name+"{"+strings.Join(labels, ",")+"}")
		}
	}
	sort.Strings(out)
	return out
}

func readGolden(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// compareLines reports every line of want missing from got and every line
// of got that want does not have.
func compareLines(t *testing.T, got, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing from /metrics: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("not in %s: %s", golden, g)
		}
	}
}
