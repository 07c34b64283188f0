// Command strata-agent is Strata's node agent: it takes block reports from
// JVM hooks on a Unix socket, resolves their pages and streams records to
// the collector, attributing page faults to blocks in the kernel where BPF
// allows. Run one per node, as root (see package agent).
//
//	strata-agent [flags]         run
//	strata-agent probe [flags]   GET the /healthz of the agent configured by
//	                             the same flags and environment (exit 0 when
//	                             it answers ok): the container's health check
//	strata-agent --version
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/stratatrace/strata/agent"
)

func main() {
	args := os.Args[1:]
	probe := len(args) > 0 && args[0] == "probe"
	if probe {
		args = args[1:]
	}
	cfg := agent.DefaultConfig()
	if err := cfg.FromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "strata-agent:", err)
		os.Exit(2)
	}
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
	fs.StringVar(&cfg.WorkloadCounters, "workload-counters", cfg.WorkloadCounters,
		"hooked processes' task clock, switches and faults: procfs (no cost to them), perf (exact; every switch pays), or auto (perf where a PMU is)")
	fs.StringVar(&cfg.CPUPolicy, "cpu-policy", cfg.CPUPolicy,
		"scheduling of the agent's threads: batch (SCHED_BATCH: its fair share, without preempting the workload each time it wakes) or normal")
	fs.StringVar(&cfg.PageFlags, "page-flags", cfg.PageFlags, "pages that get kpageflags: all, or sampled (block pages without flags, several times faster)")
	fs.Func("sample-every", "emit one sampled fault event per N faults in a block (default 64)", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		cfg.SampleEvery = uint32(n)
		return err
	})
	fs.DurationVar(&cfg.CountersInterval, "counters-interval", cfg.CountersInterval, "send changed fault and workload counters, and hooked processes' resident memory (VmRSS, VmHWM), this often")
	fs.DurationVar(&cfg.StatsInterval, "stats-interval", cfg.StatsInterval, "log counters this often (0: never)")
	// Bounds (README "Reliability"); each also reads STRATA_<NAME> with
	// dashes as underscores, e.g. STRATA_HOOK_MAX_SESSIONS.
	fs.IntVar(&cfg.HookMaxSessions, "hook-max-sessions", cfg.HookMaxSessions, "open hook sessions on the node; more are closed at accept")
	fs.IntVar(&cfg.HookMaxSessionsPerUID, "hook-max-sessions-per-uid", cfg.HookMaxSessionsPerUID, "open hook sessions per peer uid")
	fs.IntVar(&cfg.HookMaxSessionsPerPID, "hook-max-sessions-per-pid", cfg.HookMaxSessionsPerPID, "open hook sessions per peer process")
	fs.DurationVar(&cfg.HookHelloTimeout, "hook-hello-timeout", cfg.HookHelloTimeout, "close a hook connection that sends no HELLO in this time")
	fs.DurationVar(&cfg.HookIdleTimeout, "hook-idle-timeout", cfg.HookIdleTimeout, "close a hook session without a frame for this long (hooks keep alive every 30s; <0: never)")
	fs.Uint64Var(&cfg.HookMaxRangeBytes, "hook-max-range-bytes", cfg.HookMaxRangeBytes, "longest range a REGISTER or MOVE may name; longer ones are dropped")
	fs.IntVar(&cfg.HookMaxBlocksPerSession, "hook-max-blocks-per-session", cfg.HookMaxBlocksPerSession, "live blocks of one hook session; a session past it is closed")
	fs.IntVar(&cfg.HookMaxBlocksPerUID, "hook-max-blocks-per-uid", cfg.HookMaxBlocksPerUID, "live blocks of one peer uid; REGISTERs past it are dropped")
	fs.IntVar(&cfg.MaxLiveBlocks, "max-live-blocks", cfg.MaxLiveBlocks, "live blocks on the node; REGISTERs past it are dropped")
	fs.IntVar(&cfg.ResolveSlicePages, "resolve-slice-pages", cfg.ResolveSlicePages, "resolve ranges in slices of this many pages, taking turns between peers")
	fs.Int64Var(&cfg.PageCacheBytes, "page-cache-bytes", cfg.PageCacheBytes, "memory for pages kept for reuse by accesses, over all blocks")
	fs.Func("kernel-max-blocks", fmt.Sprintf("blocks the kernel fault tracer counts at once (default %d)", cfg.KernelMaxBlocks), func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		cfg.KernelMaxBlocks = uint32(n)
		return err
	})
	// Security and observability (agent.Ops); each also reads its
	// STRATA_ variable, e.g. STRATA_TLS_CERT.
	fs.StringVar(&cfg.TLSCA, "tls-ca", cfg.TLSCA, "PEM CA that signed the collector's certificate (empty with --tls-cert: the system roots)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", cfg.TLSCert, "PEM client certificate (OU agent) presented to the collector")
	fs.StringVar(&cfg.TLSKey, "tls-key", cfg.TLSKey, "PEM private key of --tls-cert")
	fs.StringVar(&cfg.TLSServerName, "tls-server-name", cfg.TLSServerName, "name the collector's certificate must carry (default: the host of --collector)")
	fs.StringVar(&cfg.HTTPTLSCert, "http-tls-cert", cfg.HTTPTLSCert, "PEM certificate to serve --http over TLS")
	fs.StringVar(&cfg.HTTPTLSKey, "http-tls-key", cfg.HTTPTLSKey, "PEM private key of --http-tls-cert")
	fs.StringVar(&cfg.HTTPClientCA, "http-client-ca", cfg.HTTPClientCA, "PEM CA verifying client certificates on --http")
	fs.StringVar(&cfg.HTTPTokenFile, "http-token-file", cfg.HTTPTokenFile, "bearer tokens accepted on --http, one per line")
	fs.BoolVar(&cfg.HTTPInsecure, "http-insecure", cfg.HTTPInsecure, "serve --http without authentication (development only)")
	fs.Func("hook-socket-mode", "hook socket file mode, octal (default 0666; 0660 with --hook-socket-group restricts who may report)", cfg.SetSocketMode)
	fs.StringVar(&cfg.HookSocketGroup, "hook-socket-group", cfg.HookSocketGroup, "group (name or gid) of the hook socket file")
	fs.StringVar(&cfg.HookInstallDir, "install-hook", cfg.HookInstallDir, "copy the JVM hook files into this directory at start (a host path executors mount)")
	fs.StringVar(&cfg.HookFilesDir, "hook-files", cfg.HookFilesDir, "directory holding the JVM hook files to install")
	fs.StringVar(&cfg.PyroscopeServer, "pyroscope-server", cfg.PyroscopeServer, "Pyroscope server URL for continuous profiling (empty: off)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.IntVar(&cfg.LogBurst, "log-burst", cfg.LogBurst, "lines of one log message per --log-interval; the rest are counted")
	fs.DurationVar(&cfg.LogInterval, "log-interval", cfg.LogInterval, "window of --log-burst")
	defLevel := os.Getenv("STRATA_LOG_LEVEL")
	if defLevel == "" {
		defLevel = "info"
	}
	level := fs.String("log-level", defLevel, "debug, info, warn or error ($STRATA_LOG_LEVEL)")
	fs.Parse(args)
	if *version {
		fmt.Printf("strata-agent %s %s\n", agent.Version, runtime.Version())
		return
	}
	if probe {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := agent.Probe(ctx, cfg)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "strata-agent:", err)
			os.Exit(1)
		}
		return
	}

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
