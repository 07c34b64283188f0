package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratatrace/strata/authn"
)

// serveHTTP serves /metrics (client role) and /healthz (any authenticated
// identity) on addr, over TLS when the HTTP certificate is set. Metrics
// hold counters and no page frame numbers, but they say which
// applications run on the node and how busy it is, so they take the same
// credentials as everything else.
func serveHTTP(cfg Config, reg *prometheus.Registry, log *slog.Logger) (*http.Server, error) {
	policy := &authn.Policy{Insecure: cfg.HTTPInsecure}
	if cfg.HTTPTokenFile != "" {
		toks, err := authn.LoadTokens(cfg.HTTPTokenFile)
		if err != nil {
			return nil, err
		}
		policy.Tokens = toks
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen http: %w", err)
	}
	if cfg.HTTPTLSCert != "" {
		files := authn.TLSFiles{CA: cfg.HTTPClientCA, Cert: cfg.HTTPTLSCert, Key: cfg.HTTPTLSKey}
		tcfg, err := files.ServerConfig(cfg.HTTPTokenFile == "")
		if err != nil {
			ln.Close()
			return nil, err
		}
		tcfg.NextProtos = []string{"http/1.1"}
		ln = tls.NewListener(ln, tcfg)
	}
	denied := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_http_denied_total",
		Help: "HTTP requests refused by authentication, by reason (unauthenticated, forbidden)."}, []string{"reason"})
	denied.WithLabelValues("unauthenticated")
	denied.WithLabelValues("forbidden")
	reg.MustRegister(denied)
	onDeny := func(_ *http.Request, err error) {
		if errors.Is(err, authn.ErrForbidden) || errors.Is(err, authn.ErrNoRole) {
			denied.WithLabelValues("forbidden").Inc()
			return
		}
		denied.WithLabelValues("unauthenticated").Inc()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", policy.HTTP(authn.RoleClient, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), onDeny))
	mux.Handle("/healthz", policy.HTTP(authn.RoleAny, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	}), onDeny))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelDebug)}
	go srv.Serve(ln)
	switch {
	case cfg.HTTPInsecure:
		log.Warn("http serving without authentication (--http-insecure)", "addr", ln.Addr().String())
	case cfg.HTTPTLSCert == "" && cfg.HTTPTokenFile != "":
		log.Warn("http bearer tokens over plain TCP: set --http-tls-cert and --http-tls-key", "addr", ln.Addr().String())
	}
	log.Info("http listening", "addr", ln.Addr().String(), "tls", cfg.HTTPTLSCert != "")
	return srv, nil
}

// Probe asks the agent configured by cfg, on this machine, for /healthz
// with the agent's own credentials: the first token of its HTTP token
// file, or its collector client certificate (role agent, which /healthz
// accepts) when the HTTP endpoint verifies certificates. Over TLS the
// endpoint must present the agent's own HTTP certificate. It is the
// container's health check (`strata-agent probe`).
func Probe(ctx context.Context, cfg Config) error {
	if cfg.HTTPAddr == "" {
		return errors.New("probe: no --http address to probe")
	}
	host, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme, tr := "http", &http.Transport{}
	if cfg.HTTPTLSCert != "" {
		scheme = "https"
		var cert, key string
		if cfg.HTTPClientCA != "" {
			cert, key = cfg.TLSCert, cfg.TLSKey
		}
		tcfg, err := authn.SelfTLS(cfg.HTTPTLSCert, cfg.HTTPTLSKey, cert, key)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		tr.TLSClientConfig = tcfg
	}
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if cfg.HTTPTokenFile != "" {
		toks, err := authn.LoadTokens(cfg.HTTPTokenFile)
		if err != nil {
			return err
		}
		tok, err := toks.First()
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
