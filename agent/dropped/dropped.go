// Package dropped defines strata_dropped_total, the one metric family every
// stage of the agent adds its losses to: each package's collector exports
// its own series of it, with its stage and reason as constant labels, and
// this package keeps the family's name and help the same in all of them
// (Prometheus refuses a family registered with two helps).
package dropped

import "github.com/prometheus/client_golang/prometheus"

// Desc is the series of strata_dropped_total for stage (kernel, hook,
// agent, collector) and reason.
func Desc(stage, reason string) *prometheus.Desc {
	return prometheus.NewDesc("strata_dropped_total", "Everything lost on the way, by stage (kernel, hook, agent, collector) and reason.",
		nil, prometheus.Labels{"stage": stage, "reason": reason})
}
