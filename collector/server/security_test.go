package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func TestLoadSecurity(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
		says string
	}{
		{"tcp without credentials", nil, false, "--insecure"},
		{"insecure", []string{"--insecure"}, true, ""},
		{"tokens", []string{"--token-file", "/t"}, true, ""},
		{"mutual tls", []string{"--tls-cert", "/c", "--tls-key", "/k", "--tls-client-ca", "/ca"}, true, ""},
		{"cert without key", []string{"--tls-cert", "/c", "--token-file", "/t"}, false, "certificate and key"},
		{"client ca without cert", []string{"--tls-client-ca", "/ca"}, false, "needs --tls-cert"},
		{"tls without client auth", []string{"--tls-cert", "/c", "--tls-key", "/k"}, false, "without authentication"},
		{"unix socket", []string{"--listen", "unix:/run/c.sock"}, true, ""},
		{"unix socket with http", []string{"--listen", "unix:/run/c.sock", "--http", "127.0.0.1:9"}, false, "without authentication"},
		{"bad http", []string{"--insecure", "--http", "nowhere"}, false, "http address"},
	} {
		_, err := server.Load(tc.args, none, io.Discard)
		if tc.ok != (err == nil) || (err != nil && (!errors.Is(err, server.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says))) {
			t.Errorf("%s: %v; want ok=%v saying %q", tc.name, err, tc.ok, tc.says)
		}
	}
	file := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(file, []byte(`{"tls_cert": "/c", "tls_key": "/k", "tls_client_ca": "/ca", "http": "0.0.0.0:9090", "pyroscope_server": "http://p:4040"}`), 0o600)
	env := map[string]string{"STRATA_COLLECTOR_TOKEN_FILE": "/env-tokens"}
	c, err := server.Load([]string{"--config", file}, func(k string) string { return env[k] }, io.Discard)
	want := server.Ops{TLSCert: "/c", TLSKey: "/k", TLSClientCA: "/ca", TokenFile: "/env-tokens", HTTP: "0.0.0.0:9090", PyroscopeServer: "http://p:4040"}
	if err != nil || c.Ops != want {
		t.Fatalf("ops from file and env = %+v, %v; want %+v", c.Ops, err, want)
	}
}

// secured starts a collector serving TLS with the bundle's collector
// certificate, verifying client certificates against its CA, taking the
// bundle's token when tokens is set, with its HTTP endpoint on.
func secured(t *testing.T, b authn.Bundle, tokens bool, opts ...server.Option) *servertest.Collector {
	t.Helper()
	return servertest.StartWith(t, nil, nil, func(c *server.Config) {
		f := b.Files(authn.RoleCollector)
		c.Insecure, c.TLSCert, c.TLSKey, c.TLSClientCA, c.HTTP = false, f.Cert, f.Key, f.CA, "127.0.0.1:0"
		if tokens {
			c.TokenFile = b.TokenFile()
		}
	}, opts...)
}

// tlsCreds dials with the bundle's CA and, unless role is empty, that
// role's certificate from bundle from.
func tlsCreds(t *testing.T, b, from authn.Bundle, role authn.Role) grpc.DialOption {
	t.Helper()
	cfg, err := from.ClientTLS(role)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := b.ClientTLS(authn.RoleAny)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RootCAs = ca.RootCAs // trust b's collector whoever signed the client's certificate
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg))
}

func token(t *testing.T, b authn.Bundle) string {
	t.Helper()
	data, err := os.ReadFile(b.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// callAll pushes one batch, runs one query and asks for health, returning
// the three status codes.
func callAll(t *testing.T, cc *grpc.ClientConn, seq uint64) (push, query, health codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := stratav1.NewIngestServiceClient(cc).Push(ctx)
	if err == nil {
		err = stream.Send(storetest.Sample(seq))
		if err == nil || errors.Is(err, io.EOF) { // the status comes with Recv
			_, err = stream.Recv()
		}
	}
	push = status.Code(err)
	tr, err := stratav1.NewQueryServiceClient(cc).Trace(ctx, &stratav1.TraceRequest{AppId: "app"})
	if err == nil {
		_, err = tr.Recv()
	}
	// The query ran when it ended cleanly (no pages) or found no such app.
	ran := errors.Is(err, io.EOF) || status.Code(err) == codes.NotFound
	if _, err2 := stratav1.NewQueryServiceClient(cc).Jobs(ctx, &stratav1.JobsRequest{}); status.Code(err2) != status.Code(err) && !ran {
		t.Fatalf("a stream and a unary query disagree: %v, %v", err, err2)
	}
	if ran {
		err = nil
	}
	query = status.Code(err)
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	health = status.Code(err)
	return push, query, health
}

// Mutual TLS without tokens: a certificate is required at the handshake,
// and each role reaches what it may.
func TestMutualTLS(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := secured(t, b, false)
	type codes3 [3]codes.Code
	for i, tc := range []struct {
		name string
		dial grpc.DialOption
		want codes3
	}{
		{"agent certificate", tlsCreds(t, b, b, authn.RoleAgent), codes3{codes.OK, codes.PermissionDenied, codes.OK}},
		{"client certificate", tlsCreds(t, b, b, authn.RoleClient), codes3{codes.PermissionDenied, codes.OK, codes.OK}},
		{"collector certificate", tlsCreds(t, b, b, authn.RoleCollector), codes3{codes.PermissionDenied, codes.PermissionDenied, codes.OK}},
		{"no certificate", tlsCreds(t, b, b, ""), codes3{codes.Unavailable, codes.Unavailable, codes.Unavailable}},
		{"another CA's agent certificate", tlsCreds(t, b, other, authn.RoleAgent), codes3{codes.Unavailable, codes.Unavailable, codes.Unavailable}},
		{"plain TCP", grpc.WithTransportCredentials(insecure.NewCredentials()), codes3{codes.Unavailable, codes.Unavailable, codes.Unavailable}},
	} {
		p, q, h := callAll(t, c.Dial(t, tc.dial), uint64(i+1))
		if got := (codes3{p, q, h}); got != tc.want {
			t.Errorf("%s: push, query, health = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// With a token file too, a client may come with a token instead of a
// certificate; a wrong token or none is Unauthenticated.
func TestTokens(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := secured(t, b, true)
	tls := tlsCreds(t, b, b, "")
	type codes3 [3]codes.Code
	for i, tc := range []struct {
		name string
		opts []grpc.DialOption
		want codes3
	}{
		{"token", []grpc.DialOption{tls, grpc.WithPerRPCCredentials(authn.BearerToken{Token: token(t, b)})},
			codes3{codes.PermissionDenied, codes.OK, codes.OK}},
		{"wrong token", []grpc.DialOption{tls, grpc.WithPerRPCCredentials(authn.BearerToken{Token: strings.Repeat("f", 64)})},
			codes3{codes.Unauthenticated, codes.Unauthenticated, codes.Unauthenticated}},
		{"nothing", []grpc.DialOption{tls}, codes3{codes.Unauthenticated, codes.Unauthenticated, codes.Unauthenticated}},
		{"agent certificate", []grpc.DialOption{tlsCreds(t, b, b, authn.RoleAgent)}, codes3{codes.OK, codes.PermissionDenied, codes.OK}},
	} {
		p, q, h := callAll(t, c.Dial(t, tc.opts...), uint64(i+1))
		if got := (codes3{p, q, h}); got != tc.want {
			t.Errorf("%s: push, query, health = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// The HTTP endpoint: /healthz and /metrics and a mounted handler refuse
// anonymous requests; a token reads them; an agent certificate reaches
// /healthz only; refusals are counted; a mount on /metrics is refused.
func TestHTTPEndpoint(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ui := server.WithHTTPHandler("/ui/", func(d server.HTTPDeps) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, err := d.Query.Jobs(r.Context(), &stratav1.JobsRequest{})
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			id, _ := authn.IdentityFrom(r.Context())
			io.WriteString(w, "jobs "+string(rune('0'+len(res.GetJobs())))+" for "+id.Name)
		}), nil
	})
	c := secured(t, b, true, ui)
	client := func(role authn.Role) *http.Client {
		cfg, err := b.ClientTLS(role)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	get := func(c2 *http.Client, path, tok string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+c.HTTPAddr+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c2.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	tok := token(t, b)
	for _, tc := range []struct {
		path, tok string
		role      authn.Role
		code      int
		body      string
	}{
		{"/healthz", "", "", 401, "unauthorized"},
		{"/metrics", "", "", 401, "unauthorized"},
		{"/ui/", "", "", 401, "unauthorized"},
		{"/healthz", tok, "", 200, "ok"},
		{"/ui/", tok, "", 200, "jobs 0 for token #1"},
		{"/healthz", "", authn.RoleAgent, 200, "ok"},
		{"/metrics", "", authn.RoleAgent, 403, "forbidden"},
		{"/ui/", "", authn.RoleClient, 200, "jobs 0 for strata-client"},
		{"/metrics", tok, "", 200, `strata_collector_auth_denied_total{endpoint="http",reason="forbidden"} 1`},
	} {
		code, body := get(client(tc.role), tc.path, tc.tok)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s (token %v, cert %q) = %d %.200q; want %d with %q", tc.path, tc.tok != "", tc.role, code, body, tc.code, tc.body)
		}
	}
	_, body := get(client(""), "/metrics", tok)
	if !strings.Contains(body, `strata_collector_auth_denied_total{endpoint="http",reason="unauthenticated"} 3`) {
		t.Errorf("unauthenticated HTTP refusals not counted 3 times:\n%s", grepLines(body, "auth_denied"))
	}
	bad := server.WithHTTPHandler("/metrics", func(server.HTTPDeps) (http.Handler, error) { return http.NotFoundHandler(), nil })
	cfg := server.Defaults()
	cfg.Insecure, cfg.Listen, cfg.HTTP, cfg.StoreDir = true, "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	if err := server.Run(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard, bad); err == nil || !strings.Contains(err.Error(), "/metrics") {
		t.Fatalf("mount on /metrics: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Probe, the container's health check, reaches a secured collector with
// the collector's own certificate or token, and fails against a collector
// presenting another certificate.
func TestProbe(t *testing.T) {
	b, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tokens := range []bool{false, true} {
		c := secured(t, b, tokens)
		f := b.Files(authn.RoleCollector)
		cfg := server.Defaults()
		cfg.Listen, cfg.TLSCert, cfg.TLSKey = c.Addr, f.Cert, f.Key
		if tokens {
			cfg.TokenFile = b.TokenFile()
		} else {
			cfg.TLSClientCA = f.CA
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := server.Probe(ctx, cfg); err != nil {
			t.Errorf("probe (tokens %v): %v", tokens, err)
		}
		other, err := authn.WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		of := other.Files(authn.RoleCollector)
		cfg.TLSCert, cfg.TLSKey = of.Cert, of.Key
		if err := server.Probe(ctx, cfg); err == nil {
			t.Errorf("probe with another collector's certificate succeeded (tokens %v)", tokens)
		}
		cancel()
	}
	plain := servertest.Start(t, nil, nil)
	cfg := server.Defaults()
	cfg.Listen = strings.Replace(plain.Addr, "127.0.0.1", "0.0.0.0", 1)
	if err := server.Probe(context.Background(), cfg); err != nil {
		t.Errorf("probe of an insecure collector on 0.0.0.0: %v", err)
	}
}
