package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Builders for the test vectors (docs/heuristics.md#test-vectors). "t=[total,
// shuffle, sort, 0, 0]" becomes an analysed attempt starting at 0; "+1 empty"
// is a task with neither an attempt nor counters.

const mb1 = int64(1 << 20)

func timedTask(kind job.TaskKind, total, shuffle, sort int64, c job.Counters) job.Task {
	a := job.Attempt{ID: "a", FinishMs: total}
	if shuffle != 0 || sort != 0 {
		a.ShuffleFinishMs, a.SortFinishMs = shuffle, shuffle+sort
	}
	return job.Task{Kind: kind, Analyzed: "a", Attempts: []job.Attempt{a}, Counters: c}
}

func mapTask(total int64, c job.Counters) job.Task { return timedTask(job.MapTask, total, 0, 0, c) }

func emptyTask(kind job.TaskKind) job.Task { return job.Task{Kind: kind} }

func repeat(n int, t job.Task) []job.Task {
	out := make([]job.Task, n)
	for i := range out {
		out[i] = t
	}
	return out
}

func cat(groups ...[]job.Task) []job.Task {
	var out []job.Task
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func mrJob(maps, reduces []job.Task, conf map[string]string) *job.Job {
	if conf == nil {
		conf = map[string]string{}
	}
	return &job.Job{ID: "job_1_0001", AppID: "application_1_0001", Type: job.MapReduce, Status: job.Succeeded,
		Conf: conf, MapTasks: maps, ReduceTasks: reduces}
}

func defaults(t *testing.T) *Config {
	t.Helper()
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

type vector struct {
	id    string
	job   *job.Job
	sev   Severity
	score int64
}

func runVectors(t *testing.T, h Heuristic, vs []vector) {
	t.Helper()
	for _, v := range vs {
		t.Run(v.id, func(t *testing.T) {
			r := h.Apply(v.job)
			if r.Skip {
				t.Fatalf("%T: skipped", h)
			}
			if r.Severity != v.sev || r.Score != v.score {
				t.Fatalf("%T = %v score %d, want %v score %d; details %v", h, r.Severity, r.Score, v.sev, v.score, r.Details)
			}
		})
	}
}

func findDetail(r Result, name string) (string, bool) {
	d, ok := findLine(r, name)
	return d.Value, ok
}

// wantDetails checks the values of r's details named in want.
func wantDetails(t *testing.T, r Result, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if v, _ := findDetail(r, name); v != w {
			t.Errorf("%s = %q, want %q", name, v, w)
		}
	}
}

// findLine returns the detail called name, long text included.
func findLine(r Result, name string) (Detail, bool) {
	for _, d := range r.Details {
		if d.Name == name {
			return d, true
		}
	}
	return Detail{}, false
}

// set replaces the parameters of d in c.
func (d def[P]) set(c *Config, p P) { c.params[d.Key] = p }
