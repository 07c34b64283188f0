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
	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/agent/damon"
	"github.com/stratatrace/strata/agent/faults"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/ratelog"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/spool"
	"github.com/stratatrace/strata/agent/streamer"
	"github.com/stratatrace/strata/profiling"
)

// Run runs the agent until ctx ends.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// One limit for every per-event warning: a flood of one message logs a
	// few lines per interval and counts the rest.
	limited := ratelog.New(log.Handler(), ratelog.Options{Burst: cfg.LogBurst, Interval: cfg.LogInterval})
	log = slog.New(limited).With("node", cfg.NodeName)
	go limited.Run(ctx) // a flood that stops says how many lines it held back
	fs := procmem.FS{Proc: cfg.ProcRoot, Sys: cfg.SysRoot}
	bootID, err := fs.BootID()
	if err != nil {
		return err
	}
	node := nodeInfo(fs, log)

	pool, err := resolver.NewPool(fs, runtime.GOMAXPROCS(0), resolver.Options{NoFlags: cfg.PageFlags == "sampled"}, log.With("component", "resolver"),
		resolver.WithSlicePages(cfg.ResolveSlicePages), resolver.WithUIDBudget(cfg.ResolveUIDBudget))
	if err != nil {
		return err
	}
	res := resolver.NewTimed(pool)
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

	kern, err := openFaults(cfg, fs, log)
	if err != nil {
		return err
	}
	defer kern.Close()
	ann := annotator.New(res, sp, annotator.Config{NodeName: cfg.NodeName, BootID: bootID, Node: node, PageSize: uint32(procmem.PageSize()),
		FlushInterval: cfg.FlushInterval, MaxCacheBytes: cfg.PageCacheBytes, Kernel: kern.Kernel(), Logger: log})
	heat, err := openHeat(cfg, log)
	if err != nil {
		return err
	}
	defer heat.Close()

	hcfg := cfg.Hook
	hcfg.GID, _ = cfg.SocketGroup() // checked by Validate
	hcfg.GID, hcfg.FS = max(hcfg.GID, 0), fs
	hs, err := hooksrv.Listen(hcfg, ann, log)
	if err != nil {
		return err
	}
	log.Info("agent started", "hook_socket", hs.Path(), "collector", cfg.Collector, "spool", cfg.SpoolDir, "boot_id", bootID,
		"numa_nodes", node.GetNumaNodes(), "mem_total_bytes", node.GetMemTotalBytes(), "faults", kern.Status(), "damon", heat.Status())

	var httpSrv *http.Server
	if cfg.HTTPAddr != "" {
		reg := newRegistry(limited, hooksrv.NewCollector(hs), annotator.NewCollector(ann), spool.NewCollector(sp),
			streamer.NewCollector(st), faults.NewCollector(kern), damon.NewCollector(heat), res)
		if httpSrv, err = serveHTTP(cfg, reg, log); err != nil {
			hs.Close()
			return err
		}
	}

	// Shutdown order: stop taking hook frames (every session's FREE records
	// are then in the annotator), let the fault side send its last
	// counters and the heat sampler its last samples, flush the annotator
	// into the spool, and give the streamer DrainTimeout to get it
	// acknowledged; the agent's own kdamond, if any, is removed last.
	stopStream, streamDone := start(func(ctx context.Context) { st.Run(ctx) })
	stopFaults, faultDone := start(func(ctx context.Context) { kern.Run(ctx, ann) })
	stopAnn, annDone := start(func(ctx context.Context) { ann.Run(ctx) })
	stopHeat, heatDone := start(func(ctx context.Context) { heat.Run(ctx, liveBlocks(ann), ann) })
	line := func() string {
		h, a, s, t := hs.Stats(), ann.Stats(), sp.Stats(), st.Stats()
		return fmt.Sprintf("sessions=%d frames=%d rejected=%d malformed=%d %s spool_pending=%d sent=%d acked=%d reconnects=%d",
			h.Sessions, h.Frames, h.Rejected, h.Malformed, a, s.Pending, t.Sent, t.Acked, t.Reconnects)
	}
	if cfg.StatsInterval > 0 {
		go every(ctx, cfg.StatsInterval, func() { log.Info("agent stats", "stats", line()) })
	}
	go sampleMemory(ctx, fs, ann, cfg.CountersInterval, log)

	serveErr := hs.Serve(ctx)
	stopFaults()
	<-faultDone
	stopHeat()
	<-heatDone
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
	log.Info("agent stopped", "stats", line())
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		return serveErr
	}
	return nil
}

// start runs f in a goroutine with a context of its own; stop cancels it
// and done closes when f has returned.
func start(f func(context.Context)) (stop context.CancelFunc, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() { defer close(ch); f(ctx) }()
	return cancel, ch
}

// every calls f each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
