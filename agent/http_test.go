package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stratatrace/strata/authn"
)

// runAgent runs the agent (faults off, no collector) with tweak applied
// and returns its config once its HTTP endpoint answers the probe.
func runAgent(t *testing.T, tweak func(*Config)) Config {
	t.Helper()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.NodeName, cfg.Collector, cfg.Faults = "node-h", "127.0.0.1:1", "off"
	cfg.HookSocket, cfg.SpoolDir = filepath.Join(dir, "hook.sock"), filepath.Join(dir, "spool")
	cfg.DrainTimeout, cfg.StatsInterval = 10*time.Millisecond, 0
	cfg.HTTPAddr = freeAddr(t)
	tweak(&cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := Probe(context.Background(), cfg)
		if err == nil {
			return cfg
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The HTTP endpoint over TLS with tokens and client certificates: nothing
// without credentials, /metrics for a token or a client certificate,
// /healthz for the agent's own certificate, which Probe uses. Every
// metric an operator reads is there, with the type its name promises,
// and passes Prometheus' lint.
func TestHTTPSecured(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The agent serves HTTP with the collector-role certificate of the
	// bundle (any certificate with server use will do) and presents its
	// agent certificate to the collector and to its own probe.
	cfg := runAgent(t, func(c *Config) {
		srv, ag := b.Files(authn.RoleCollector), b.Files(authn.RoleAgent)
		c.HTTPTLSCert, c.HTTPTLSKey, c.HTTPClientCA = srv.Cert, srv.Key, b.CA()
		c.TLSCA, c.TLSCert, c.TLSKey = b.CA(), ag.Cert, ag.Key
	})
	client := func(role authn.Role) *http.Client {
		tc, err := b.ClientTLS(role)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	get := func(c *http.Client, path, token string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+cfg.HTTPAddr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// Without a token file, a client certificate is required at the
	// handshake: a client without one cannot connect at all.
	if code, body := get(client(""), "/metrics", ""); code != -1 {
		t.Errorf("no certificate: %d %q; want the handshake refused", code, body)
	}
	if code, _ := get(client(authn.RoleAgent), "/metrics", ""); code != 403 {
		t.Errorf("agent certificate on /metrics: %d, want 403", code)
	}
	if code, body := get(client(authn.RoleAgent), "/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("agent certificate on /healthz: %d %q", code, body)
	}
	code, text := get(client(authn.RoleClient), "/metrics", "")
	if code != 200 {
		t.Fatalf("client certificate on /metrics: %d %q", code, text)
	}
	checkExported(t, text)
}

// Tokens over plain HTTP: 401 without one, 200 with one.
func TestHTTPTokens(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runAgent(t, func(c *Config) { c.HTTPTokenFile = b.TokenFile() })
	tok, _ := os.ReadFile(b.TokenFile())
	for _, tc := range []struct {
		token string
		code  int
	}{{"", 401}, {strings.Repeat("0", 64), 401}, {strings.TrimSpace(string(tok)), 200}} {
		req, _ := http.NewRequest("GET", "http://"+cfg.HTTPAddr+"/metrics", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("token %q: %d, want %d", tc.token, resp.StatusCode, tc.code)
		}
	}
}

// checkExported parses a scrape and checks every series the agent
// promises, by name and type, and Prometheus' lint.
func checkExported(t *testing.T, text string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	want := map[string]string{
		"strata_faults_available":          "GAUGE",
		"strata_resolve_seconds":           "HISTOGRAM",
		"strata_resolve_pages":             "HISTOGRAM",
		"strata_build_info":                "GAUGE",
		"strata_http_denied_total":         "COUNTER",
		"process_resident_memory_bytes":    "GAUGE",
		"go_goroutines":                    "GAUGE",
		"strata_spool_oldest_age_seconds":  "GAUGE",
		"strata_hook_frames_refused_total": "COUNTER",
	}
	for _, s := range agentStats {
		typ := "GAUGE"
		if s.counter {
			typ = "COUNTER"
		}
		want[s.name] = typ
	}
	for name, typ := range want {
		f, ok := families[name]
		if !ok {
			t.Errorf("%s not exported", name)
			continue
		}
		if f.GetType().String() != typ {
			t.Errorf("%s is a %v, want %s", name, f.GetType(), typ)
		}
	}
	drops := map[string]bool{}
	for _, m := range families["strata_dropped_total"].GetMetric() {
		var stage, reason string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "stage":
				stage = l.GetValue()
			case "reason":
				reason = l.GetValue()
			}
		}
		drops[stage+"/"+reason] = true
	}
	for _, d := range []string{"kernel/ring_full", "agent/fault_events_behind", "kernel/block_not_mirrored", "hook/socket_full",
		"hook/range_length", "hook/foreign_pid", "agent/spool_full", "collector/refused_record"} {
		if !drops[d] {
			t.Errorf("strata_dropped_total{%s} not exported; have %v", d, drops)
		}
	}
	var all []*dto.MetricFamily
	for _, f := range families {
		all = append(all, f)
	}
	problems, err := promlint.NewWithMetricFamilies(all).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "strata_") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
}

// installHook copies both hook files and replaces older copies; a missing
// file is an error naming it.
func TestInstallHook(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "jvmhook")
	for _, f := range hookFiles {
		os.WriteFile(filepath.Join(src, f), []byte("v2 "+f), 0o600)
	}
	os.MkdirAll(dst, 0o755)
	os.WriteFile(filepath.Join(dst, hookFiles[0]), []byte("v1"), 0o644)
	if err := installHook(src, dst); err != nil {
		t.Fatal(err)
	}
	for _, f := range hookFiles {
		b, err := os.ReadFile(filepath.Join(dst, f))
		st, _ := os.Stat(filepath.Join(dst, f))
		if err != nil || string(b) != "v2 "+f || st.Mode().Perm() != 0o644 {
			t.Errorf("%s = %q (%v), mode %v", f, b, err, st.Mode())
		}
	}
	os.Remove(filepath.Join(src, hookFiles[1]))
	if err := installHook(src, dst); err == nil || !strings.Contains(err.Error(), hookFiles[1]) {
		t.Fatalf("missing source file: %v", err)
	}
}
