package heuristics

import "github.com/stratatrace/strata/collector/job"

// Reducer Time (docs/heuristics.md#reducer-time): Mapper Time's rule over
// reducers with time data (counters not required), without the input-size
// detail.

var reducerTime = register(def[TimeParams]{Key: "reducer_time", Name: "Reducer Time", Type: job.MapReduce, Order: 109,
	Defaults: timeDefaults,
	Build:    func(p TimeParams, _ *Config) Heuristic { return &ReducerTime{newTaskTime(p)} }})

// ReducerTime is the Reducer Time heuristic.
type ReducerTime struct{ taskTime }

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
