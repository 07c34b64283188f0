package heuristics

import "github.com/stratatrace/strata/collector/job"

// Executor GC (docs/heuristics.md#executor-gc): total GC time over total
// task time of the executors (driver excluded). Only too much GC sets the
// severity; too little (a sign of over-provisioned memory) adds advice.
// Score 0.

// SparkGCParams are the parameters of Executor GC.
type SparkGCParams struct {
	Common      `yaml:",inline"`
	GCSeverityA Thresholds `yaml:"gc_severity_a" check:"asc" help:"GC time / run time: too much GC"`
	GCSeverityD Thresholds `yaml:"gc_severity_d" check:"desc" help:"GC time / run time: too little GC (advice only)"`
}

var sparkExecutorGC = register(def[SparkGCParams]{Key: "spark_executor_gc", Name: "Executor GC", Type: job.Spark, Order: 205,
	Defaults: SparkGCParams{
		GCSeverityA: Thresholds{0.08, 0.1, 0.15, 0.2},
		GCSeverityD: Thresholds{0.05, 0.04, 0.03, 0.01},
	},
	Build: func(p SparkGCParams, _ *Config) Heuristic {
		return &SparkExecutorGC{high: p.GCSeverityA, low: p.GCSeverityD}
	}})

// SparkExecutorGC is the Executor GC heuristic.
type SparkExecutorGC struct{ high, low Thresholds }

// Apply implements Heuristic.
func (h *SparkExecutorGC) Apply(j *job.Job) Result {
	var gc, run int64
	if j.Spark != nil {
		for _, e := range j.Spark.Executors {
			if e.ID == job.DriverID {
				continue
			}
			gc += e.TotalGCTimeMs
			run += e.TotalDurationMs
		}
	}
	ratio := float64(gc) / float64(run) // 0/0 = NaN ⇒ NONE both ways
	sevHigh, sevLow := h.high.Ascending(ratio), h.low.Descending(ratio)
	d := []Detail{
		detail("GC time to Executor Run time ratio", ftoa(ratio)),
		detail("Total GC time", itoa(gc)),
		detail("Total Executor Runtime", itoa(run)),
	}
	if sevHigh > Low {
		d = append(d, detail("Gc ratio high", "The job is spending too much time on GC. Consider increasing executor memory or tuning the garbage collector."))
	}
	if sevLow > Low {
		d = append(d, detail("Gc ratio low", "The job is spending too little time on GC. Consider lowering executor memory."))
	}
	return Result{Severity: sevHigh, Details: d}
}
