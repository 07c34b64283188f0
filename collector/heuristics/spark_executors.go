package heuristics

import (
	"math"
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Executor Metrics (docs/heuristics.md#spark-executor-metrics): load
// balance across executors (driver included). For storage memory used,
// task time, input bytes and shuffle read and write bytes, the severity of
// max / median, ignoring a distribution whose max is below a floor; median
// 0 with a max above the floor is rated as an infinite ratio. Score 0.

// SparkExecutorsParams are the parameters of Spark Executor Metrics.
type SparkExecutorsParams struct {
	Common                   `yaml:",inline"`
	MaxToMedianRatioSeverity Thresholds `yaml:"max_to_median_ratio_severity" check:"asc" help:"max / median over the executors, 10^(1/8, 1/4, 1/2, 1)"`
	IgnoreMaxBytesLessThan   int64      `yaml:"ignore_max_bytes_less_than" help:"a byte distribution whose max is below this is not rated (100 MiB)"`
	IgnoreMaxMillisLessThan  int64      `yaml:"ignore_max_millis_less_than" help:"a time distribution whose max is below this is not rated (5 min)"`
}

var sparkExecutors = register(def[SparkExecutorsParams]{Key: "spark_executors", Name: "Spark Executor Metrics", Type: job.Spark, Order: 202,
	Defaults: SparkExecutorsParams{
		// 10^(1/8), 10^(1/4), 10^(1/2), 10 as Java's Math.pow gives them.
		MaxToMedianRatioSeverity: Thresholds{1.333521432163324, 1.7782794100389228, 3.1622776601683795, 10},
		IgnoreMaxBytesLessThan:   100 << 20,
		IgnoreMaxMillisLessThan:  5 * msPerMinute,
	},
	Build: func(p SparkExecutorsParams, _ *Config) Heuristic {
		return &SparkExecutors{ratio: p.MaxToMedianRatioSeverity, ignoreBytes: p.IgnoreMaxBytesLessThan, ignoreMillis: p.IgnoreMaxMillisLessThan}
	}})

// SparkExecutors is the Spark Executor Metrics heuristic.
type SparkExecutors struct {
	ratio        Thresholds
	ignoreBytes  int64
	ignoreMillis int64
}

// Distribution is the five-number summary of a list (nearest-rank
// percentiles, median per Median).
type Distribution struct{ Min, P25, Median, P75, Max int64 }

// Distribute summarises xs; the zero Distribution for an empty list.
func Distribute(xs []int64) Distribution {
	if len(xs) == 0 {
		return Distribution{}
	}
	lo, hi := minMax(xs)
	return Distribution{Min: lo, P25: Percentile(xs, 25), Median: Median(xs), P75: Percentile(xs, 75), Max: hi}
}

// severity is NONE when Max < ignore, the ratio severity of +Inf when the
// median is 0, else that of Max/Median.
func (d Distribution) severity(ratio Thresholds, ignore int64) Severity {
	if d.Max < ignore {
		return None
	}
	if d.Median == 0 {
		return ratio.Ascending(math.MaxInt64)
	}
	return ratio.Ascending(float64(d.Max) / float64(d.Median))
}

func (d Distribution) format(f func(int64) string) string {
	return "min: " + f(d.Min) + ", p25: " + f(d.P25) + ", median: " + f(d.Median) +
		", p75: " + f(d.P75) + ", max: " + f(d.Max)
}

// Apply implements Heuristic.
func (h *SparkExecutors) Apply(j *job.Job) Result {
	if j.Spark == nil || len(j.Spark.Executors) == 0 {
		return Result{Severity: None, Details: []Detail{detail("Executors", "none reported")}}
	}
	var mem, dur, in, shRead, shWrite []int64
	var allocated, used, taskTime int64
	for _, e := range j.Spark.Executors {
		mem = append(mem, e.MemoryUsedBytes)
		dur = append(dur, e.TotalDurationMs)
		in = append(in, e.TotalInputBytes)
		shRead = append(shRead, e.TotalShuffleReadBytes)
		shWrite = append(shWrite, e.TotalShuffleWriteBytes)
		allocated += e.MaxMemoryBytes
		used += e.MemoryUsedBytes
		taskTime += e.TotalDurationMs
	}
	dMem, dDur, dIn, dRead, dWrite := Distribute(mem), Distribute(dur), Distribute(in), Distribute(shRead), Distribute(shWrite)
	sev := MaxSeverity(
		dMem.severity(h.ratio, h.ignoreBytes),
		dDur.severity(h.ratio, h.ignoreMillis),
		dIn.severity(h.ratio, h.ignoreBytes),
		dRead.severity(h.ratio, h.ignoreBytes),
		dWrite.severity(h.ratio, h.ignoreBytes))
	util := 0.0
	if allocated > 0 {
		util = float64(used) / float64(allocated)
	}
	return Result{Severity: sev, Details: []Detail{
		detail("Total executor storage memory allocated", BytesToString(allocated)),
		detail("Total executor storage memory used", BytesToString(used)),
		detail("Executor storage memory utilization rate", strconv.FormatFloat(util, 'f', 3, 64)),
		detail("Executor storage memory used distribution", dMem.format(BytesToString)),
		detail("Executor task time distribution", dDur.format(ReadableTimespan)),
		detail("Executor task time sum", itoa(taskTime/1000)),
		detail("Executor input bytes distribution", dIn.format(BytesToString)),
		detail("Executor shuffle read bytes distribution", dRead.format(BytesToString)),
		detail("Executor shuffle write bytes distribution", dWrite.format(BytesToString)),
	}}
}

// joinLines joins non-empty lines with "\n".
func joinLines(lines []string) string { return strings.Join(lines, "\n") }
