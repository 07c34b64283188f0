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

// Detail is one line of a result, as Dr. Elephant shows it: a name, a
// value, and an optional long text shown below the line. The value holds
// what was measured or configured; the long text holds what does not fit a
// value column: the advice that goes with a configured value, or a stack
// trace (docs/heuristics.md#details).
type Detail struct {
	Name  string
	Value string
	Text  string // long text; "" for none
}

// Heuristic is a pure function of a job: it never fetches and never logs.
// Its name, YAML key and parameters are declared where it registers (def).
type Heuristic interface {
	Apply(*job.Job) Result
}

// skip is the "no result" value.
var skip = Result{Skip: true}

func detail(name, value string) Detail { return Detail{Name: name, Value: value} }

// explained is a detail with long text below it.
func explained(name, value, text string) Detail { return Detail{Name: name, Value: value, Text: text} }
