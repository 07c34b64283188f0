package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Speed vectors (docs/heuristics.md#test-vectors): 100 tasks
// t=[R,0,0,0,0] reading k MiB/s split over the four *_BYTES_READ counters, +1
// empty.
func TestMapperSpeedVectors(t *testing.T) {
	const r = 120 * 60_000
	const factor = r * mb1 / 1000
	mk := func(k int64) *job.Job {
		q := k * factor / 4
		c := job.Counters{job.HDFSBytesRead: q, job.S3BytesRead: q, job.S3ABytesRead: q, job.S3NBytesRead: q}
		return mrJob(cat(repeat(100, mapTask(r, c)), []job.Task{emptyTask(job.MapTask)}), nil, nil)
	}
	runVectors(t, newMapperSpeed(mapperSpeed.of(defaults(t))), []vector{
		{"SP-1", mk(1), Critical, 404},
		{"SP-3", mk(13), Moderate, 202},
		{"SP-5", mk(51), None, 0},
		{"zero runtime", mrJob(repeat(5, mapTask(0, job.Counters{job.HDFSBytesRead: 10})), nil, nil), None, 0},
		{"no mappers", mrJob(nil, nil, nil), None, 0},
	})
}
