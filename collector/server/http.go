package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
)

// HTTPDeps is what a handler mounted on the collector's HTTP endpoint may
// use. Its calls to Query run in-process: the request was authenticated
// at the HTTP edge. Query is the collector's service, with its bounds.
type HTTPDeps struct {
	Query   *query.Service
	Store   store.Store
	Logger  *slog.Logger
	Metrics prometheus.Registerer // served at /metrics
}

// Option changes how Run serves.
type Option func(*options)

type options struct {
	mounts []mount
}

type mount struct {
	pattern string
	build   func(HTTPDeps) (http.Handler, error)
}

// WithHTTPHandler mounts the handler that build returns at pattern (a
// net/http.ServeMux pattern such as "/ui/") on the HTTP endpoint
// (--http), behind the authentication that guards /metrics: a client
// certificate of role client, or a bearer token. build runs once in Run,
// after the store is open and before the endpoint listens; its error stops
// Run. Without --http the handler is not built.
func WithHTTPHandler(pattern string, build func(HTTPDeps) (http.Handler, error)) Option {
	return func(o *options) { o.mounts = append(o.mounts, mount{pattern, build}) }
}

// reservedPaths are the collector's own HTTP endpoints.
var reservedPaths = map[string]bool{"/metrics": true, "/healthz": true}

// newHTTPHandler builds the mux of the HTTP endpoint: /healthz (any
// authenticated identity; 200 while the collector serves, else 503),
// /metrics and the mounts (the client role).
func newHTTPHandler(sec *security, m *metrics, hs *health.Server, mounts []mount, deps HTTPDeps, queryTimeout time.Duration) (http.Handler, error) {
	mux := http.NewServeMux()
	denied := func(_ *http.Request, err error) { sec.denied("http", err) }
	mux.Handle("/healthz", sec.policy.HTTP(authn.RoleAny, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := hs.Check(r.Context(), &healthpb.HealthCheckRequest{})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			http.Error(w, "not serving", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}), denied))
	mux.Handle("/metrics", sec.policy.HTTP(authn.RoleClient, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}), denied))
	for _, mt := range mounts {
		if reservedPaths[mt.pattern] {
			return nil, fmt.Errorf("mount http handler: %s is the collector's own", mt.pattern)
		}
		h, err := mt.build(deps)
		if err != nil {
			return nil, fmt.Errorf("mount http handler %s: %w", mt.pattern, err)
		}
		mux.Handle(mt.pattern, sec.policy.HTTP(authn.RoleClient, withDeadline(h, queryTimeout), denied))
	}
	return mux, nil
}

// listenHTTP opens the HTTP endpoint, over TLS when the collector has a
// certificate.
func listenHTTP(addr string, tlsCfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen http %s: %w", addr, err)
	}
	if tlsCfg != nil {
		cfg := tlsCfg.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		ln = tls.NewListener(ln, cfg)
	}
	return ln, nil
}

// serveHTTP serves h on ln until shutdown is called.
func serveHTTP(ln net.Listener, h http.Handler, log *slog.Logger, errc chan<- error) (shutdown func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelDebug)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve http: %w", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
}
