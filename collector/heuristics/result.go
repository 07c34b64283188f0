package heuristics

import "github.com/stratatrace/strata/collector/job"

// Result is what one heuristic says about one job.
type Result struct {
	Severity Severity
	Score    int64
	Details  []Detail
	// Skip means the heuristic does not apply to this job (Dr. Elephant's
	// "no result", e.g. MapReduce heuristics on a failed job). The engine
	// leaves skipped heuristics out of the job's result.
	Skip bool
}

// Detail is one name/value line of a result.
type Detail struct {
	Name  string
	Value string
}

// Heuristic is a pure function of a job: it never fetches and never logs.
// Its name, YAML key and parameters are declared where it registers (def).
type Heuristic interface {
	Apply(*job.Job) Result
}

// skip is the "no result" value.
var skip = Result{Skip: true}

func detail(name, value string) Detail { return Detail{Name: name, Value: value} }
