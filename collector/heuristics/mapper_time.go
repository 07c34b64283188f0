package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper Time (docs/heuristics.md#mapper-time): too many short mappers (the
// average below the short thresholds, capped by the task count) or too few
// long ones (the average above the long thresholds); the worse of the two.

// TimeParams are the parameters of Mapper Time and Reducer Time.
type TimeParams struct {
	Common                    `yaml:",inline"`
	ShortRuntimeSeverityInMin Thresholds `yaml:"short_runtime_severity_in_min" check:"desc" help:"avg task run time"`
	LongRuntimeSeverityInMin  Thresholds `yaml:"long_runtime_severity_in_min" check:"asc" help:"avg task run time"`
	NumTasksSeverity          Thresholds `yaml:"num_tasks_severity" check:"asc" help:"tasks; caps the short-task severity"`
}

var timeDefaults = TimeParams{
	ShortRuntimeSeverityInMin: Thresholds{10, 4, 2, 1},
	LongRuntimeSeverityInMin:  Thresholds{15, 30, 60, 120},
	NumTasksSeverity:          Thresholds{50, 101, 500, 1000},
}

var mapperTime = register(def[TimeParams]{Key: "mapper_time", Name: "Mapper Time", Type: job.MapReduce, Order: 103,
	Defaults: timeDefaults,
	Build:    func(p TimeParams, _ *Config) Heuristic { return &MapperTime{newTaskTime(p)} }})

// taskTime holds the thresholds Mapper Time and Reducer Time share.
type taskTime struct {
	short    Thresholds // ms, descending
	long     Thresholds // ms
	numTasks Thresholds
}

func newTaskTime(c TimeParams) taskTime {
	return taskTime{short: minutes(c.ShortRuntimeSeverityInMin), long: minutes(c.LongRuntimeSeverityInMin),
		numTasks: c.NumTasksSeverity}
}

// severity is max(min(short(avg), numTasks(n)), long(avg)).
func (t taskTime) severity(avgMs int64, n int) Severity {
	short := min(t.short.Descending(float64(avgMs)), t.numTasks.Ascending(float64(n)))
	return max(short, t.long.Ascending(float64(avgMs)))
}

// MapperTime is the Mapper Time heuristic.
type MapperTime struct{ taskTime }

// Apply implements Heuristic.
func (h *MapperTime) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	var runtimes, inputs []int64
	withTimeAndCounters(j.MapTasks, func(t *job.Task, tv job.Times) {
		runtimes = append(runtimes, tv.TotalMs)
		inputs = append(inputs, mapInputBytes(t.Counters))
	})
	return h.result(len(j.MapTasks), runtimes, detail("Average task input size", BytesToString(Average(inputs))))
}

// result rates the average of runtimes for n tasks; extra details follow
// the task count.
func (t taskTime) result(n int, runtimes []int64, extra ...Detail) Result {
	avg := Average(runtimes)
	sev := t.severity(avg, n)
	minRT, maxRT := minMax(runtimes)
	d := append([]Detail{detail("Number of tasks", itoa(int64(n)))}, extra...)
	d = append(d,
		detail("Average task runtime", ReadableTimespan(avg)),
		detail("Max task runtime", ReadableTimespan(maxRT)),
		detail("Min task runtime", ReadableTimespan(minRT)))
	return Result{Severity: sev, Score: Score(sev, n), Details: d}
}

func minMax(xs []int64) (lo, hi int64) {
	for i, x := range xs {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}
