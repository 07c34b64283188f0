// Command strata-collector receives agents' batches, stores them and answers
// queries. See collector/server for the configuration and the shutdown order.
//
//	strata-collector [flags]         serve
//	strata-collector probe [flags]   ask the collector configured by the same
//	                                 flags and environment for its health (exit 0
//	                                 when SERVING): the container's health check
//	strata-collector --version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/web"
	"github.com/stratatrace/strata/cpupolicy"
)

func main() {
	args := os.Args[1:]
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Printf("strata-collector %s %s\n", server.Version, runtime.Version())
		return
	}
	probe := len(args) > 0 && args[0] == "probe"
	if probe {
		args = args[1:]
	}
	// -h prints the flags to stdout (exit 0); a bad flag's reason goes to
	// stderr.
	usageOut := io.Writer(os.Stderr)
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		usageOut = os.Stdout
	}
	cfg, err := server.Load(args, os.Getenv, usageOut)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-collector:", err)
		os.Exit(1)
	}
	if probe {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := server.Probe(ctx, cfg)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "strata-collector:", err)
			os.Exit(1)
		}
		return
	}
	level, _ := cfg.Level() // checked by Validate
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if err := server.Preflight(cfg); err != nil {
		log.Error("preflight failed", "error", err)
		os.Exit(1)
	}
	if err := cpupolicy.Set(false, cfg.Nice); err != nil {
		log.Warn("threads keep their priority", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = server.Run(ctx, cfg, log, os.Stdout, server.WithHTTPHandler("/", func(d server.HTTPDeps) (http.Handler, error) {
		return web.New(d.Store, d.Logger, web.WithQuery(d.Query))
	}))
	stop()
	if err != nil {
		log.Error("collector failed", "error", err)
		os.Exit(1)
	}
}
