package annotator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/dropped"
)

// Collector exports an Annotator's Stats, and the series of
// strata_dropped_total its losses are, read at every scrape.
type Collector struct {
	a *Annotator
}

// NewCollector returns the collector of a.
func NewCollector(a *Annotator) *Collector { return &Collector{a: a} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// dropDesc is a series of strata_dropped_total.
func dropDesc(stage, reason string) *prometheus.Desc { return dropped.Desc(stage, reason) }

var (
	eventsDesc         = desc("strata_events_total", "Hook events and fault samples the annotator handled.")
	recordsDesc        = desc("strata_records_total", "Records handed to the spool.")
	batchesDesc        = desc("strata_batches_total", "Batches handed to the spool.")
	droppedDesc        = desc("strata_records_dropped_total", "Records lost because the spool was full.")
	resolveErrDesc     = desc("strata_resolve_errors_total", "Records whose range could not be resolved.")
	reusedDesc         = desc("strata_records_reused_total", "Access records that reused pages resolved shortly before.")
	splitDesc          = desc("strata_records_split_total", "Records over the batch budget, sent as several sub-range records.")
	liveBlocksDesc     = desc("strata_live_blocks", "Blocks registered and not freed.")
	processesDesc      = desc("strata_processes", "Hooked processes the annotator follows.")
	cacheBytesDesc     = desc("strata_page_cache_bytes", "Pages kept for reuse by accesses, estimated bytes.")
	cacheSkippedDesc   = desc("strata_page_cache_skipped_total", "Resolutions not kept for reuse because the page cache was full.")
	kernelErrDesc      = desc("strata_kernel_mirror_errors_total", "Blocks the kernel's fault tracer could not take (table full, ...).")
	walkKernelErrDesc  = desc("strata_kernel_walk_mirror_errors_total", "Walks whose objects' ranges the kernel's fault tracer could not take (its index full, ...): their faults count in the array alone.")
	walksDesc          = desc("strata_walks_total", "Walks of deserialized blocks' objects recorded, by state (complete or cut; stale marks).", "state")
	walkExtentsDesc    = desc("strata_walk_extents", "Extents of the live blocks' latest walks the annotator keeps.")
	walkExtentsMaxDesc = desc("strata_walk_extents_process_max", "Walk extents kept for the process that has most.")
	dropSpoolFull      = dropDesc("agent", "spool_full")
	dropNotMirrored    = dropDesc("kernel", "block_not_mirrored")
	dropWalkNotMirror  = dropDesc("kernel", "walk_not_mirrored")
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.a.Stats()
	count := func(d *prometheus.Desc, v uint64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	count(eventsDesc, st.Events)
	count(recordsDesc, st.Records)
	count(batchesDesc, st.Batches)
	count(droppedDesc, st.Dropped)
	count(resolveErrDesc, st.ResolveError)
	count(reusedDesc, st.Reused)
	count(splitDesc, st.Split)
	gauge(liveBlocksDesc, int64(st.LiveBlocks))
	gauge(processesDesc, int64(st.Processes))
	gauge(cacheBytesDesc, st.CacheBytes)
	count(cacheSkippedDesc, st.CacheSkipped)
	count(kernelErrDesc, st.KernelErrors)
	count(walkKernelErrDesc, st.WalkKernelErrors)
	count(walksDesc, st.Walks, "walked")
	count(walksDesc, st.WalksStale, "stale")
	gauge(walkExtentsDesc, int64(st.WalkExtents))
	most := 0
	for _, n := range st.ProcessWalkExtents {
		most = max(most, n)
	}
	gauge(walkExtentsMaxDesc, int64(most))

	count(dropSpoolFull, st.Dropped)
	count(dropNotMirrored, st.KernelErrors)
	count(dropWalkNotMirror, st.WalkKernelErrors)
}
