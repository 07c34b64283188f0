package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper Speed (docs/heuristics.md#mapper-speed): median input bytes per
// second of the mappers, flagged when slow compared with a disk (100 MiB/s)
// and the median mapper runs long enough to matter.

// SpeedParams are the parameters of Mapper Speed.
type SpeedParams struct {
	Common               `yaml:",inline"`
	DiskSpeedSeverity    Thresholds `yaml:"disk_speed_severity" check:"desc" help:"median speed, × 100 MiB/s"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min" check:"asc" help:"median task run time"`
}

var mapperSpeed = register(def[SpeedParams]{Key: "mapper_speed", Name: "Mapper Speed", Type: job.MapReduce, Order: 104,
	Defaults: SpeedParams{
		DiskSpeedSeverity:    Thresholds{1. / 2, 1. / 4, 1. / 8, 1. / 32},
		RuntimeSeverityInMin: Thresholds{5, 10, 15, 30},
	},
	Build: func(p SpeedParams, _ *Config) Heuristic { return newMapperSpeed(p) }})

// MapperSpeed is the Mapper Speed heuristic.
type MapperSpeed struct {
	speed   Thresholds // bytes/s, descending
	runtime Thresholds // ms
}

func newMapperSpeed(c SpeedParams) *MapperSpeed {
	return &MapperSpeed{speed: c.DiskSpeedSeverity.Scale(diskReadSpeed), runtime: minutes(c.RuntimeSeverityInMin)}
}

// Apply implements Heuristic. A mapper with a zero run time has no speed
// (Java would divide by zero and fail the analysis); it still counts for
// size and run time.
func (h *MapperSpeed) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	var speeds, sizes, runtimes []int64
	var total int64
	withTimeAndCounters(j.MapTasks, func(t *job.Task, tv job.Times) {
		in := mapInputBytes(t.Counters)
		total += in
		sizes = append(sizes, in)
		runtimes = append(runtimes, tv.TotalMs)
		if tv.TotalMs != 0 {
			speeds = append(speeds, 1000*in/tv.TotalMs)
		}
	})
	medSpeed, medSize, medRuntime := Median(speeds), Median(sizes), Median(runtimes)
	sev := min(h.speed.Descending(float64(medSpeed)), h.runtime.Ascending(float64(medRuntime)))
	n := len(j.MapTasks)
	return Result{
		Severity: sev,
		Score:    Score(sev, n),
		Details: []Detail{
			detail("Number of tasks", itoa(int64(n))),
			detail("Median task input size", BytesToString(medSize)),
			detail("Median task runtime", ReadableTimespan(medRuntime)),
			detail("Median task speed", BytesToString(medSpeed)+"/s"),
			detail("Total input size in MB", itoa(total/mib)),
		},
	}
}
