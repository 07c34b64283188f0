package heuristics

import "github.com/stratatrace/strata/collector/job"

// Reducer Time (§5.7): Mapper Time's rule over reducers with time data
// (counters not required), without the input-size detail.

func init() {
	register(entry{key: "reducer_time", name: "Reducer Time", typ: job.MapReduce, order: orderReducerTime,
		common: func(c *Config) Common { return c.ReducerTime.Common },
		build:  func(c *Config) Heuristic { return &ReducerTime{newTaskTime(c.ReducerTime)} }})
}

// ReducerTime is the Reducer Time heuristic.
type ReducerTime struct{ taskTime }

// Name implements Heuristic.
func (h *ReducerTime) Name() string { return "Reducer Time" }

// Apply implements Heuristic.
func (h *ReducerTime) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	var runtimes []int64
	for i := range j.ReduceTasks {
		if tv, ok := j.ReduceTasks[i].Times(); ok {
			runtimes = append(runtimes, tv.TotalMs)
		}
	}
	return h.result(len(j.ReduceTasks), runtimes)
}
