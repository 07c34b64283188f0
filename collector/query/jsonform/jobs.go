package jsonform

import (
	"time"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Job is one analysed job with its heuristics' results: a line of
// `strata jobs -o json`, what `strata job -o json` prints, and
// /api/v1/jobs/{id}.
type Job struct {
	JobID      string      `json:"job_id"`
	Type       string      `json:"type"` // mapreduce, spark
	Name       string      `json:"name"`
	User       string      `json:"user"`
	Queue      string      `json:"queue"`
	AppID      string      `json:"app_id"` // joins to traces
	Source     string      `json:"source"` // the file or URL it was read from
	Started    string      `json:"started,omitempty"`
	Finished   string      `json:"finished,omitempty"`
	Analyzed   string      `json:"analyzed,omitempty"`
	Severity   string      `json:"severity"`
	Score      int64       `json:"score"`
	Metrics    JobMetrics  `json:"metrics"`
	Warnings   []string    `json:"warnings"` // e.g. truncated input
	Heuristics []Heuristic `json:"heuristics"`
}

// JobMetrics are a job's resources used and wasted, and its times.
type JobMetrics struct {
	UsedGBHours   float64 `json:"used_gb_hours"`
	WastedGBHours float64 `json:"wasted_gb_hours"`
	RuntimeMs     int64   `json:"runtime_ms"`
	WaitMs        int64   `json:"wait_ms"`
}

// Heuristic is one heuristic's result.
type Heuristic struct {
	Name     string   `json:"name"`
	Severity string   `json:"severity"`
	Score    int64    `json:"score"`
	Details  []Detail `json:"details"`
}

// Detail is one line of a result: name, value and, when there is one, the
// long text shown below it (advice, a stack trace).
type Detail struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Details string `json:"details,omitempty"`
}

// NewJob is j's form.
func NewJob(j *stratav1.JobResult) Job {
	m := j.GetMetrics()
	out := Job{JobID: j.GetJobId(), Type: j.GetType(), Name: j.GetName(), User: j.GetUser(), Queue: j.GetQueue(),
		AppID: j.GetAppId(), Source: j.GetSource(), Started: timeMs(j.GetStartUnixMs()), Finished: timeMs(j.GetFinishUnixMs()),
		Analyzed: timeMs(j.GetAnalyzedUnixMs()), Severity: Severity(j.GetSeverity()), Score: j.GetScore(),
		Metrics: JobMetrics{UsedGBHours: m.GetUsedGbHours(), WastedGBHours: m.GetWastedGbHours(), RuntimeMs: m.GetRuntimeMs(),
			WaitMs: m.GetWaitMs()},
		Warnings: append([]string{}, j.GetWarnings()...), Heuristics: []Heuristic{}}
	for _, h := range j.GetHeuristics() {
		hr := Heuristic{Name: h.GetName(), Severity: Severity(h.GetSeverity()), Score: h.GetScore(), Details: []Detail{}}
		for _, d := range h.GetDetails() {
			hr.Details = append(hr.Details, Detail{Name: d.GetName(), Value: d.GetValue(), Details: d.GetDetails()})
		}
		out.Heuristics = append(out.Heuristics, hr)
	}
	return out
}

// NewJobs is jobs' form.
func NewJobs(jobs []*stratav1.JobResult) []Job { return List(jobs, NewJob) }

// JobsPage is /api/v1/jobs: one page of the jobs a search selects and how
// many it selects in all.
type JobsPage struct {
	Total  uint64 `json:"total"`
	Offset uint32 `json:"offset"`
	Limit  uint32 `json:"limit"`
	Jobs   []Job  `json:"jobs"`
}

// NewJobsPage is p's form; q is the search that selected it.
func NewJobsPage(p answer.JobPage, q answer.JobQuery) JobsPage {
	return JobsPage{Total: p.Total, Offset: q.Offset, Limit: q.Limit, Jobs: NewJobs(p.Jobs)}
}

// Timeline is /api/v1/jobs/timeline: jobs counted by severity per bucket
// of finish time, oldest first, buckets without a job left out.
type Timeline struct {
	BucketMs int64            `json:"bucket_ms"`
	Buckets  []TimelineBucket `json:"buckets"`
}

// TimelineBucket counts the jobs that finished in [start, start +
// bucket_ms), by severity name.
type TimelineBucket struct {
	Start  string            `json:"start"`
	Counts map[string]uint64 `json:"counts"`
}

// NewTimeline is tl's form.
func NewTimeline(tl []answer.SeverityBucket, bucketMs int64) Timeline {
	out := Timeline{BucketMs: bucketMs, Buckets: []TimelineBucket{}}
	for _, b := range tl {
		tb := TimelineBucket{Start: Time(b.StartMs * int64(time.Millisecond)), Counts: map[string]uint64{}}
		for sev, n := range b.Counts {
			tb.Counts[Severity(stratav1.Severity(sev))] = n
		}
		out.Buckets = append(out.Buckets, tb)
	}
	return out
}
