// Command strata-collector receives agents' batches, stores them and answers
// queries. See collector/server for the configuration and the shutdown order.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/web"
)

func main() {
	cfg, err := server.Load(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-collector:", err)
		os.Exit(1)
	}
	level, _ := cfg.Level() // checked by Validate
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := server.Preflight(cfg); err != nil {
		log.Error("preflight failed", "error", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = server.Run(ctx, cfg, log, os.Stdout, server.WithHTTPHandler("/", func(d server.HTTPDeps) (http.Handler, error) {
		return web.New(d.Store, d.Logger)
	}))
	stop()
	if err != nil {
		log.Error("collector failed", "error", err)
		os.Exit(1)
	}
}
