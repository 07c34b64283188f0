package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Stage Metrics (docs/heuristics.md#spark-stage-metrics): the share
// of failed stages, per stage attempt the share of failed tasks, and the
// stage's executor run time divided by the number of executors
// (spark.executor.instances, else the executor summaries including the
// driver). Score 0.

// SparkStagesParams are the parameters of Spark Stage Metrics.
type SparkStagesParams struct {
	Common                       `yaml:",inline"`
	StageFailureRateSeverity     Thresholds `yaml:"stage_failure_rate_severity" check:"asc" help:"failed / (complete + failed) stages"`
	StageTaskFailureRateSeverity Thresholds `yaml:"stage_task_failure_rate_severity" check:"asc" help:"per stage attempt: failed / (complete + failed) tasks"`
	StageRuntimeSeverityInMin    Thresholds `yaml:"stage_runtime_severity_in_min" check:"asc" help:"stage executor run time / executors"`
}

var sparkStages = register(def[SparkStagesParams]{Key: "spark_stages", Name: "Spark Stage Metrics", Type: job.Spark, Order: 204,
	Defaults: SparkStagesParams{
		StageFailureRateSeverity:     Thresholds{0.1, 0.3, 0.5, 0.5},
		StageTaskFailureRateSeverity: Thresholds{0.1, 0.3, 0.5, 0.5},
		StageRuntimeSeverityInMin:    Thresholds{15, 30, 45, 60},
	},
	Build: func(p SparkStagesParams, _ *Config) Heuristic {
		return &SparkStages{stageRate: p.StageFailureRateSeverity, taskRate: p.StageTaskFailureRateSeverity,
			runtime: minutes(p.StageRuntimeSeverityInMin)}
	}})

// SparkStages is the Spark Stage Metrics heuristic.
type SparkStages struct {
	stageRate, taskRate Thresholds
	runtime             Thresholds // ms
}

// Apply implements Heuristic.
func (h *SparkStages) Apply(j *job.Job) Result {
	var stages []job.SparkStage
	var executors int64
	if j.Spark != nil {
		stages = j.Spark.Stages
		executors = int64(len(j.Spark.Executors))
	}
	if n, ok := propInt(j.Conf, propExecutorInstances); ok {
		executors = n
	}
	var completed, failed int
	var highTask, longRun []string
	sev := None
	for _, st := range stages {
		switch st.Status {
		case job.StageComplete:
			completed++
		case job.Failed:
			failed++
		}
		name := "stage " + strconv.Itoa(st.ID) + ", attempt " + strconv.Itoa(st.AttemptID)
		r := rate(st.NumFailedTasks, st.NumCompleteTasks+st.NumFailedTasks)
		s := h.taskRate.Ascending(r)
		if s > Moderate {
			highTask = append(highTask, name+" (task failure rate: "+f3(r)+")")
		}
		sev = max(sev, s)
		var avgRuntime int64
		if executors > 0 {
			avgRuntime = st.ExecutorRunTimeMs / executors
		}
		s = h.runtime.Ascending(float64(avgRuntime))
		if s > Moderate {
			longRun = append(longRun, name+" (runtime: "+ReadableTimespan(avgRuntime)+")")
		}
		sev = max(sev, s)
	}
	stageRate := rate(failed, completed+failed)
	sev = max(sev, h.stageRate.Ascending(stageRate))
	return Result{Severity: sev, Details: []Detail{
		detail("Spark completed stages count", strconv.Itoa(completed)),
		detail("Spark failed stages count", strconv.Itoa(failed)),
		detail("Spark stage failure rate", f3(stageRate)),
		detail("Spark stages with high task failure rates", joinLines(highTask)),
		detail("Spark stages with long average executor runtimes", joinLines(longRun)),
	}}
}
