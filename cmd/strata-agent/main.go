// Command strata-agent is Strata's node agent: it takes block reports from
// JVM hooks on a Unix socket, resolves their pages and streams records to
// the collector, attributing page faults to blocks in the kernel where BPF
// allows. Run one per node, as root (see package agent).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/stratatrace/strata/agent"
)

func main() {
	cfg := agent.DefaultConfig()
	cfg.FromEnv()
	fs := flag.NewFlagSet("strata-agent", flag.ExitOnError)
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "node name carried by every batch")
	fs.StringVar(&cfg.HookSocket, "hook-socket", cfg.HookSocket, "Unix socket for JVM hooks")
	fs.StringVar(&cfg.Collector, "collector", cfg.Collector, "collector gRPC address")
	fs.StringVar(&cfg.SpoolDir, "spool-dir", cfg.SpoolDir, "directory for batches not yet acknowledged")
	fs.Int64Var(&cfg.SpoolMaxBytes, "spool-max-bytes", cfg.SpoolMaxBytes, "refuse new batches past this many spooled bytes (0 = 1 GiB)")
	fs.StringVar(&cfg.ProcRoot, "proc", cfg.ProcRoot, "procfs mount")
	fs.StringVar(&cfg.SysRoot, "sys", cfg.SysRoot, "sysfs mount")
	fs.StringVar(&cfg.HTTPAddr, "http", cfg.HTTPAddr, "address for /metrics and /healthz (empty: off)")
	fs.DurationVar(&cfg.FlushInterval, "flush-interval", cfg.FlushInterval, "cut a batch at least this often")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "on shutdown, wait this long for acks")
	fs.StringVar(&cfg.Faults, "faults", cfg.Faults, "kernel fault attribution: auto, on or off")
	fs.Func("sample-every", "emit one sampled fault event per N faults in a block (default 64)", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		cfg.SampleEvery = uint32(n)
		return err
	})
	fs.DurationVar(&cfg.CountersInterval, "counters-interval", cfg.CountersInterval, "send changed fault and workload counters this often")
	fs.DurationVar(&cfg.StatsInterval, "stats-interval", cfg.StatsInterval, "log counters this often (0: never)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Parse(os.Args[1:])

	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "strata-agent:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := agent.Run(ctx, cfg, log)
	stop()
	if err != nil {
		log.Error("agent failed", "err", err)
		os.Exit(1)
	}
}
