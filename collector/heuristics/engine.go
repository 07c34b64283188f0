package heuristics

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
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
	name    string
	typ     job.Type
	exclude []string
	h       Heuristic
}

type boundTrace struct {
	name    string
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
		p := cfg.params[r.key]
		if r.build != nil {
			e.jobs = append(e.jobs, bound{name: r.name, typ: r.typ, exclude: c.ExcludeJobTypes, h: r.build(p, cfg)})
		}
		if r.buildTrace != nil {
			e.trace = append(e.trace, boundTrace{name: r.name, exclude: c.ExcludeJobTypes, h: r.buildTrace(p)})
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
			out = append(out, b.name)
		}
		return out
	}
	for _, b := range e.jobs {
		if b.typ == t {
			out = append(out, b.name)
		}
	}
	return out
}

// JobType returns the job type of j per the configured rules
// (docs/heuristics.md#job-types).
func (e *Engine) JobType(j *job.Job) string { return matchJobType(e.cfg.JobTypes, j) }

// Metrics computes the four job metrics of j.
func (e *Engine) Metrics(j *job.Job) Metrics {
	return ComputeMetrics(j, e.cfg.Metrics.AllocatedMemoryWasteBufferPercentage)
}

// Analyze runs the heuristics of j's type and returns the job's result:
// metrics, the non-skipped heuristic results in order, severity = the
// highest result severity, score = the sum of result scores
// (docs/heuristics.md#severity-and-score). A
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
	// Heuristics are pure functions of the job: they and the metrics run on
	// every core, and their results are put back in registry order.
	metricsDone := make(chan Metrics, 1)
	go func() { metricsDone <- e.Metrics(j) }()
	results := e.apply(j, ts)
	m := <-metricsDone
	res.Metrics = &stratav1.JobMetrics{
		UsedGbHours:   m.UsedGBHours(),
		WastedGbHours: m.WastedGBHours(),
		RuntimeMs:     m.RuntimeMs,
		WaitMs:        m.DelayMs,
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

// apply runs the heuristics that apply to j (and the cross-layer ones when
// ts describes j's application) and returns the results that were not
// skipped, in registry order.
func (e *Engine) apply(j *job.Job, ts *TraceSummary) []named {
	if j.Type == job.MapReduce && j.Succeeded() && len(j.MapTasks) == 0 && len(j.ReduceTasks) == 0 {
		return []named{{NoDataName, Result{Severity: Low, Details: []Detail{
			explained(NoDataName, "", "The job history has no tasks to analyse."),
		}}}}
	}
	jt := e.JobType(j)
	var runs []func() named
	for _, b := range e.jobs {
		if b.typ != j.Type || excluded(b.exclude, jt) {
			continue
		}
		runs = append(runs, func() named { return named{b.name, b.h.Apply(j)} })
	}
	if ts != nil && ts.AppID != "" && ts.AppID == j.AppID {
		for _, b := range e.trace {
			if excluded(b.exclude, jt) {
				continue
			}
			runs = append(runs, func() named { return named{b.name, b.h.ApplyTrace(j, ts)} })
		}
	}
	out := make([]named, len(runs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(runs)); i = next.Add(1) - 1 {
				out[i] = runs[i]()
			}
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(out, func(n named) bool { return n.Skip })
}

type named struct {
	name string
	Result
}

func (n named) proto() *stratav1.HeuristicResult {
	h := &stratav1.HeuristicResult{Name: n.name, Severity: n.Severity.Proto(), Score: n.Score}
	for _, d := range n.Details {
		h.Details = append(h.Details, &stratav1.HeuristicDetail{Name: d.Name, Value: d.Value, Details: d.Text})
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
