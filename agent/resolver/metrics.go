package resolver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/procmem"
)

// Timed resolves through a Pool and measures every request in
// strata_resolve_seconds and strata_resolve_pages; it is the
// prometheus.Collector of those two histograms.
type Timed struct {
	*Pool
	seconds, pages prometheus.Histogram
	spent          prometheus.CounterFunc
}

// NewTimed returns p, measured.
func NewTimed(p *Pool) *Timed {
	return &Timed{Pool: p,
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_resolve_seconds",
			Help:    "Time to resolve one request of the annotator (a batch of ranges) through pagemap, kpageflags and the NUMA map.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 2.5, 14)}),
		pages: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_resolve_pages",
			Help:    "Pages in one resolution request.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 12)}),
		spent: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_resolve_uid_budget_spent_total",
			Help: "Times a peer uid spent its page resolution budget (--resolve-uid-budget-ms); its ranges then resolve at its share."},
			func() float64 { return float64(p.BudgetSpent()) }),
	}
}

// ResolveFor is Pool.ResolveFor, timed; the pages counted are the
// requests' lengths in whole pages.
func (t *Timed) ResolveFor(tenant Tenant, reqs []Request, out []Result) error {
	start := time.Now()
	err := t.Pool.ResolveFor(tenant, reqs, out)
	t.seconds.Observe(time.Since(start).Seconds())
	var bytes uint64
	for _, r := range reqs {
		bytes += r.Length
	}
	ps := procmem.PageSize()
	t.pages.Observe(float64((bytes + ps - 1) / ps))
	return err
}

// Describe implements prometheus.Collector.
func (t *Timed) Describe(ch chan<- *prometheus.Desc) {
	t.seconds.Describe(ch)
	t.pages.Describe(ch)
	t.spent.Describe(ch)
}

// Collect implements prometheus.Collector.
func (t *Timed) Collect(ch chan<- prometheus.Metric) {
	t.seconds.Collect(ch)
	t.pages.Collect(ch)
	t.spent.Collect(ch)
}
