package heuristics

import "github.com/stratatrace/strata/collector/job"

// Exception (docs/heuristics.md#exception): a failed MapReduce job is
// MODERATE with its diagnostic stack trace; succeeded jobs get no result.
// Score 0.

var _ = register(def[Common]{Key: "exception", Name: "Exception", Type: job.MapReduce, Order: 112,
	Build: func(Common, *Config) Heuristic { return Exception{} }})

// noDiagnostics is shown when the fetcher found no stack trace.
const noDiagnostics = "No stack trace was recorded with the job: look for the failure in the task and " +
	"ApplicationMaster logs linked from the job's page on the JobHistory server."

// Exception is the Exception heuristic.
type Exception struct{}

// Apply implements Heuristic.
func (Exception) Apply(j *job.Job) Result {
	if j.Succeeded() {
		return skip
	}
	// As in Dr. Elephant: the stack trace is the long text under an "Error:
	// Stacktrace" line; without one, the line's value says where to look.
	d := detail("Error", noDiagnostics)
	if j.Diagnostics != "" {
		d = explained("Error", "Stacktrace", j.Diagnostics)
	}
	return Result{Severity: Moderate, Details: []Detail{d}}
}
