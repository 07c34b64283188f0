package spool

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports what a Spool holds, read at every scrape.
type Collector struct {
	s *Spool
}

// NewCollector returns the collector of s.
func NewCollector(s *Spool) *Collector { return &Collector{s: s} }

var (
	pendingDesc = prometheus.NewDesc("strata_spool_pending_batches", "Batches not yet acknowledged by the collector.", nil, nil)
	bytesDesc   = prometheus.NewDesc("strata_spool_pending_bytes", "Bytes of those batches.", nil, nil)
	oldestDesc  = prometheus.NewDesc("strata_spool_oldest_age_seconds",
		"Age of the oldest batch not yet acknowledged (0 when none): how far behind the collector is.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	age := 0.0
	if !st.Oldest.IsZero() {
		age = time.Since(st.Oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(st.PendingBytes))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
}
