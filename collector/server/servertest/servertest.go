// Package servertest starts a real collector (server.Run over a loopback TCP
// socket, embedded store in a temporary directory) for other packages'
// tests, optionally seeded with data first. It runs with --insecure unless
// the configure hook sets credentials (and clears Insecure), so Dial needs
// none.
package servertest

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Collector is a running collector.
type Collector struct {
	Addr     string // host:port it listens on
	HTTPAddr string // host:port of its HTTP endpoint, when configured
	StoreDir string
	stop     context.CancelFunc
	done     chan error
}

// Start seeds a fresh store directory with batches and jobs (written
// through the store, then closed), starts server.Run on 127.0.0.1:0 and
// waits for its "listening" line. The collector stops at test cleanup, and
// the test fails if Run returned an error.
func Start(tb testing.TB, batches []*stratav1.Batch, jobs []*stratav1.JobResult) *Collector {
	tb.Helper()
	return StartWith(tb, batches, jobs, nil)
}

// StartWith is Start with a hook that adjusts the configuration (history
// sources, say, or the store directory of a collector stopped before)
// before the collector runs.
func StartWith(tb testing.TB, batches []*stratav1.Batch, jobs []*stratav1.JobResult, configure func(*server.Config), opts ...server.Option) *Collector {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	if len(batches)+len(jobs) > 0 {
		st, err := store.Open(ctx, store.Options{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		for _, b := range batches {
			if _, err := st.Append(ctx, b); err != nil {
				tb.Fatal(err)
			}
		}
		for _, j := range jobs {
			if err := st.PutJob(ctx, j); err != nil {
				tb.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	cfg := server.Defaults()
	cfg.Listen, cfg.StoreDir, cfg.MemoryLimit = "127.0.0.1:0", dir, "256MB"
	cfg.ShutdownGrace = server.Duration(2 * time.Second)
	cfg.Insecure = true
	if configure != nil {
		configure(&cfg)
	}
	c := &Collector{StoreDir: cfg.StoreDir, done: make(chan error, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	c.stop = cancel
	pr, pw := io.Pipe()
	go func() {
		err := server.Run(runCtx, cfg, slog.New(slog.DiscardHandler), pw, opts...)
		pw.CloseWithError(io.EOF)
		c.done <- err
	}()
	r := bufio.NewReader(pr)
	line, err := r.ReadString('\n')
	if err == nil && cfg.HTTP != "" {
		var h string
		if h, err = r.ReadString('\n'); err == nil {
			c.HTTPAddr = strings.TrimSpace(strings.TrimPrefix(h, "http "))
		}
	}
	if err != nil {
		cancel()
		tb.Fatalf("collector did not start: %v (%v)", err, <-c.done)
	}
	go io.Copy(io.Discard, r)
	c.Addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("collector run: %v", err)
		}
	})
	return c
}

// Stop ends Run (as SIGTERM would) and returns its error; later calls
// return nil.
func (c *Collector) Stop() error {
	c.stop()
	err, ok := <-c.done
	if ok {
		close(c.done)
	}
	return err
}

// Dial returns a client connection to the collector, closed at cleanup:
// plain TCP, or opts when given (credentials).
func (c *Collector) Dial(tb testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	cc, err := grpc.NewClient(c.Addr, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cc.Close() })
	return cc
}
