// Command strata-agent is Strata's node agent: it takes block reports from
// JVM hooks on a Unix socket, resolves their pages and streams records to
// the collector, attributing page faults to blocks in the kernel where BPF
// allows. Run one per node, as root (see package agent).
//
//	strata-agent [flags]         run
//	strata-agent probe [flags]   GET the /healthz of the agent configured by
//	                             the same flags, environment and file (exit
//	                             0 when it answers ok): the container's
//	                             health check
//	strata-agent --version
//
// Every flag but --version has a STRATA_ variable and a config file key
// (package agent/config).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/stratatrace/strata/agent"
	"github.com/stratatrace/strata/agent/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command, with its arguments and environment; it returns the
// exit code: 0, 1 when the agent or the probe failed, 2 for a bad
// command line or configuration.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	isProbe := len(args) > 0 && args[0] == "probe"
	if isProbe {
		args = args[1:]
	}
	fs := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print the version and exit")
	cfg, err := config.Load(fs, args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "strata-agent:", err)
		return 2
	}
	if *version {
		fmt.Fprintf(stdout, "strata-agent %s %s\n", agent.Version, runtime.Version())
		return 0
	}
	if isProbe {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := probe(pctx, cfg); err != nil {
			fmt.Fprintln(stderr, "strata-agent:", err)
			return 1
		}
		return 0
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "strata-agent:", err)
		return 2
	}
	var lv slog.Level
	lv.UnmarshalText([]byte(cfg.LogLevel)) // checked by Validate
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	if err := preflight(cfg, log); err != nil {
		log.Error("agent failed", "err", err)
		return 1
	}
	if err := agent.Run(ctx, cfg, log); err != nil {
		log.Error("agent failed", "err", err)
		return 1
	}
	return 0
}
