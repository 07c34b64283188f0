package agent

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratatrace/strata/agent/ratelog"
)

// Version is the agent's version, set by the build
// (-ldflags "-X github.com/stratatrace/strata/agent.Version=...").
var Version = "dev"

// newRegistry registers the parts' collectors, the log limit's count, the
// build, the Go runtime and the process (process_resident_memory_bytes is
// the RSS docs/reliability.md's bounds speak of).
func newRegistry(log *ratelog.Handler, parts ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_build_info",
		Help: "Always 1; the labels say which build runs."}, []string{"component", "version", "go_version"})
	build.WithLabelValues("agent", Version, runtime.Version()).Set(1)
	suppressed := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_log_suppressed_total",
		Help: "Log lines held back by the per-message rate limit."}, func() float64 { return float64(log.Suppressed()) })
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), build, suppressed)
	reg.MustRegister(parts...)
	return reg
}
