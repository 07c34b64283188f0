package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/faults"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/ratelog"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/spool"
	"github.com/stratatrace/strata/agent/streamer"
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

	st, err := streamer.New(sp, streamer.Config{Target: cfg.Collector, Logger: log})
	if err != nil {
		return err
	}

	kern, err := openFaults(cfg, fs, log)
	if err != nil {
		return err
	}
	defer kern.Close()

	ann := annotator.New(res, sp, annotator.Config{
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

	m := &metrics{hook: hs, ann: ann, sp: sp, st: st, kern: kern, log: limited}
	var httpSrv *http.Server
	if cfg.HTTPAddr != "" {
		if httpSrv, err = m.serve(cfg.HTTPAddr, log); err != nil {
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

// metrics serves the counters an SRE watches, in Prometheus text format.
type metrics struct {
	hook *hooksrv.Server
	ann  *annotator.Annotator
	sp   *spool.Spool
	st   *streamer.Streamer
	kern *faults.Faults
	log  *ratelog.Handler
}

func (m *metrics) serve(addr string, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen http: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m.write(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	log.Info("http listening", "addr", ln.Addr().String())
	return srv, nil
}

func (m *metrics) write(w io.Writer) {
	h, a, s, t := m.hook.Stats(), m.ann.Stats(), m.sp.Stats(), m.st.Stats()
	p := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n%s %v\n", name, help, name, v)
	}
	connected := 0
	if t.Connected {
		connected = 1
	}
	p("strata_hook_sessions_total", "Hook connections accepted.", h.Sessions)
	p("strata_hook_sessions_active", "Hook sessions open now.", h.Active)
	p("strata_hook_frames_total", "Hook frames accepted.", h.Frames)
	p("strata_hook_frames_rejected_total", "Frames naming a pid that is not the peer's (SO_PEERCRED).", h.Rejected)
	p("strata_hook_sessions_malformed_total", "Sessions closed for a malformed frame.", h.Malformed)
	p("strata_hook_frames_dropped_by_peer_total", "Frames hooks dropped because the socket was full.", h.DroppedByPeer)
	p("strata_records_total", "Records handed to the spool.", a.Records)
	p("strata_records_dropped_total", "Records lost because the spool was full.", a.Dropped)
	p("strata_resolve_errors_total", "Records whose range could not be resolved.", a.ResolveError)
	p("strata_live_blocks", "Blocks registered and not freed.", a.LiveBlocks)
	p("strata_spool_pending_batches", "Batches not yet acknowledged by the collector.", s.Pending)
	p("strata_spool_pending_bytes", "Bytes of those batches.", s.PendingBytes)
	p("strata_stream_batches_sent_total", "Batches sent, resends included.", t.Sent)
	p("strata_stream_acks_total", "Acks received.", t.Acked)
	p("strata_stream_records_acked_total", "Records the collector acknowledged as stored.", t.Records)
	p("strata_stream_reconnects_total", "Collector stream reconnects.", t.Reconnects)
	p("strata_stream_batches_rejected_total", "Batches or pieces the collector refused as invalid (then bisected).", t.Rejected)
	p("strata_stream_batches_split_total", "Spooled batches sent as pieces: refused, or over the wire limits.", t.Split)
	p("strata_stream_records_dropped_total", "Records the collector refused alone, after bisection; lost.", t.RecordsDropped)
	p("strata_stream_workloads_dropped_total", "Workload counters the collector refused alone; lost.", t.WorkloadsDropped)
	p("strata_stream_connected", "1 when the collector stream is up.", connected)
	p("strata_records_split_total", "Records over the batch budget, sent as several sub-range records.", a.Split)
	p("strata_page_cache_bytes", "Pages kept for reuse by accesses, estimated bytes.", a.CacheBytes)
	p("strata_page_cache_skipped_total", "Resolutions not kept for reuse because the page cache was full.", a.CacheSkipped)
	p("strata_kernel_mirror_errors_total", "Blocks the kernel's fault tracer could not take (table full, ...).", a.KernelErrors)
	p("strata_hook_live_blocks", "Live blocks as the hook server counts them against its caps.", m.hook.LiveBlocks())
	r := m.hook.Refusals()
	labeled(w, "strata_hook_sessions_refused_total", "Hook connections closed at accept: a session cap was reached.", "cap",
		"node", r.SessionsTotal, "uid", r.SessionsPerUID, "pid", r.SessionsPerPID)
	labeled(w, "strata_hook_sessions_closed_total", "Hook sessions closed for silence.", "reason",
		"hello_timeout", r.HelloTimeout, "idle", r.Idle)
	labeled(w, "strata_hook_frames_refused_total", "Hook frames dropped at a bound; the session goes on.", "reason",
		"range_length", r.RangeTooLong, "access_outside", r.AccessOutside, "blocks_uid", r.BlocksPerUID, "blocks_node", r.BlocksPerNode)
	p("strata_log_suppressed_total", "Log lines held back by the per-message rate limit.", m.log.Suppressed())
	m.kern.WriteMetrics(p)
}

// labeled writes one counter with a label, from label value and count
// pairs.
func labeled(w io.Writer, name, help, label string, pairs ...any) {
	fmt.Fprintf(w, "# HELP %s %s\n", name, help)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(w, "%s{%s=%q} %v\n", name, label, pairs[i], pairs[i+1])
	}
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

func (m *metrics) line() string {
	h, a, s, t := m.hook.Stats(), m.ann.Stats(), m.sp.Stats(), m.st.Stats()
	return fmt.Sprintf("sessions=%d frames=%d rejected=%d malformed=%d %s spool_pending=%d sent=%d acked=%d reconnects=%d",
		h.Sessions, h.Frames, h.Rejected, h.Malformed, a, s.Pending, t.Sent, t.Acked, t.Reconnects)
}

func (m *metrics) logEvery(ctx context.Context, every time.Duration, log *slog.Logger) {
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
