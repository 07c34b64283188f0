package agent

import (
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/faults"
	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/agent/ratelog"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/spool"
	"github.com/stratatrace/strata/agent/streamer"
)

// Version is the agent's version, set by the build
// (-ldflags "-X github.com/stratatrace/strata/agent.Version=...").
var Version = "dev"

// parts are the components whose counters the agent exports; each keeps
// its own in a Stats struct, read at every scrape.
type parts struct {
	hook *hooksrv.Server
	ann  *annotator.Annotator
	sp   *spool.Spool
	st   *streamer.Streamer
	kern *faults.Faults
	log  *ratelog.Handler
}

// snapshot is one scrape's reading of every part.
type snapshot struct {
	h   hooksrv.Stats
	r   hooksrv.Refusals
	a   annotator.Stats
	s   spool.Stats
	t   streamer.Stats
	now time.Time
	p   *parts
}

// stat is one exported series read from a snapshot.
type stat struct {
	name, help string
	counter    bool
	label      string // "" for none
	values     []labeled
}

type labeled struct {
	value string
	read  func(*snapshot) float64
}

func one(read func(*snapshot) float64) []labeled { return []labeled{{"", read}} }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// agentStats lists what the agent exports from its parts' Stats. The
// names without a prefix of their own (strata_records_total, ...) are
// those the tests and the dashboard have always read.
var agentStats = []stat{
	{"strata_hook_sessions_total", "Hook connections accepted.", true, "", one(func(s *snapshot) float64 { return float64(s.h.Sessions) })},
	{"strata_hook_sessions_active", "Hook sessions open now.", false, "", one(func(s *snapshot) float64 { return float64(s.h.Active) })},
	{"strata_hook_frames_total", "Hook frames accepted.", true, "", one(func(s *snapshot) float64 { return float64(s.h.Frames) })},
	{"strata_hook_frames_rejected_total", "Frames naming a pid that is not the peer's (SO_PEERCRED).", true, "", one(func(s *snapshot) float64 { return float64(s.h.Rejected) })},
	{"strata_hook_frames_unknown_total", "MOVE, ACCESS or FREE frames of a block that is not live (its REGISTER was dropped).", true, "", one(func(s *snapshot) float64 { return float64(s.h.Unknown) })},
	{"strata_hook_sessions_malformed_total", "Sessions closed for a malformed frame.", true, "", one(func(s *snapshot) float64 { return float64(s.h.Malformed) })},
	{"strata_hook_frames_dropped_by_peer_total", "Frames hooks dropped because the socket was full.", true, "", one(func(s *snapshot) float64 { return float64(s.h.DroppedByPeer) })},
	{"strata_hook_live_blocks", "Live blocks as the hook server counts them against its caps.", false, "", one(func(s *snapshot) float64 { return float64(s.p.hook.LiveBlocks()) })},
	{"strata_hook_sessions_refused_total", "Hook connections closed at accept: a session cap was reached.", true, "cap", []labeled{
		{"node", func(s *snapshot) float64 { return float64(s.r.SessionsTotal) }},
		{"uid", func(s *snapshot) float64 { return float64(s.r.SessionsPerUID) }},
		{"pid", func(s *snapshot) float64 { return float64(s.r.SessionsPerPID) }}}},
	{"strata_hook_sessions_closed_total", "Hook sessions closed for silence.", true, "reason", []labeled{
		{"hello_timeout", func(s *snapshot) float64 { return float64(s.r.HelloTimeout) }},
		{"idle", func(s *snapshot) float64 { return float64(s.r.Idle) }}}},
	{"strata_hook_frames_refused_total", "Hook frames dropped at a bound; the session goes on.", true, "reason", []labeled{
		{"range_length", func(s *snapshot) float64 { return float64(s.r.RangeTooLong) }},
		{"access_outside", func(s *snapshot) float64 { return float64(s.r.AccessOutside) }},
		{"blocks_uid", func(s *snapshot) float64 { return float64(s.r.BlocksPerUID) }},
		{"blocks_node", func(s *snapshot) float64 { return float64(s.r.BlocksPerNode) }},
		{"walk_extents", func(s *snapshot) float64 { return float64(s.r.WalkTooLarge) }},
		{"walk_block", func(s *snapshot) float64 { return float64(s.r.WalkNotGraphOrBatch) }}}},
	{"strata_hook_walks_total", "Complete walks (and stale marks) of deserialized blocks' objects and cached batch columns' buffers received.", true, "", one(func(s *snapshot) float64 { return float64(s.h.Walks) })},
	{"strata_hook_walks_incomplete_total", "Walks lost because one of their parts did not arrive (the hook dropped it): their blocks kept their previous walk.", true, "", one(func(s *snapshot) float64 { return float64(s.h.WalksIncomplete) })},

	{"strata_events_total", "Hook events and fault samples the annotator handled.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Events) })},
	{"strata_records_total", "Records handed to the spool.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Records) })},
	{"strata_batches_total", "Batches handed to the spool.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Batches) })},
	{"strata_records_dropped_total", "Records lost because the spool was full.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Dropped) })},
	{"strata_resolve_errors_total", "Records whose range could not be resolved.", true, "", one(func(s *snapshot) float64 { return float64(s.a.ResolveError) })},
	{"strata_records_reused_total", "Access records that reused pages resolved shortly before.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Reused) })},
	{"strata_records_split_total", "Records over the batch budget, sent as several sub-range records.", true, "", one(func(s *snapshot) float64 { return float64(s.a.Split) })},
	{"strata_live_blocks", "Blocks registered and not freed.", false, "", one(func(s *snapshot) float64 { return float64(s.a.LiveBlocks) })},
	{"strata_processes", "Hooked processes the annotator follows.", false, "", one(func(s *snapshot) float64 { return float64(s.a.Processes) })},
	{"strata_page_cache_bytes", "Pages kept for reuse by accesses, estimated bytes.", false, "", one(func(s *snapshot) float64 { return float64(s.a.CacheBytes) })},
	{"strata_page_cache_skipped_total", "Resolutions not kept for reuse because the page cache was full.", true, "", one(func(s *snapshot) float64 { return float64(s.a.CacheSkipped) })},
	{"strata_kernel_mirror_errors_total", "Blocks the kernel's fault tracer could not take (table full, ...).", true, "", one(func(s *snapshot) float64 { return float64(s.a.KernelErrors) })},
	{"strata_kernel_walk_mirror_errors_total", "Walks whose objects' ranges the kernel's fault tracer could not take (its index full, ...): their faults count in the array alone.", true, "", one(func(s *snapshot) float64 { return float64(s.a.WalkKernelErrors) })},
	{"strata_walks_total", "Walks of deserialized blocks' objects recorded, by state (complete or cut; stale marks).", true, "state", []labeled{
		{"walked", func(s *snapshot) float64 { return float64(s.a.Walks) }},
		{"stale", func(s *snapshot) float64 { return float64(s.a.WalksStale) }}}},
	{"strata_walk_extents", "Extents of the live blocks' latest walks the annotator keeps.", false, "", one(func(s *snapshot) float64 { return float64(s.a.WalkExtents) })},
	{"strata_walk_extents_process_max", "Walk extents kept for the process that has most.", false, "", one(func(s *snapshot) float64 {
		m := 0
		for _, n := range s.a.ProcessWalkExtents {
			m = max(m, n)
		}
		return float64(m)
	})},

	{"strata_spool_pending_batches", "Batches not yet acknowledged by the collector.", false, "", one(func(s *snapshot) float64 { return float64(s.s.Pending) })},
	{"strata_spool_pending_bytes", "Bytes of those batches.", false, "", one(func(s *snapshot) float64 { return float64(s.s.PendingBytes) })},
	{"strata_spool_oldest_age_seconds", "Age of the oldest batch not yet acknowledged (0 when none): how far behind the collector is.", false, "",
		one(func(s *snapshot) float64 {
			if s.s.Oldest.IsZero() {
				return 0
			}
			return s.now.Sub(s.s.Oldest).Seconds()
		})},

	{"strata_stream_batches_sent_total", "Batches sent, resends included.", true, "", one(func(s *snapshot) float64 { return float64(s.t.Sent) })},
	{"strata_stream_acks_total", "Acks received.", true, "", one(func(s *snapshot) float64 { return float64(s.t.Acked) })},
	{"strata_stream_duplicates_total", "Acks saying the collector had stored the batch before (resends).", true, "", one(func(s *snapshot) float64 { return float64(s.t.Duplicates) })},
	{"strata_stream_records_acked_total", "Records the collector acknowledged as stored.", true, "", one(func(s *snapshot) float64 { return float64(s.t.Records) })},
	{"strata_stream_reconnects_total", "Collector stream reconnects.", true, "", one(func(s *snapshot) float64 { return float64(s.t.Reconnects) })},
	{"strata_stream_batches_rejected_total", "Batches or pieces the collector refused as invalid (then bisected).", true, "", one(func(s *snapshot) float64 { return float64(s.t.Rejected) })},
	{"strata_stream_batches_split_total", "Spooled batches sent as pieces: refused, or over the wire limits.", true, "", one(func(s *snapshot) float64 { return float64(s.t.Split) })},
	{"strata_stream_records_dropped_total", "Records the collector refused alone, after bisection; lost.", true, "", one(func(s *snapshot) float64 { return float64(s.t.RecordsDropped) })},
	{"strata_stream_workloads_dropped_total", "Workload counters the collector refused alone; lost.", true, "", one(func(s *snapshot) float64 { return float64(s.t.WorkloadsDropped) })},
	{"strata_stream_connected", "1 when the collector stream is up.", false, "", one(func(s *snapshot) float64 { return b2f(s.t.Connected) })},

	{"strata_log_suppressed_total", "Log lines held back by the per-message rate limit.", true, "", one(func(s *snapshot) float64 { return float64(s.p.log.Suppressed()) })},

	// Every loss in one family, so one panel shows them all. The units
	// differ by stage: kernel drops are fault events, hook drops frames,
	// agent and collector drops records (workload counters for
	// collector_refused_workload).
	{"strata_dropped_total", "Everything lost on the way, by stage (kernel, hook, agent, collector) and reason.", true, "stage_reason", nil},
}

// dropReasons fill strata_dropped_total; the fault side's come from its
// tracer statistics (tracerDrops).
var dropReasons = []struct {
	stage, reason string
	read          func(*snapshot) float64
}{
	{"hook", "socket_full", func(s *snapshot) float64 { return float64(s.h.DroppedByPeer) }},
	{"hook", "range_length", func(s *snapshot) float64 { return float64(s.r.RangeTooLong) }},
	{"hook", "access_outside", func(s *snapshot) float64 { return float64(s.r.AccessOutside) }},
	{"hook", "blocks_uid", func(s *snapshot) float64 { return float64(s.r.BlocksPerUID) }},
	{"hook", "blocks_node", func(s *snapshot) float64 { return float64(s.r.BlocksPerNode) }},
	{"hook", "walk_extents", func(s *snapshot) float64 { return float64(s.r.WalkTooLarge) }},
	{"hook", "walk_incomplete", func(s *snapshot) float64 { return float64(s.h.WalksIncomplete) }},
	{"hook", "foreign_pid", func(s *snapshot) float64 { return float64(s.h.Rejected) }},
	{"agent", "spool_full", func(s *snapshot) float64 { return float64(s.a.Dropped) }},
	{"collector", "refused_record", func(s *snapshot) float64 { return float64(s.t.RecordsDropped) }},
	{"collector", "refused_workload", func(s *snapshot) float64 { return float64(s.t.WorkloadsDropped) }},
}

// statsCollector exports the parts' counters at every scrape.
type statsCollector struct {
	p       *parts
	descs   map[string]*prometheus.Desc
	dropped *prometheus.Desc
}

func newStatsCollector(p *parts) *statsCollector {
	c := &statsCollector{p: p, descs: map[string]*prometheus.Desc{}}
	for _, s := range agentStats {
		if s.name == "strata_dropped_total" {
			c.dropped = prometheus.NewDesc(s.name, s.help, []string{"stage", "reason"}, nil)
			continue
		}
		var labels []string
		if s.label != "" {
			labels = []string{s.label}
		}
		c.descs[s.name] = prometheus.NewDesc(s.name, s.help, labels, nil)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.dropped
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	s := &snapshot{h: p.hook.Stats(), r: p.hook.Refusals(), a: p.ann.Stats(), s: p.sp.Stats(), t: p.st.Stats(), now: time.Now(), p: p}
	for _, st := range agentStats {
		d := c.descs[st.name]
		if d == nil {
			continue
		}
		typ := prometheus.GaugeValue
		if st.counter {
			typ = prometheus.CounterValue
		}
		for _, v := range st.values {
			if st.label == "" {
				ch <- prometheus.MustNewConstMetric(d, typ, v.read(s))
			} else {
				ch <- prometheus.MustNewConstMetric(d, typ, v.read(s), v.value)
			}
		}
	}
	for _, d := range dropReasons {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, d.read(s), d.stage, d.reason)
	}
	kd, ud := tracerDrops(p.kern)
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, kd, "kernel", "ring_full")
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, ud, "agent", "fault_events_behind")
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.a.KernelErrors), "kernel", "block_not_mirrored")
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.a.WalkKernelErrors), "kernel", "walk_not_mirrored")
}

// tracerDrops reads the fault side's drops: ring-buffer reserve failures
// in the kernel and events the agent could not take in time.
func tracerDrops(f *faults.Faults) (kernel, user float64) {
	f.WriteMetrics(func(name, _ string, v any) {
		switch name {
		case "strata_faults_kernel_drops_total":
			kernel = toFloat(v)
		case "strata_faults_user_drops_total":
			user = toFloat(v)
		}
	})
	return kernel, user
}

// faultsCollector exports what faults.WriteMetrics writes, as it writes
// it: its series depend on whether the BPF side loaded, so it is an
// unchecked collector (Describe sends nothing).
type faultsCollector struct{ f *faults.Faults }

func (faultsCollector) Describe(chan<- *prometheus.Desc) {}

func (c faultsCollector) Collect(ch chan<- prometheus.Metric) {
	c.f.WriteMetrics(func(name, help string, v any) {
		typ := prometheus.GaugeValue
		if strings.HasSuffix(name, "_total") {
			typ = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), typ, toFloat(v))
	})
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case uint64:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint32:
		return float64(x)
	case float64:
		return x
	case bool:
		return b2f(x)
	}
	return 0
}

// newRegistry returns the agent's registry: the parts' counters, the fault
// side's, the resolution histograms, the build, the Go runtime and the
// process (process_resident_memory_bytes is the RSS the README's bounds
// speak of).
func newRegistry(p *parts, res *timedResolver) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_build_info",
		Help: "Always 1; the labels say which build runs."}, []string{"component", "version", "go_version"})
	build.WithLabelValues("agent", Version, runtime.Version()).Set(1)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, newStatsCollector(p), faultsCollector{p.kern}, res.seconds, res.pages)
	return reg
}

// timedResolver measures every resolution the annotator asks for.
type timedResolver struct {
	r        annotator.Resolver
	pageSize uint64
	seconds  prometheus.Histogram
	pages    prometheus.Histogram
}

func newTimedResolver(r annotator.Resolver, pageSize uint64) *timedResolver {
	return &timedResolver{r: r, pageSize: pageSize,
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_resolve_seconds",
			Help:    "Time to resolve one request of the annotator (a batch of ranges) through pagemap, kpageflags and the NUMA map.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 2.5, 14)}),
		pages: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_resolve_pages",
			Help:    "Pages in one resolution request.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 12)}),
	}
}

// ResolveFor implements annotator.Resolver.
func (t *timedResolver) ResolveFor(tenant resolver.Tenant, reqs []resolver.Request, out []resolver.Result) error {
	start := time.Now()
	err := t.r.ResolveFor(tenant, reqs, out)
	t.seconds.Observe(time.Since(start).Seconds())
	var bytes uint64
	for _, r := range reqs {
		bytes += r.Length
	}
	t.pages.Observe(float64((bytes + t.pageSize - 1) / t.pageSize))
	return err
}
