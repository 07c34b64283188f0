package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Stages vectors (docs/heuristics.md#test-vectors): rate thresholds
// 0.2,0.4,0.6,0.8, runtime 15,30,45,60 min, spark.executor.instances = 2.
func TestSparkStagesVectors(t *testing.T) {
	h := &SparkStages{stageRate: Thresholds{0.2, 0.4, 0.6, 0.8}, taskRate: Thresholds{0.2, 0.4, 0.6, 0.8},
		runtime: minutes(Thresholds{15, 30, 45, 60})}
	const m = 60_000
	mk := func(id int, st job.Status, complete, failed int, run int64) job.SparkStage {
		return job.SparkStage{ID: id, Status: st, NumCompleteTasks: complete, NumFailedTasks: failed, ExecutorRunTimeMs: run}
	}
	app := &job.SparkApp{Stages: []job.SparkStage{
		mk(0, job.StageComplete, 10, 0, 2*m), mk(1, job.StageComplete, 8, 2, 2*m), mk(2, job.StageComplete, 6, 4, 2*m),
		mk(3, job.Failed, 4, 6, 2*m), mk(4, job.Failed, 2, 8, 2*m), mk(5, job.StageComplete, 10, 0, 0),
		mk(6, job.StageComplete, 10, 0, 30*m), mk(7, job.StageComplete, 10, 0, 60*m),
		mk(8, job.StageComplete, 10, 0, 90*m), mk(9, job.StageComplete, 10, 0, 120*m),
	}}
	r := h.Apply(sparkJob(map[string]string{"spark.executor.instances": "2"}, app))
	if r.Severity != Critical || r.Score != 0 {
		t.Fatalf("STG-1 severity %v score %d, want CRITICAL 0", r.Severity, r.Score)
	}
	for name, want := range map[string]string{
		"Spark completed stages count":                     "8",
		"Spark failed stages count":                        "2",
		"Spark stage failure rate":                         "0.200",
		"Spark stages with high task failure rates":        "stage 3, attempt 0 (task failure rate: 0.600)\nstage 4, attempt 0 (task failure rate: 0.800)",
		"Spark stages with long average executor runtimes": "stage 8, attempt 0 (runtime: 45 min)\nstage 9, attempt 0 (runtime: 1 hr)",
	} {
		if got, _ := findDetail(r, name); got != want {
			t.Errorf("STG-1 %s = %q, want %q", name, got, want)
		}
	}
	// Without spark.executor.instances the executor summaries count (driver included).
	app.Executors = []job.SparkExecutor{{ID: "driver"}, {ID: "1"}, {ID: "2"}, {ID: "3"}}
	app.Stages = []job.SparkStage{mk(0, job.StageComplete, 1, 0, 240*m)}
	if r := h.Apply(sparkJob(nil, app)); r.Severity != Critical {
		t.Errorf("4 executors, 240 min: %v, want CRITICAL (60 min each)", r.Severity)
	}
}
