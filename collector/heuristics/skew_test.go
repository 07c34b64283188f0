package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Skew / Reducer Skew vectors (docs/heuristics.md#test-vectors): data
// tests with the small group on HDFS_BYTES_READ and the large on
// S3A_BYTES_READ (reducers: both REDUCE_SHUFFLE_BYTES), t=0s; time tests with
// time only; +1 empty.
func skewDataJob(kind job.TaskKind, nSmall int, small int64, nLarge int, large int64) *job.Job {
	var s, l job.Counters
	if kind == job.MapTask {
		s, l = job.Counters{job.HDFSBytesRead: small}, job.Counters{job.S3ABytesRead: large}
	} else {
		s, l = job.Counters{job.ReduceShuffleBytes: small}, job.Counters{job.ReduceShuffleBytes: large}
	}
	tasks := cat(repeat(nSmall, timedTask(kind, 0, 0, 0, s)), repeat(nLarge, timedTask(kind, 0, 0, 0, l)), []job.Task{emptyTask(kind)})
	if kind == job.MapTask {
		return mrJob(tasks, nil, nil)
	}
	return mrJob(nil, tasks, nil)
}

func skewTimeJob(kind job.TaskKind, nSmall int, small int64, nLarge int, large int64) *job.Job {
	tasks := cat(repeat(nSmall, timedTask(kind, small, 0, 0, nil)), repeat(nLarge, timedTask(kind, large, 0, 0, nil)), []job.Task{emptyTask(kind)})
	if kind == job.MapTask {
		return mrJob(tasks, nil, nil)
	}
	return mrJob(nil, tasks, nil)
}

func TestSkewVectors(t *testing.T) {
	c := defaults(t)
	for _, kind := range []job.TaskKind{job.MapTask, job.ReduceTask} {
		h := newSkew(kind, mapperSkew.of(c), c.HDFSBlockSizeBytes)
		if kind == job.ReduceTask {
			h = newSkew(kind, reducerSkew.of(c), c.HDFSBlockSizeBytes)
		}
		t.Run(string(kind), func(t *testing.T) {
			runVectors(t, h, []vector{
				{"SK-1", skewDataJob(kind, 200, 1*mb1, 200, 100*mb1), Critical, 1604},
				{"SK-3", skewDataJob(kind, 200, 20*mb1, 200, 100*mb1), Moderate, 802},
				{"SK-5", skewDataJob(kind, 200, 50*mb1, 200, 100*mb1), None, 0},
				{"SK-7", skewDataJob(kind, 5, 10*mb1, 5, 100*mb1), None, 0},
				{"SK-9", skewTimeJob(kind, 200, 10_000_000, 200, 100_000_000), Severe, 0},
				{"SK-11", skewTimeJob(kind, 200, 30_000_000, 200, 100_000_000), Low, 0},
				{"SK-13", skewTimeJob(kind, 5, 10_000_000, 5, 100_000_000), None, 0},
			})
		})
	}
}

func TestSkewFailedJobSkipped(t *testing.T) {
	c := defaults(t)
	j := skewDataJob(job.MapTask, 200, mb1, 200, 100*mb1)
	j.Status = job.Failed
	if r := newSkew(job.MapTask, mapperSkew.of(c), c.HDFSBlockSizeBytes).Apply(j); !r.Skip {
		t.Fatalf("failed job: got %+v, want skip", r)
	}
}
