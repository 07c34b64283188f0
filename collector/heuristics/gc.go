package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper GC and Reducer GC (§5.2): the ratio of average GC time to average
// CPU time over tasks with time and counters, flagged only when the
// average task also runs long enough to matter.

func init() {
	register(entry{key: "mapper_gc", name: "Mapper GC", typ: job.MapReduce, order: orderMapperGC,
		common: func(c *Config) Common { return c.MapperGC.Common },
		build:  func(c *Config) Heuristic { return newGC("Mapper GC", job.MapTask, c.MapperGC) }})
	register(entry{key: "reducer_gc", name: "Reducer GC", typ: job.MapReduce, order: orderReducerGC,
		common: func(c *Config) Common { return c.ReducerGC.Common },
		build:  func(c *Config) Heuristic { return newGC("Reducer GC", job.ReduceTask, c.ReducerGC) }})
}

// GC is Mapper GC or Reducer GC.
type GC struct {
	name    string
	kind    job.TaskKind
	ratio   Thresholds
	runtime Thresholds // ms
}

func newGC(name string, kind job.TaskKind, c GCConfig) *GC {
	return &GC{name: name, kind: kind, ratio: c.GCRatioSeverity, runtime: minutes(c.RuntimeSeverityInMin)}
}

// Name implements Heuristic.
func (h *GC) Name() string { return h.name }

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
