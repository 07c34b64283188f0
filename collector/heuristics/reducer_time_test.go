package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Reducer Time vectors (docs/heuristics.md#test-vectors): N reducers
// t=[R,0,0,0,0] with empty counters, +1 empty.
func TestReducerTimeVectors(t *testing.T) {
	mk := func(minutes int64, n int) *job.Job {
		tasks := cat(repeat(n, timedTask(job.ReduceTask, minutes*60_000, 0, 0, job.Counters{})),
			[]job.Task{emptyTask(job.ReduceTask)})
		return mrJob(nil, tasks, nil)
	}
	h := &ReducerTime{newTaskTime(reducerTime.of(defaults(t)))}
	runVectors(t, h, []vector{
		{"RT-1", mk(1, 1000), Critical, 4004},
		{"RT-3", mk(1, 101), Moderate, 204},
		{"RT-5", mk(1, 2), None, 0},
		{"RT-7", mk(120, 1000), Critical, 4004},
		{"RT-9", mk(60, 1000), Severe, 3003},
	})
}
