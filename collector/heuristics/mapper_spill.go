package heuristics

import (
	"math"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Spill (docs/heuristics.md#mapper-spill): spilled records per map
// output record over all mappers, compared ×10 000 after truncation to an
// integer, and flagged only for jobs with many mappers.

// SpillParams are the parameters of Mapper Spill.
type SpillParams struct {
	Common           `yaml:",inline"`
	SpillSeverity    Thresholds `yaml:"spill_severity" check:"asc" help:"spilled records / map output records"`
	NumTasksSeverity Thresholds `yaml:"num_tasks_severity" check:"asc" help:"mappers"`
}

var mapperSpill = register(def[SpillParams]{Key: "mapper_spill", Name: "Mapper Spill", Type: job.MapReduce, Order: 105,
	Defaults: SpillParams{
		SpillSeverity:    Thresholds{2.01, 2.2, 2.5, 3.0},
		NumTasksSeverity: Thresholds{50, 100, 500, 1000},
	},
	Build: func(p SpillParams, _ *Config) Heuristic { return newMapperSpill(p) }})

const spillFactor = 10_000

// MapperSpill is the Mapper Spill heuristic.
type MapperSpill struct {
	spill    Thresholds // ratio × 10 000
	numTasks Thresholds
}

func newMapperSpill(c SpillParams) *MapperSpill {
	return &MapperSpill{spill: c.SpillSeverity.Scale(spillFactor), numTasks: c.NumTasksSeverity}
}

// Apply implements Heuristic.
func (h *MapperSpill) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	var spilled, output int64
	for i := range j.MapTasks {
		t := &j.MapTasks[i]
		if t.HasCounters() {
			spilled += t.Counters.Get(job.SpilledRecords)
			output += t.Counters.Get(job.MapOutputRecords)
		}
	}
	ratio := 0.0
	if spilled != 0 {
		ratio = float64(spilled) / float64(output)
	}
	n := len(j.MapTasks)
	sev := min(h.spill.Ascending(float64(truncToInt64(ratio*spillFactor))), h.numTasks.Ascending(float64(n)))
	var avgSpilled, avgOutput int64
	if n > 0 {
		avgSpilled, avgOutput = spilled/int64(n), output/int64(n)
	}
	return Result{
		Severity: sev,
		Score:    Score(sev, n),
		Details: []Detail{
			detail("Number of tasks", itoa(int64(n))),
			detail("Avg spilled records per task", itoa(avgSpilled)),
			detail("Avg output records per task", itoa(avgOutput)),
			detail("Ratio of spilled records to output records", ftoa(ratio)),
		},
	}
}

// truncToInt64 converts like Java's (long) cast: NaN → 0, saturating at
// the int64 range.
func truncToInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
