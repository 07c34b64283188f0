package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// dashboardMetrics returns the metric names the Grafana dashboard queries.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "grafana", "strata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			ID      int
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	name := regexp.MustCompile(`\b(?:strata|process|go)_[a-z0-9_]+\b`)
	seen, ids := map[string]bool{}, map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %d has no query", p.ID)
		}
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				seen[m] = true
			}
		}
	}
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	if len(out) < 20 {
		t.Fatalf("the dashboard queries only %d metrics: %v", len(out), out)
	}
	return out
}

// TestDashboardMetricsExported: every metric deploy/grafana/strata.json
// queries is in the /metrics of a real agent (fault attribution loaded)
// or of a real collector (history poller on), read with their tokens.
func TestDashboardMetricsExported(t *testing.T) {
	want := dashboardMetrics(t)
	testenv.RequireRoot(t)
	bin := bins(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	const token = "dashboard-token-0123456789"
	os.WriteFile(tokens, []byte(token+"\n"), 0o600)
	httpAddr := freePort(t)
	c, addr := startCollectorWith(t, bin, "--http", httpAddr, "--token-file", tokens, "--insecure",
		"--history", t.TempDir(), "--history-interval", "200ms")
	a := startAgent(t, bin, addr, "--faults", "on")
	scrape := func(url, tok string) string {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
		return string(b)
	}
	polled := regexp.MustCompile(`(?m)^strata_collector_history_polls_total\{result="ok"\} [1-9]`)
	waitFor(t, "a history poll", 30*time.Second, func() bool {
		return polled.MatchString(scrape("http://"+httpAddr+"/metrics", token))
	})
	exported := scrape("http://"+a.http+"/metrics", a.token) + scrape("http://"+httpAddr+"/metrics", token)
	have := map[string]bool{}
	for l := range strings.SplitSeq(exported, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			have[l[:i]] = true
		}
	}
	for _, m := range want {
		if !have[m] {
			t.Errorf("the dashboard queries %s, which neither the agent nor the collector exports", m)
		}
	}
	a.stop(t)
	c.stop(t)
}
