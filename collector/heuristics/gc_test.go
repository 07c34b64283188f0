package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper GC / Reducer GC vectors (docs/heuristics.md#test-vectors): 100 tasks
// t=[runtime,0,0,0,0] with CPU and GC counters, +1 empty.
func TestGCVectors(t *testing.T) {
	c := defaults(t)
	mk := func(kind job.TaskKind, runtime, cpu, gc int64) *job.Job {
		tasks := cat(repeat(100, timedTask(kind, runtime, 0, 0, job.Counters{job.CPUMilliseconds: cpu, job.GCTimeMillis: gc})),
			[]job.Task{emptyTask(kind)})
		if kind == job.MapTask {
			return mrJob(tasks, nil, nil)
		}
		return mrJob(nil, tasks, nil)
	}
	for _, kind := range []job.TaskKind{job.MapTask, job.ReduceTask} {
		t.Run(string(kind), func(t *testing.T) {
			runVectors(t, newGC(kind, mapperGC.of(c)), []vector{
				{"GC-1", mk(kind, 1_000_000, 50_000, 2_000), Critical, 404},
				{"GC-3", mk(kind, 1_000_000, 50_000, 1_000), Moderate, 202},
				{"GC-5", mk(kind, 100_000, 50_000, 2_000), None, 0},
				{"no tasks", mk(kind, 0, 0, 0), None, 0},
			})
		})
	}
}

func TestGCZeroCPU(t *testing.T) {
	c := defaults(t)
	// avg CPU 0 with GC > 0: +Inf ratio, CRITICAL before the runtime cap.
	j := mrJob(repeat(3, mapTask(20*60_000, job.Counters{job.GCTimeMillis: 10})), nil, nil)
	r := newGC(job.MapTask, mapperGC.of(c)).Apply(j)
	if r.Severity != Critical {
		t.Fatalf("severity %v, want CRITICAL", r.Severity)
	}
	if v, _ := findDetail(r, "Task GC/CPU ratio"); v != "0" {
		t.Fatalf("ratio detail %q, want 0", v)
	}
	// 0/0: NaN ⇒ NONE.
	j = mrJob(repeat(3, mapTask(20*60_000, job.Counters{})), nil, nil)
	if r := newGC(job.MapTask, mapperGC.of(c)).Apply(j); r.Severity != None {
		t.Fatalf("severity %v, want NONE", r.Severity)
	}
}
