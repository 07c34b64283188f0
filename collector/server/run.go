package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/ingest"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
)

// Preflight checks what Run needs before anything starts: the embedded
// store's directory can be created and written, and the listen address is
// usable. (The ClickHouse store is checked when Run opens it.)
func Preflight(c Config) error {
	if c.Store == StoreDuckDB {
		if err := os.MkdirAll(c.StoreDir, 0o750); err != nil {
			return fmt.Errorf("preflight: create store dir: %w", err)
		}
		f, err := os.CreateTemp(c.StoreDir, ".preflight-*")
		if err != nil {
			return fmt.Errorf("preflight: write store dir: %w", err)
		}
		f.Close()
		os.Remove(f.Name())
	}
	if path, ok := strings.CutPrefix(c.Listen, "unix:"); ok {
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			return fmt.Errorf("preflight: unix socket dir: %w", err)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("preflight: listen address: %w", err)
	}
	return nil
}

// listen opens host:port over TCP or unix:PATH, removing a stale socket
// file left by an earlier run (never any other kind of file).
func listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if st, err := os.Lstat(path); err == nil && st.Mode().Type() == fs.ModeSocket {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The socket file's mode is its authentication (package authn): only
	// the collector's user and root may connect.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, nil
}

// openStore opens the configured backend; the rest of Run sees only the
// store.Store interface (and, for the history poller, the ClickHouse
// store's job claims). Every write's outcome goes to onWrite (the health
// of the store).
func openStore(ctx context.Context, c Config, log *slog.Logger, onWrite func(error)) (store.Store, error) {
	if c.Store == StoreClickHouse {
		return store.OpenClickHouse(ctx, store.ClickHouseOptions{
			URL: c.ClickHouseURL, Database: c.ClickHouseDatabase, User: c.ClickHouseUser, Password: c.ClickHousePassword,
			Cluster: c.ClickHouseCluster, CreateSchema: c.ClickHouseCreateSchema,
			FlushInterval: time.Duration(c.ClickHouseFlushInterval), Owner: c.collectorID(),
			ClaimLease: time.Duration(c.HistoryClaimLease), Logger: log, OnWrite: onWrite,
		})
	}
	return store.Open(ctx, store.Options{Dir: c.StoreDir, MemoryLimit: c.MemoryLimit, Threads: c.Threads, Logger: log,
		OnWrite: onWrite})
}

// collectorID is CollectorID, or the host name with a random suffix.
func (c Config) collectorID() string {
	if c.CollectorID != "" {
		return c.CollectorID
	}
	host, err := os.Hostname()
	if err != nil {
		host = "collector"
	}
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", host, b)
}

// Run serves the collector until ctx ends or serving fails; the package
// doc gives the shutdown order. It prints "listening ADDR" to out when ready,
// then "http ADDR" when the HTTP endpoint is on.
func Run(ctx context.Context, c Config, log *slog.Logger, out io.Writer, opts ...Option) (err error) {
	if err := c.Validate(); err != nil {
		return err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	m := newMetrics()
	sec, err := newSecurity(c.Ops, log, m.authDenied)
	if err != nil {
		return err
	}
	prof, err := startProfiling(c, log)
	if err != nil {
		return err
	}
	defer prof.Stop()
	writes := newStoreHealth(log)
	st, err := openStore(ctx, c, log, func(err error) { writes.observe(err); m.storeWrite(err) })
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	// Built before serving: a bad heuristics file stops Run before it
	// listens.
	poll, err := jobHistoryPoller(c, st, st, claimsOf(st), log, m)
	if err != nil {
		return fmt.Errorf("job history poller: %w", err)
	}
	lis, err := listen(c.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", c.Listen, err)
	}
	in := ingest.New(m.appender(st), log)
	q := query.New(st, query.WithBounds(query.Bounds{MaxRows: uint32(c.QueryMaxRows)}))
	srv, health := newGRPCServer(log, sec, m, time.Duration(c.QueryTimeout), in, q)
	writes.attach(health)

	errc := make(chan error, 3)
	var httpLn net.Listener
	stopHTTP := func() {}
	if c.HTTP != "" {
		h, err := newHTTPHandler(sec, m, health, o.mounts, HTTPDeps{Query: q, Store: st, Logger: log, Metrics: m.reg}, time.Duration(c.QueryTimeout))
		if err != nil {
			lis.Close()
			return err
		}
		if httpLn, err = listenHTTP(c.HTTP, sec.tls); err != nil {
			lis.Close()
			return err
		}
		stopHTTP = serveHTTP(httpLn, h, log, errc)
	}
	go func() {
		if err := srv.Serve(lis); err != nil {
			errc <- fmt.Errorf("serve grpc: %w", err)
		}
	}()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	polled := make(chan struct{})
	if poll != nil {
		go func() {
			defer close(polled)
			if err := poll(pollCtx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("job history poller: %w", err)
			}
		}()
	} else {
		close(polled)
	}
	retained := make(chan struct{})
	go func() {
		defer close(retained)
		retain(pollCtx, st, c, log)
	}()
	log.Info("collector serving", "listen", lis.Addr().String(), "store", c.Store)
	fmt.Fprintf(out, "listening %s\n", lis.Addr())
	if httpLn != nil {
		log.Info("http serving", "addr", httpLn.Addr().String(), "tls", sec.tls != nil)
		fmt.Fprintf(out, "http %s\n", httpLn.Addr())
	}

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	health.Shutdown()
	in.Drain()
	stopPoll()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	grace := time.Duration(c.ShutdownGrace)
	select {
	case <-stopped:
		log.Info("collector stopped")
	case <-time.After(grace):
		srv.Stop()
		<-stopped
		log.Info("collector stopped; open streams cut after the grace period", "grace", grace)
	}
	stopHTTP() // after the drain, so probes saw NOT_SERVING meanwhile
	<-polled   // the poller's and retention's last store calls have returned; the store may close
	<-retained
	return err
}
