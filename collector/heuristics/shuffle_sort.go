package heuristics

import "github.com/stratatrace/strata/collector/job"

// Shuffle & Sort (docs/heuristics.md#shuffle--sort): reducers that spend
// long in shuffle or sort compared with their own code. For each phase the
// severity of its average time is capped by the severity of phase × 2 /
// code time (integer division), unless the code time is not positive.

// ShuffleSortParams are the parameters of Shuffle & Sort.
type ShuffleSortParams struct {
	Common               `yaml:",inline"`
	RuntimeRatioSeverity Thresholds `yaml:"runtime_ratio_severity" check:"asc" help:"avg shuffle (or sort) time × 2 / avg code time"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min" check:"asc" help:"avg shuffle (or sort) time"`
}

var shuffleSort = register(def[ShuffleSortParams]{Key: "shuffle_sort", Name: "Shuffle & Sort", Type: job.MapReduce, Order: 111,
	Defaults: ShuffleSortParams{
		RuntimeRatioSeverity: Thresholds{1, 2, 4, 8},
		RuntimeSeverityInMin: Thresholds{1, 5, 10, 30},
	},
	Build: func(p ShuffleSortParams, _ *Config) Heuristic { return newShuffleSort(p) }})

// ShuffleSort is the Shuffle & Sort heuristic.
type ShuffleSort struct {
	ratio   Thresholds
	runtime Thresholds // ms
}

func newShuffleSort(c ShuffleSortParams) *ShuffleSort {
	return &ShuffleSort{ratio: c.RuntimeRatioSeverity, runtime: minutes(c.RuntimeSeverityInMin)}
}

// Apply implements Heuristic.
func (h *ShuffleSort) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	var execs, shuffles, sorts []int64
	for i := range j.ReduceTasks {
		if tv, ok := j.ReduceTasks[i].Times(); ok {
			execs = append(execs, tv.CodeMs())
			shuffles = append(shuffles, tv.ShuffleMs)
			sorts = append(sorts, tv.SortMs)
		}
	}
	avgExec, avgShuffle, avgSort := Average(execs), Average(shuffles), Average(sorts)
	sev := max(h.phase(avgShuffle, avgExec), h.phase(avgSort, avgExec))
	n := len(j.ReduceTasks)
	return Result{
		Severity: sev,
		Score:    Score(sev, n),
		Details: []Detail{
			detail("Number of tasks", itoa(int64(n))),
			detail("Average code runtime", ReadableTimespan(avgExec)),
			detail("Average shuffle time", withFactor(ReadableTimespan(avgShuffle), DescribeFactor(avgShuffle, avgExec, "x"))),
			detail("Average sort time", withFactor(ReadableTimespan(avgSort), DescribeFactor(avgSort, avgExec, "x"))),
		},
	}
}

func (h *ShuffleSort) phase(avg, avgExec int64) Severity {
	s := h.runtime.Ascending(float64(avg))
	if avgExec <= 0 {
		return s
	}
	return min(s, h.ratio.Ascending(float64(avg*2/avgExec)))
}
