package damon

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a Heat's Stats, read at every scrape.
type Collector struct{ h *Heat }

// NewCollector returns the collector of h.
func NewCollector(h *Heat) *Collector { return &Collector{h: h} }

var (
	modeDesc = prometheus.NewDesc("strata_damon_mode",
		"1 for the mode access heat from DAMON runs in (own kdamond, shared kdamond, unavailable), 0 for the others.", []string{"mode"}, nil)
	readsDesc   = prometheus.NewDesc("strata_damon_reads_total", "Tried-region lists read from DAMON.", nil, nil)
	regionsDesc = prometheus.NewDesc("strata_damon_regions_read_total", "DAMON regions read.", nil, nil)
	samplesDesc = prometheus.NewDesc("strata_damon_samples_total", "Heat samples of live blocks handed to the annotator.", nil, nil)
	commitsDesc = prometheus.NewDesc("strata_damon_commits_total", "Target-region sets committed to the agent's own kdamond.", nil, nil)
	errorsDesc  = prometheus.NewDesc("strata_damon_errors_total", "DAMON updates, reads and commits that failed.", nil, nil)
	noPagesDesc = prometheus.NewDesc("strata_damon_blocks_without_pages",
		"Live blocks at the last read whose pages the annotator does not keep, which got no heat sample.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.h.Stats()
	mode := st.Mode
	if mode == OwnVaddr { // an own kdamond too: the label set stays the one dashboards read
		mode = Own
	}
	for _, m := range []Mode{Own, Shared, Unavailable} {
		v := 0.0
		if mode == m {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(modeDesc, prometheus.GaugeValue, v, m.String())
	}
	for _, x := range []struct {
		d *prometheus.Desc
		v uint64
	}{{readsDesc, st.Reads}, {regionsDesc, st.Regions}, {samplesDesc, st.Samples}, {commitsDesc, st.Commits}, {errorsDesc, st.Errors}} {
		ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v))
	}
	ch <- prometheus.MustNewConstMetric(noPagesDesc, prometheus.GaugeValue, float64(st.NoPages))
}
