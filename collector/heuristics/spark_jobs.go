package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Job Metrics (docs/heuristics.md#spark-job-metrics): the share of
// failed jobs, and per job the share of failed tasks. Score 0.

// SparkJobsParams are the parameters of Spark Job Metrics.
type SparkJobsParams struct {
	Common                     `yaml:",inline"`
	JobFailureRateSeverity     Thresholds `yaml:"job_failure_rate_severity" check:"asc" help:"failed / (succeeded + failed) jobs"`
	JobTaskFailureRateSeverity Thresholds `yaml:"job_task_failure_rate_severity" check:"asc" help:"per job: failed / (completed + failed) tasks"`
}

var sparkJobs = register(def[SparkJobsParams]{Key: "spark_jobs", Name: "Spark Job Metrics", Type: job.Spark, Order: 203,
	Defaults: SparkJobsParams{
		JobFailureRateSeverity:     Thresholds{0.1, 0.3, 0.5, 0.5},
		JobTaskFailureRateSeverity: Thresholds{0.1, 0.3, 0.5, 0.5},
	},
	Build: func(p SparkJobsParams, _ *Config) Heuristic {
		return &SparkJobs{jobRate: p.JobFailureRateSeverity, taskRate: p.JobTaskFailureRateSeverity}
	}})

// SparkJobs is the Spark Job Metrics heuristic.
type SparkJobs struct{ jobRate, taskRate Thresholds }

// rate is num/den, 0 when den is 0.
func rate(num, den int) float64 {
	if den == 0 {
		return 0
	}
	return float64(num) / float64(den)
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// Apply implements Heuristic.
func (h *SparkJobs) Apply(j *job.Job) Result {
	var jobs []job.SparkJob
	if j.Spark != nil {
		jobs = j.Spark.Jobs
	}
	var completed, failed int
	var failedList, highTask []string
	sev := None
	for _, sj := range jobs {
		switch sj.Status {
		case job.Succeeded:
			completed++
		case job.Failed:
			failed++
			failedList = append(failedList, "job "+strconv.Itoa(sj.ID)+", "+sj.Name)
		}
		r := rate(sj.NumFailedTasks, sj.NumCompletedTasks+sj.NumFailedTasks)
		s := h.taskRate.Ascending(r)
		sev = max(sev, s)
		if s > Moderate {
			highTask = append(highTask, "job "+strconv.Itoa(sj.ID)+", "+sj.Name+" (task failure rate: "+f3(r)+")")
		}
	}
	jobRate := rate(failed, completed+failed)
	sev = max(sev, h.jobRate.Ascending(jobRate))
	return Result{Severity: sev, Details: []Detail{
		detail("Spark completed jobs count", strconv.Itoa(completed)),
		detail("Spark failed jobs count", strconv.Itoa(failed)),
		detail("Spark failed jobs list", joinLines(failedList)),
		detail("Spark job failure rate", f3(jobRate)),
		detail("Spark jobs with high task failure rates", joinLines(highTask)),
	}}
}
