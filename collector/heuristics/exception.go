package heuristics

import "github.com/stratatrace/strata/collector/job"

// Exception (§5.9): a failed MapReduce job is MODERATE with its diagnostic
// stack trace; succeeded jobs get no result. Score 0.

func init() {
	register(entry{key: "exception", name: "Exception", typ: job.MapReduce, order: orderException,
		common: func(c *Config) Common { return c.Exception },
		build:  func(*Config) Heuristic { return Exception{} }})
}

// noDiagnostics is shown when the fetcher found no stack trace.
const noDiagnostics = "no sufficient diagnostic info: see the job's page on the JobHistory server"

// Exception is the Exception heuristic.
type Exception struct{}

// Name implements Heuristic.
func (Exception) Name() string { return "Exception" }

// Apply implements Heuristic.
func (Exception) Apply(j *job.Job) Result {
	if j.Succeeded() {
		return skip
	}
	msg := j.Diagnostics
	if msg == "" {
		msg = noDiagnostics
	}
	return Result{Severity: Moderate, Details: []Detail{detail("Error", msg)}}
}
