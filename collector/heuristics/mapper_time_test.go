package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Time vectors (docs/heuristics.md#test-vectors): N tasks
// t=[R,0,0,0,0] with zero *_BYTES_READ, +1 empty.
func TestMapperTimeVectors(t *testing.T) {
	mk := func(n int, minutes int64) *job.Job {
		c := job.Counters{job.HDFSBytesRead: 0, job.S3BytesRead: 0, job.S3ABytesRead: 0, job.S3NBytesRead: 0}
		return mrJob(cat(repeat(n, mapTask(minutes*60_000, c)), []job.Task{emptyTask(job.MapTask)}), nil, nil)
	}
	h := &MapperTime{newTaskTime(mapperTime.of(defaults(t)))}
	runVectors(t, h, []vector{
		{"MT-1", mk(10, 120), Critical, 44},
		{"MT-3", mk(10, 60), Severe, 33},
		{"MT-5", mk(1000, 1), Critical, 4004},
		{"MT-7", mk(101, 1), Moderate, 204},
		{"MT-9", mk(5, 1), None, 0},
		{"no mappers", mrJob(nil, nil, nil), None, 0},
	})
}
