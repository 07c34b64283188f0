package heuristics

import (
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"

	"github.com/stratatrace/strata/collector/job"
)

// NoDataName is the name of the synthetic result of a job without data.
const NoDataName = "No Data Received"

// Engine runs the registered heuristics enabled by a Config. It is safe
// for concurrent use: heuristics are pure and the engine is never written
// after NewEngine.
type Engine struct {
	cfg   *Config
	jobs  []bound
	trace []boundTrace
}

type bound struct {
	typ     job.Type
	exclude []string
	h       Heuristic
}

type boundTrace struct {
	exclude []string
	h       TraceHeuristic
}

// NewEngine validates cfg (DefaultConfig when nil) and builds the enabled
// heuristics.
func NewEngine(cfg *Config) (*Engine, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg}
	for _, r := range registry {
		c := r.common(cfg)
		if !c.enabled() {
			continue
		}
		if r.build != nil {
			e.jobs = append(e.jobs, bound{typ: r.typ, exclude: c.ExcludeJobTypes, h: r.build(cfg)})
		}
		if r.buildTrace != nil {
			e.trace = append(e.trace, boundTrace{exclude: c.ExcludeJobTypes, h: r.buildTrace(cfg)})
		}
	}
	return e, nil
}

// Heuristics returns the names of the enabled heuristics for an
// application type, in result order; cross-layer ones when t is "".
func (e *Engine) Heuristics(t job.Type) []string {
	var out []string
	if t == "" {
		for _, b := range e.trace {
			out = append(out, b.h.Name())
		}
		return out
	}
	for _, b := range e.jobs {
		if b.typ == t {
			out = append(out, b.h.Name())
		}
	}
	return out
}

// JobType returns the job type of j per the configured rules (§1.6).
func (e *Engine) JobType(j *job.Job) string { return matchJobType(e.cfg.JobTypes, j) }

// Metrics computes the four job metrics of j.
func (e *Engine) Metrics(j *job.Job) Metrics {
	return ComputeMetrics(j, e.cfg.Metrics.AllocatedMemoryWasteBufferPercentage)
}

// Analyze runs the heuristics of j's type and returns the job's result:
// metrics, the non-skipped heuristic results in order, severity = the
// highest result severity, score = the sum of result scores (§1.4). A
// MapReduce job that succeeded with no tasks gets only the synthetic "No
// Data Received" result. AnalyzedUnixMs is left for the caller to set.
func (e *Engine) Analyze(j *job.Job) *stratav1.JobResult {
	return e.AnalyzeWithTrace(j, nil)
}

// AnalyzeWithTrace is Analyze plus the cross-layer heuristics when ts
// describes the same application (ts.AppID == j.AppID).
func (e *Engine) AnalyzeWithTrace(j *job.Job, ts *TraceSummary) *stratav1.JobResult {
	res := &stratav1.JobResult{
		JobId:        j.ID,
		Type:         string(j.Type),
		Name:         j.Name,
		User:         j.User,
		Queue:        j.Queue,
		AppId:        j.AppID,
		StartUnixMs:  j.SubmitMs,
		FinishUnixMs: j.FinishMs,
		Source:       j.Source,
		Warnings:     append([]string(nil), j.Warnings...),
	}
	if res.StartUnixMs <= 0 {
		res.StartUnixMs = j.StartMs
	}
	m := e.Metrics(j)
	res.Metrics = &stratav1.JobMetrics{
		UsedGbHours:   m.UsedGBHours(),
		WastedGbHours: m.WastedGBHours(),
		RuntimeMs:     m.RuntimeMs,
		WaitMs:        m.DelayMs,
	}
	var results []named
	if j.Type == job.MapReduce && j.Succeeded() && len(j.MapTasks) == 0 && len(j.ReduceTasks) == 0 {
		results = append(results, named{NoDataName, Result{Severity: Low, Details: []Detail{
			detail("No Data Received", "the job history has no tasks to analyse"),
		}}})
	} else {
		jt := e.JobType(j)
		for _, b := range e.jobs {
			if b.typ != j.Type || excluded(b.exclude, jt) {
				continue
			}
			if r := b.h.Apply(j); !r.Skip {
				results = append(results, named{b.h.Name(), r})
			}
		}
		if ts != nil && ts.AppID != "" && ts.AppID == j.AppID {
			for _, b := range e.trace {
				if excluded(b.exclude, jt) {
					continue
				}
				if r := b.h.ApplyTrace(j, ts); !r.Skip {
					results = append(results, named{b.h.Name(), r})
				}
			}
		}
	}
	sev := None
	for _, r := range results {
		res.Heuristics = append(res.Heuristics, r.proto())
		sev = max(sev, r.Severity)
		res.Score += r.Score
	}
	res.Severity = sev.Proto()
	return res
}

type named struct {
	name string
	Result
}

func (n named) proto() *stratav1.HeuristicResult {
	h := &stratav1.HeuristicResult{Name: n.name, Severity: n.Severity.Proto(), Score: n.Score}
	for _, d := range n.Details {
		h.Details = append(h.Details, &stratav1.HeuristicDetail{Name: d.Name, Value: d.Value})
	}
	return h
}

// excluded reports whether jobType is in the exclude list (exact match, as
// Dr. Elephant's comma split without trimming).
func excluded(list []string, jobType string) bool {
	for _, x := range list {
		if x == jobType {
			return true
		}
	}
	return false
}
