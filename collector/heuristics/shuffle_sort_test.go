package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Shuffle & Sort vectors (docs/heuristics.md#test-vectors): 100 reducers
// t=[sh+so+ex, sh, so, 0, 0], +1 empty.
func TestShuffleSortVectors(t *testing.T) {
	const min = 60_000
	mk := func(sh, so, ex int64) *job.Job {
		tasks := cat(repeat(100, timedTask(job.ReduceTask, sh+so+ex, sh, so, nil)), []job.Task{emptyTask(job.ReduceTask)})
		return mrJob(nil, tasks, nil)
	}
	runVectors(t, newShuffleSort(shuffleSort.of(defaults(t))), []vector{
		{"SS-1", mk(30*min, 0, 5*min), Critical, 404},
		{"SS-3", mk(30*min, 0, 20*min), Moderate, 202},
		{"SS-5", mk(30*min, 0, 80*min), None, 0},
		{"SS-6", mk(0, 30*min, 5*min), Critical, 404},
		{"SS-7", mk(0, 30*min, 10*min), Severe, 303},
		{"SS-8", mk(0, 30*min, 20*min), Moderate, 202},
		{"SS-9", mk(0, 30*min, 40*min), Low, 0},
		{"SS-10", mk(0, 30*min, 80*min), None, 0},
		{"SS-11", mk(30_000, 0, 30_000), None, 0},
		{"no code time", mk(30*min, 0, 0), Critical, 404},
	})
}

func TestShuffleSortDetails(t *testing.T) {
	r := newShuffleSort(shuffleSort.of(defaults(t))).Apply(mrJob(nil,
		[]job.Task{timedTask(job.ReduceTask, 40*60_000, 30*60_000, 0, nil)}, nil))
	if v, _ := findDetail(r, "Average shuffle time"); v != "30 min (3.00x)" {
		t.Fatalf("shuffle detail %q", v)
	}
}
