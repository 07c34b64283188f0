package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/ratelog"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/spool"
	"github.com/stratatrace/strata/agent/streamer"
	"github.com/stratatrace/strata/profiling"
	"golang.org/x/sys/unix"
)

// Run runs the agent until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// One limit for every per-event warning: a flood of one message (a
	// hostile peer's refused sessions, a full kernel block table) logs a
	// few lines per interval and counts the rest.
	limited := ratelog.New(log.Handler(), ratelog.Options{Burst: cfg.LogBurst, Interval: cfg.LogInterval})
	log = slog.New(limited).With("node", cfg.NodeName)
	warnFDs(cfg, log)
	if err := setCPUPolicy(cfg.CPUPolicy); err != nil {
		// Only what the agent costs the node changes: not a reason to stop.
		log.Warn("threads keep their scheduling policy", "err", err)
	}
	fs := procmem.FS{Proc: cfg.ProcRoot, Sys: cfg.SysRoot}
	bootID, err := fs.BootID()
	if err != nil {
		return err
	}
	node := nodeInfo(fs, log)

	res, err := resolver.NewPool(fs, runtime.GOMAXPROCS(0), resolver.Options{NoFlags: cfg.PageFlags == "sampled"}, log.With("component", "resolver"),
		resolver.WithSlicePages(cfg.ResolveSlicePages))
	if err != nil {
		return err
	}
	defer res.Close()
	if os.Geteuid() != 0 {
		log.Warn("not running as root: PFNs and kpageflags need CAP_SYS_ADMIN; pages will say pfn_hidden")
	}

	sp, err := spool.Open(cfg.SpoolDir, spool.Options{MaxBytes: cfg.SpoolMaxBytes, Logger: log})
	if err != nil {
		return fmt.Errorf("open spool: %w", err)
	}
	defer sp.Close()
	if st := sp.Stats(); st.Pending > 0 {
		log.Info("spool holds batches from an earlier run; they will be sent first", "batches", st.Pending, "bytes", st.PendingBytes)
	}

	dial, err := collectorCredentials(cfg)
	if err != nil {
		return err
	}
	st, err := streamer.New(sp, streamer.Config{Target: cfg.Collector, Logger: log, DialOptions: dial})
	if err != nil {
		return err
	}
	prof, err := profiling.Start(profiling.Config{Server: cfg.PyroscopeServer, App: "strata-agent",
		Tags: map[string]string{"node": cfg.NodeName}, Logger: log})
	if err != nil {
		return err
	}
	defer prof.Stop()
	if cfg.HookInstallDir != "" {
		if err := installHook(cfg.HookFilesDir, cfg.HookInstallDir); err != nil {
			return err
		}
		log.Info("JVM hook files installed", "dir", cfg.HookInstallDir)
	}

	kern, err := openFaults(cfg, fs, log)
	if err != nil {
		return err
	}
	defer kern.Close()

	timed := newTimedResolver(res, uint64(procmem.PageSize()))
	ann := annotator.New(timed, sp, annotator.Config{
		NodeName:      cfg.NodeName,
		BootID:        bootID,
		Node:          node,
		PageSize:      uint32(procmem.PageSize()),
		FlushInterval: cfg.FlushInterval,
		MaxCacheBytes: cfg.PageCacheBytes,
		Kernel:        kern.Kernel(),
		Logger:        log,
	})

	hcfg := cfg.hookConfig()
	hcfg.FS = fs
	hs, err := hooksrv.Listen(hcfg, ann, log)
	if err != nil {
		return err
	}
	log.Info("agent started", "hook_socket", hs.Path(), "collector", cfg.Collector, "spool", cfg.SpoolDir, "boot_id", bootID,
		"numa_nodes", node.GetNumaNodes(), "mem_total_bytes", node.GetMemTotalBytes(), "faults", kern.Status(), "damon", damonStatus(fs))

	m := &parts{hook: hs, ann: ann, sp: sp, st: st, kern: kern, log: limited}
	var httpSrv *http.Server
	if cfg.HTTPAddr != "" {
		if httpSrv, err = serveHTTP(cfg, newRegistry(m, timed), log); err != nil {
			hs.Close()
			return err
		}
	}

	// Shutdown order: stop taking hook frames (every session's FREE records
	// are then in the annotator), let the fault side send its last
	// counters, flush the annotator into the spool, and give the streamer
	// DrainTimeout to get it acknowledged.
	streamCtx, stopStream := context.WithCancel(context.Background())
	streamDone := make(chan struct{})
	go func() { defer close(streamDone); st.Run(streamCtx) }()
	faultCtx, stopFaults := context.WithCancel(context.Background())
	faultDone := make(chan struct{})
	go func() { defer close(faultDone); kern.Run(faultCtx, ann) }()
	annCtx, stopAnn := context.WithCancel(context.Background())
	annDone := make(chan struct{})
	go func() { defer close(annDone); ann.Run(annCtx) }()
	if cfg.StatsInterval > 0 {
		go m.logEvery(ctx, cfg.StatsInterval, log)
	}
	go sampleMemory(ctx, fs, ann, cfg.CountersInterval, log)

	serveErr := hs.Serve(ctx)
	stopFaults()
	<-faultDone
	stopAnn()
	<-annDone // Run flushes once more as it returns
	deadline := time.Now().Add(cfg.DrainTimeout)
	for sp.Stats().Pending > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := sp.Stats().Pending; n > 0 {
		log.Warn("collector did not acknowledge everything before shutdown; kept in the spool for the next start", "batches", n)
	}
	stopStream()
	<-streamDone
	if httpSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		httpSrv.Shutdown(sctx)
		cancel()
	}
	log.Info("agent stopped", "stats", m.line())
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		return serveErr
	}
	return nil
}

// warnFDs says when the hook session cap leaves too few file descriptors
// for the spool, the collector stream and /proc reads.
func warnFDs(cfg Config, log *slog.Logger) {
	const reserve = 256
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < uint64(cfg.HookMaxSessions)+reserve {
		log.Warn("open file limit is close to the hook session cap; lower --hook-max-sessions or raise RLIMIT_NOFILE",
			"nofile", lim.Cur, "hook_max_sessions", cfg.HookMaxSessions, "reserve", reserve)
	}
}

// line is the counters' summary the agent logs every --stats-interval.
func (m *parts) line() string {
	h, a, s, t := m.hook.Stats(), m.ann.Stats(), m.sp.Stats(), m.st.Stats()
	return fmt.Sprintf("sessions=%d frames=%d rejected=%d malformed=%d %s spool_pending=%d sent=%d acked=%d reconnects=%d",
		h.Sessions, h.Frames, h.Rejected, h.Malformed, a, s.Pending, t.Sent, t.Acked, t.Reconnects)
}

func (m *parts) logEvery(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			log.Info("agent stats", "stats", m.line())
		}
	}
}
