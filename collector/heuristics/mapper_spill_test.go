package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Spill vectors (docs/heuristics.md#test-vectors): N tasks t=0s with
// SPILLED_RECORDS s and MAP_OUTPUT_RECORDS o, +1 empty.
func TestMapperSpillVectors(t *testing.T) {
	mk := func(s, o int64, n int) *job.Job {
		c := job.Counters{job.SpilledRecords: s, job.MapOutputRecords: o}
		return mrJob(cat(repeat(n, mapTask(0, c)), []job.Task{emptyTask(job.MapTask)}), nil, nil)
	}
	runVectors(t, newMapperSpill(mapperSpill.of(defaults(t))), []vector{
		{"SPL-1", mk(3000, 1000, 1000), Critical, 4004},
		{"SPL-3", mk(2300, 1000, 1000), Moderate, 2002},
		{"SPL-5", mk(1000, 1000, 1000), None, 0},
		{"spills without output", mk(10, 0, 1000), Critical, 4004},
		{"nothing spilled", mk(0, 0, 1000), None, 0},
	})
}
