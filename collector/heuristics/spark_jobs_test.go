package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Jobs vectors (docs/heuristics.md#test-vectors): thresholds
// 0.2,0.4,0.6,0.8 for both rates.
func TestSparkJobsVectors(t *testing.T) {
	h := &SparkJobs{jobRate: Thresholds{0.2, 0.4, 0.6, 0.8}, taskRate: Thresholds{0.2, 0.4, 0.6, 0.8}}
	mk := func(id int, name string, st job.Status, completed, failed int) job.SparkJob {
		return job.SparkJob{ID: id, Name: name, Status: st, NumCompletedTasks: completed, NumFailedTasks: failed}
	}
	app := &job.SparkApp{Jobs: []job.SparkJob{
		mk(0, "foo", job.Succeeded, 10, 0), mk(1, "bar", job.Succeeded, 8, 2), mk(2, "baz", job.Succeeded, 6, 4),
		mk(3, "aaa", job.Failed, 4, 6), mk(4, "zzz", job.Failed, 2, 8),
	}}
	r := h.Apply(sparkJob(nil, app))
	if r.Severity != Critical || r.Score != 0 {
		t.Fatalf("JB-1 severity %v score %d, want CRITICAL 0", r.Severity, r.Score)
	}
	for name, want := range map[string]string{
		"Spark completed jobs count":              "3",
		"Spark failed jobs count":                 "2",
		"Spark failed jobs list":                  "job 3, aaa\njob 4, zzz",
		"Spark job failure rate":                  "0.400",
		"Spark jobs with high task failure rates": "job 3, aaa (task failure rate: 0.600)\njob 4, zzz (task failure rate: 0.800)",
	} {
		if got, _ := findDetail(r, name); got != want {
			t.Errorf("JB-1 %s = %q, want %q", name, got, want)
		}
	}
	if r := h.Apply(sparkJob(nil, nil)); r.Severity != None {
		t.Errorf("no jobs: %v, want NONE", r.Severity)
	}
}
