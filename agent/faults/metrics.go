package faults

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/dropped"
	"github.com/stratatrace/strata/agent/tracer"
)

// Collector exports the fault side: strata_faults_available always, the
// tracer's counters while it is loaded, and the kernel's and the reader's
// losses in strata_dropped_total (0 when unloaded).
type Collector struct {
	f *Faults
}

// NewCollector returns the collector of f.
func NewCollector(f *Faults) *Collector { return &Collector{f: f} }

// faultStat is one series read from the tracer's Stats.
type faultStat struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	read func(tracer.Stats) float64
}

func counter(name, help string, read func(tracer.Stats) uint64) faultStat {
	return faultStat{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, func(s tracer.Stats) float64 { return float64(read(s)) }}
}

func gauge(name, help string, read func(tracer.Stats) int) faultStat {
	return faultStat{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, func(s tracer.Stats) float64 { return float64(read(s)) }}
}

// dropDesc is a series of strata_dropped_total.
func dropDesc(stage, reason string) *prometheus.Desc { return dropped.Desc(stage, reason) }

var (
	availableDesc = prometheus.NewDesc("strata_faults_available", "1 when page-fault attribution is loaded.", nil, nil)
	dropRingFull  = dropDesc("kernel", "ring_full")
	dropBehind    = dropDesc("agent", "fault_events_behind")
	// A fill (the faults of a put) is dropped when the put did not store
	// its block, when it nested too deep, when the kernel had no room for
	// it, and when no REGISTER of its block claimed it (the block was not
	// registered; another put of it came first; its process ended).
	fillDrops = []struct {
		desc *prometheus.Desc
		read func(tracer.Stats) uint64
	}{
		{dropDesc("kernel", "fill_put_failed"), func(s tracer.Stats) uint64 { return s.FillsFailed }},
		{dropDesc("kernel", "fill_too_deep"), func(s tracer.Stats) uint64 { return s.FillsTooDeep }},
		{dropDesc("kernel", "fill_no_room"), func(s tracer.Stats) uint64 { return s.FillsLost }},
		{dropDesc("agent", "fill_unregistered"), func(s tracer.Stats) uint64 { return s.FillsUnclaimed + s.FillsReplaced }},
	}
	faultStats = []faultStat{
		counter("strata_faults_traced_total", "Page faults of traced processes.", func(s tracer.Stats) uint64 { return s.TracedFaults }),
		counter("strata_faults_matched_total", "Faults inside a registered block.", func(s tracer.Stats) uint64 { return s.MatchedFaults }),
		counter("strata_faults_events_total", "Sampled fault events submitted by the kernel.", func(s tracer.Stats) uint64 { return s.KernelEvents }),
		counter("strata_faults_kernel_drops_total", "Fault events lost to a full ring buffer.", func(s tracer.Stats) uint64 { return s.KernelDrops }),
		counter("strata_faults_user_drops_total", "Fault events dropped because the agent fell behind.", func(s tracer.Stats) uint64 { return s.UserDrops }),
		counter("strata_faults_delivered_total", "Fault events read from the ring and handed on.", func(s tracer.Stats) uint64 { return s.Delivered }),
		counter("strata_faults_bad_records_total", "Ring records that did not decode.", func(s tracer.Stats) uint64 { return s.BadRecords }),
		gauge("strata_faults_blocks", "Blocks registered in the kernel.", func(s tracer.Stats) int { return s.Blocks }),
		gauge("strata_faults_weak_ranges", "Ranges of walked objects counting into their blocks in the kernel (as left after giving way to other blocks).",
			func(s tracer.Stats) int { return s.WeakRanges }),
		gauge("strata_faults_index_cells", "Address-index cells (2 MiB buckets, 64 KiB granules) in the kernel.", func(s tracer.Stats) int { return s.RangeSets }),
		gauge("strata_faults_index_run_entries", "Entries of the kernel's runs array in use by granules of more than 8 blocks.",
			func(s tracer.Stats) int { return s.RunEntries }),
		gauge("strata_faults_perf_events", "Per-CPU perf events open (they follow CPU hotplug).", func(s tracer.Stats) int { return s.PerfEvents }),
		counter("strata_faults_walk_samples_total", "Page-walk data-address samples inside a registered block.", func(s tracer.Stats) uint64 { return s.WalkSamples }),
		counter("strata_faults_fills_begun_total", "MemoryStore puts whose thread's faults the fill probes began counting.", func(s tracer.Stats) uint64 { return s.FillsBegun }),
		counter("strata_faults_fills_stored_total", "Marked puts that stored their block.", func(s tracer.Stats) uint64 { return s.FillsStored }),
		counter("strata_faults_fills_claimed_total", "Stored puts whose faults their block's registration took (FILL records).", func(s tracer.Stats) uint64 { return s.FillsClaimed }),
		counter("strata_faults_fills_unmatched_total", "Put ends the fill probes saw without their begin (attached mid-put).", func(s tracer.Stats) uint64 { return s.FillsUnmatched }),
		gauge("strata_faults_fill_files", "Hook library files the fill probes are attached to.", func(s tracer.Stats) int { return s.FillFiles }),
	}
)

// Describe implements prometheus.Collector: every series Collect may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- availableDesc
	ch <- dropRingFull
	ch <- dropBehind
	for _, d := range fillDrops {
		ch <- d.desc
	}
	for _, s := range faultStats {
		ch <- s.desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var st tracer.Stats
	available, loaded := 0.0, false
	if c.f.t != nil {
		available = 1
		var err error
		st, err = c.f.t.Stats()
		loaded = err == nil
	}
	ch <- prometheus.MustNewConstMetric(availableDesc, prometheus.GaugeValue, available)
	ch <- prometheus.MustNewConstMetric(dropRingFull, prometheus.CounterValue, float64(st.KernelDrops))
	ch <- prometheus.MustNewConstMetric(dropBehind, prometheus.CounterValue, float64(st.UserDrops))
	for _, d := range fillDrops {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(d.read(st)))
	}
	if !loaded {
		return
	}
	for _, s := range faultStats {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.read(st))
	}
}
