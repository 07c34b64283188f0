package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper GC and Reducer GC (docs/heuristics.md#mapper-gc): the ratio of
// average GC time to average CPU time over tasks with time and counters,
// flagged only when the average task also runs long enough to matter.

// GCParams are the parameters of Mapper GC and Reducer GC.
type GCParams struct {
	Common               `yaml:",inline"`
	GCRatioSeverity      Thresholds `yaml:"gc_ratio_severity" check:"asc" help:"avg GC time / avg CPU time"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min" check:"asc" help:"avg task run time"`
}

var gcDefaults = GCParams{
	GCRatioSeverity:      Thresholds{0.01, 0.02, 0.03, 0.04},
	RuntimeSeverityInMin: Thresholds{5, 10, 12, 15},
}

var (
	mapperGC = register(def[GCParams]{Key: "mapper_gc", Name: "Mapper GC", Type: job.MapReduce, Order: 102,
		Defaults: gcDefaults,
		Build:    func(p GCParams, _ *Config) Heuristic { return newGC(job.MapTask, p) }})
	reducerGC = register(def[GCParams]{Key: "reducer_gc", Name: "Reducer GC", Type: job.MapReduce, Order: 108,
		Defaults: gcDefaults,
		Build:    func(p GCParams, _ *Config) Heuristic { return newGC(job.ReduceTask, p) }})
)

// GC is Mapper GC or Reducer GC.
type GC struct {
	kind    job.TaskKind
	ratio   Thresholds
	runtime Thresholds // ms
}

func newGC(kind job.TaskKind, c GCParams) *GC {
	return &GC{kind: kind, ratio: c.GCRatioSeverity, runtime: minutes(c.RuntimeSeverityInMin)}
}

// Apply implements Heuristic.
func (h *GC) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	tasks := tasksOf(j, h.kind)
	var runtimes, cpus, gcs []int64
	withTimeAndCounters(tasks, func(t *job.Task, tv job.Times) {
		runtimes = append(runtimes, tv.TotalMs)
		cpus = append(cpus, t.Counters.Get(job.CPUMilliseconds))
		gcs = append(gcs, t.Counters.Get(job.GCTimeMillis))
	})
	avgRuntime, avgCPU, avgGC := Average(runtimes), Average(cpus), Average(gcs)
	sev := None
	ratio := 0.0
	if len(tasks) > 0 {
		// avgCPU 0 gives NaN (NONE) or +Inf (CRITICAL before the min), as
		// in Java's double division.
		r := float64(avgGC) / float64(avgCPU)
		sev = min(h.ratio.Ascending(r), h.runtime.Ascending(float64(avgRuntime)))
		if avgCPU != 0 {
			ratio = r
		}
	}
	return Result{
		Severity: sev,
		Score:    Score(sev, len(tasks)),
		Details: []Detail{
			detail("Number of tasks", itoa(int64(len(tasks)))),
			detail("Avg task runtime (ms)", itoa(avgRuntime)),
			detail("Avg task CPU time (ms)", itoa(avgCPU)),
			detail("Avg task GC time (ms)", itoa(avgGC)),
			detail("Task GC/CPU ratio", ftoa(ratio)),
		},
	}
}
