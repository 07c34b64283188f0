package agent

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/authn"
)

// runAgent runs the agent (faults off, no collector) with tweak applied
// and returns its config once its HTTP endpoint accepts connections (it
// opens last).
func runAgent(t *testing.T, tweak func(*config.Config)) config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.NodeName, cfg.Collector, cfg.Faults = "node-h", "127.0.0.1:1", "off"
	cfg.Hook.Path, cfg.SpoolDir = filepath.Join(dir, "hook.sock"), filepath.Join(dir, "spool")
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
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("run: %v", err)
		default:
		}
		if c, err := net.Dial("tcp", cfg.HTTPAddr); err == nil {
			c.Close()
			return cfg
		} else if time.Now().After(deadline) {
			t.Fatalf("http endpoint: %v", err)
		}
	}
}

// The HTTP endpoint over TLS with tokens and client certificates: nothing
// without credentials, /metrics for a token or a client certificate,
// /healthz for the agent's own certificate. Every metric of the golden
// list is there as it was (those of a loaded fault tracer aside: faults
// are off), and passes Prometheus' lint.
func TestHTTPSecured(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The agent serves HTTP with the collector-role certificate of the
	// bundle (any certificate with server use will do) and presents its
	// agent certificate to the collector.
	cfg := runAgent(t, func(c *config.Config) {
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
	cfg := runAgent(t, func(c *config.Config) { c.HTTPTokenFile = b.TokenFile() })
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

// checkExported parses a scrape of an agent whose faults are off: its
// families are those of the golden list but the loaded tracer's, with the
// same types, help and series; the agent's own pass Prometheus' lint.
func checkExported(t *testing.T, text string) {
	t.Helper()
	families := parseScrape(t, text)
	got, want := exposition(families), readGolden(t)
	loadedOnly := func(line string) bool {
		return strings.HasPrefix(line, "strata_faults_") && !strings.HasPrefix(line, "strata_faults_available ")
	}
	compareLines(t, got, slices.DeleteFunc(want, loadedOnly))
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
