package heuristics

import "github.com/stratatrace/strata/collector/job"

// Executor GC (§7.5): total GC time over total task time of the executors
// (driver excluded). Only too much GC sets the severity; too little (a
// sign of over-provisioned memory) adds advice. Score 0.

func init() {
	register(entry{key: "spark_executor_gc", name: "Executor GC", typ: job.Spark, order: orderSparkGC,
		common: func(c *Config) Common { return c.SparkGC.Common },
		build: func(c *Config) Heuristic {
			return &SparkExecutorGC{high: c.SparkGC.GCSeverityA, low: c.SparkGC.GCSeverityD}
		}})
}

// SparkExecutorGC is the Executor GC heuristic.
type SparkExecutorGC struct{ high, low Thresholds }

// Name implements Heuristic.
func (h *SparkExecutorGC) Name() string { return "Executor GC" }

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
