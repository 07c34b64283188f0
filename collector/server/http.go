package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// HTTPDeps is what a handler mounted on the collector's HTTP endpoint may
// use.
type HTTPDeps struct {
	Query  stratav1.QueryServiceServer
	Store  store.Store
	Logger *slog.Logger
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
// net/http.ServeMux pattern such as "/") on the HTTP endpoint (--http).
// build runs once in Run, after the store is open and before the endpoint
// listens; its error stops Run. Without --http the handler is not built.
//
// The endpoint has no authentication of its own yet: bind it to loopback.
func WithHTTPHandler(pattern string, build func(HTTPDeps) (http.Handler, error)) Option {
	return func(o *options) { o.mounts = append(o.mounts, mount{pattern, build}) }
}

// newHTTPHandler builds the mux of the HTTP endpoint: /healthz and the
// mounts.
func newHTTPHandler(mounts []mount, deps HTTPDeps) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	for _, mt := range mounts {
		h, err := mt.build(deps)
		if err != nil {
			return nil, fmt.Errorf("mount http handler %s: %w", mt.pattern, err)
		}
		mux.Handle(mt.pattern, h)
	}
	return mux, nil
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
