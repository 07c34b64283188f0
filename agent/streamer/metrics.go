package streamer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/dropped"
)

// Collector exports a Streamer's Stats, and the collector stage's series
// of strata_dropped_total, read at every scrape.
type Collector struct {
	s *Streamer
}

// NewCollector returns the collector of s.
func NewCollector(s *Streamer) *Collector { return &Collector{s: s} }

func desc(name, help string, constLabels prometheus.Labels) *prometheus.Desc {
	return prometheus.NewDesc(name, help, nil, constLabels)
}

// dropDesc is this stage's series of strata_dropped_total.
func dropDesc(reason string) *prometheus.Desc { return dropped.Desc("collector", reason) }

var (
	sentDesc           = desc("strata_stream_batches_sent_total", "Batches sent, resends included.", nil)
	ackedDesc          = desc("strata_stream_acks_total", "Acks received.", nil)
	dupsDesc           = desc("strata_stream_duplicates_total", "Acks saying the collector had stored the batch before (resends).", nil)
	recordsDesc        = desc("strata_stream_records_acked_total", "Records the collector acknowledged as stored.", nil)
	reconnectsDesc     = desc("strata_stream_reconnects_total", "Collector stream reconnects.", nil)
	rejectedDesc       = desc("strata_stream_batches_rejected_total", "Batches or pieces the collector refused as invalid (then bisected).", nil)
	splitDesc          = desc("strata_stream_batches_split_total", "Spooled batches sent as pieces: refused, or over the wire limits.", nil)
	recordsDroppedDesc = desc("strata_stream_records_dropped_total", "Records the collector refused alone, after bisection; lost.", nil)
	workloadsDropDesc  = desc("strata_stream_workloads_dropped_total", "Workload counters the collector refused alone; lost.", nil)
	connectedDesc      = desc("strata_stream_connected", "1 when the collector stream is up.", nil)
	dropRecord         = dropDesc("refused_record")
	dropWorkload       = dropDesc("refused_workload")
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	count := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	count(sentDesc, st.Sent)
	count(ackedDesc, st.Acked)
	count(dupsDesc, st.Duplicates)
	count(recordsDesc, st.Records)
	count(reconnectsDesc, st.Reconnects)
	count(rejectedDesc, st.Rejected)
	count(splitDesc, st.Split)
	count(recordsDroppedDesc, st.RecordsDropped)
	count(workloadsDropDesc, st.WorkloadsDropped)
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, connected)
	count(dropRecord, st.RecordsDropped)
	count(dropWorkload, st.WorkloadsDropped)
}
