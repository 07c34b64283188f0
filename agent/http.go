package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/authn"
)

// serveHTTP serves /metrics (client role) and /healthz (any authenticated
// identity) on addr, over TLS when the HTTP certificate is set. Metrics
// hold counters and no page frame numbers, but they say which
// applications run on the node and how busy it is, so they take the same
// credentials as everything else.
func serveHTTP(cfg config.Config, reg *prometheus.Registry, log *slog.Logger) (*http.Server, error) {
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
