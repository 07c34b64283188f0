package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper Speed (§5.4): median input bytes per second of the mappers,
// flagged when slow compared with a disk (100 MiB/s) and the median mapper
// runs long enough to matter.

func init() {
	register(entry{key: "mapper_speed", name: "Mapper Speed", typ: job.MapReduce, order: orderMapperSpeed,
		common: func(c *Config) Common { return c.MapperSpeed.Common },
		build:  func(c *Config) Heuristic { return newMapperSpeed(c.MapperSpeed) }})
}

// MapperSpeed is the Mapper Speed heuristic.
type MapperSpeed struct {
	speed   Thresholds // bytes/s, descending
	runtime Thresholds // ms
}

func newMapperSpeed(c SpeedConfig) *MapperSpeed {
	return &MapperSpeed{speed: c.DiskSpeedSeverity.Scale(diskReadSpeed), runtime: minutes(c.RuntimeSeverityInMin)}
}

// Name implements Heuristic.
func (h *MapperSpeed) Name() string { return "Mapper Speed" }

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
			detail("Median task runtime", clock(medRuntime)),
			detail("Median task speed", BytesToString(medSpeed)+"/s"),
			detail("Total input size in MB", itoa(total/mib)),
		},
	}
}
