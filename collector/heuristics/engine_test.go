package heuristics

import (
	"slices"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"

	"github.com/stratatrace/strata/collector/job"
)

func newTestEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEngineOrderAndRollUp(t *testing.T) {
	e := newTestEngine(t)
	wantMR := []string{"Mapper Skew", "Mapper GC", "Mapper Time", "Mapper Speed", "Mapper Spill", "Mapper Memory",
		"Reducer Skew", "Reducer GC", "Reducer Time", "Reducer Memory", "Shuffle & Sort", "Exception", "Distributed Cache Limit"}
	if got := e.Heuristics(job.MapReduce); !slices.Equal(got, wantMR) {
		t.Fatalf("MapReduce heuristics %v", got)
	}
	wantSpark := []string{"Spark Configuration", "Spark Executor Metrics", "Spark Job Metrics", "Spark Stage Metrics", "Executor GC"}
	if got := e.Heuristics(job.Spark); !slices.Equal(got, wantSpark) {
		t.Fatalf("Spark heuristics %v", got)
	}

	// MT-5 mappers (CRITICAL, 4004) and SPL-3 style spills on the same tasks.
	c := job.Counters{job.SpilledRecords: 2300, job.MapOutputRecords: 1000}
	j := mrJob(cat(repeat(1000, mapTask(60_000, c)), []job.Task{emptyTask(job.MapTask)}),
		[]job.Task{timedTask(job.ReduceTask, 1000, 0, 0, job.Counters{})}, nil)
	res := e.Analyze(j)
	if res.JobId != j.ID || res.Type != "mapreduce" || res.AppId != j.AppID {
		t.Fatalf("identity: %+v", res)
	}
	var sum int64
	maxSev := stratav1.Severity_SEVERITY_NONE
	names := map[string]*stratav1.HeuristicResult{}
	for _, h := range res.Heuristics {
		sum += h.Score
		maxSev = max(maxSev, h.Severity)
		names[h.Name] = h
	}
	if res.Score != sum || res.Severity != maxSev {
		t.Fatalf("roll-up: score %d (sum %d), severity %v (max %v)", res.Score, sum, res.Severity, maxSev)
	}
	if h := names["Mapper Time"]; h == nil || h.Severity != stratav1.Severity_SEVERITY_CRITICAL || h.Score != 4004 {
		t.Fatalf("Mapper Time: %+v", h)
	}
	if h := names["Mapper Spill"]; h == nil || h.Severity != stratav1.Severity_SEVERITY_MODERATE || h.Score != 2002 {
		t.Fatalf("Mapper Spill: %+v", h)
	}
	if _, ok := names["Exception"]; ok {
		t.Fatal("Exception ran on a succeeded job")
	}
	if _, ok := names["Distributed Cache Limit"]; ok {
		t.Fatal("Distributed Cache Limit ran without cache settings")
	}
	if len(res.Heuristics) != 11 {
		t.Fatalf("%d results, want 11", len(res.Heuristics))
	}
}

func TestEngineFailedAndEmptyJobs(t *testing.T) {
	e := newTestEngine(t)
	j := mrJob([]job.Task{mapTask(1000, job.Counters{})}, nil, nil)
	j.Status, j.Diagnostics = job.Failed, "boom"
	res := e.Analyze(j)
	if len(res.Heuristics) != 1 || res.Heuristics[0].Name != "Exception" ||
		res.Severity != stratav1.Severity_SEVERITY_MODERATE || res.Score != 0 {
		t.Fatalf("failed job: %+v", res)
	}
	// The long text of a detail reaches the wire result.
	if d := res.Heuristics[0].GetDetails(); len(d) != 1 || d[0].GetValue() != "Stacktrace" || d[0].GetDetails() != "boom" {
		t.Fatalf("failed job's Exception details %v, want Stacktrace with the diagnostics as long text", d)
	}
	res = e.Analyze(mrJob(nil, nil, nil))
	if len(res.Heuristics) != 1 || res.Heuristics[0].Name != NoDataName || res.Severity != stratav1.Severity_SEVERITY_LOW {
		t.Fatalf("empty job: %+v", res)
	}
	// Spark jobs are never "empty".
	res = e.Analyze(sparkJob(nil, nil))
	if len(res.Heuristics) != 5 {
		t.Fatalf("empty Spark job: %d results", len(res.Heuristics))
	}
}

func TestEngineJobTypeExclusion(t *testing.T) {
	c := DefaultConfig()
	p := mapperTime.of(c)
	p.ExcludeJobTypes = []string{"OozieLauncher"}
	mapperTime.set(c, p)
	e, err := NewEngine(c)
	if err != nil {
		t.Fatal(err)
	}
	j := mrJob(repeat(3, mapTask(1000, job.Counters{})), nil,
		map[string]string{"oozie.launcher.action.main.class": "x", "mapred.child.java.opts": "-Xmx1g"})
	if got := e.JobType(j); got != "OozieLauncher" {
		t.Fatalf("job type %q", got)
	}
	for _, h := range e.Analyze(j).Heuristics {
		if h.Name == "Mapper Time" {
			t.Fatal("excluded heuristic ran")
		}
	}
	j.Conf = map[string]string{"mapred.child.java.opts": "-Xmx1g", "pig.script": "a"}
	if got := e.JobType(j); got != "Pig" {
		t.Fatalf("job type %q, want Pig (default row last)", got)
	}
	j.Conf = map[string]string{"mapred.child.java.opts": "-Xmx1g"}
	if got := e.JobType(j); got != "HadoopJava" {
		t.Fatalf("job type %q, want HadoopJava", got)
	}
	j.Conf = map[string]string{}
	if got := e.JobType(j); got != UnknownJobType {
		t.Fatalf("job type %q, want Unknown", got)
	}
	j.Conf = map[string]string{"mapred.reducer.class": "voldemort.store.readonly.mr.Foo"}
	if got := e.JobType(j); got != "Voldemort" {
		t.Fatalf("job type %q, want Voldemort", got)
	}
}

// BenchmarkAnalyze100kTasks analyses a synthetic job of 80 000 mappers and
// 20 000 reducers (the 100 000-task history, heuristics only).
func BenchmarkAnalyze100kTasks(b *testing.B) {
	e, err := NewEngine(nil)
	if err != nil {
		b.Fatal(err)
	}
	maps := make([]job.Task, 80_000)
	for i := range maps {
		maps[i] = job.Task{Kind: job.MapTask, Analyzed: "a",
			Counters: job.Counters{job.HDFSBytesRead: int64(i%100) << 20, job.CPUMilliseconds: 1000, job.GCTimeMillis: 10,
				job.PhysicalMemoryBytes: 512 << 20, job.VirtualMemoryBytes: 2 << 30, job.SpilledRecords: 20, job.MapOutputRecords: 10},
			Attempts: []job.Attempt{{ID: "a", StartMs: int64(i), FinishMs: int64(i) + 60_000 + int64(i%7)*1000}}}
	}
	reds := make([]job.Task, 20_000)
	for i := range reds {
		reds[i] = job.Task{Kind: job.ReduceTask, Analyzed: "a", Counters: job.Counters{job.ReduceShuffleBytes: int64(i%10) << 20},
			Attempts: []job.Attempt{{ID: "a", StartMs: 100_000, ShuffleFinishMs: 110_000, SortFinishMs: 111_000, FinishMs: 200_000}}}
	}
	j := mrJob(maps, reds, map[string]string{"mapreduce.map.memory.mb": "2048"})
	j.SubmitMs, j.FinishMs = 1, 300_000
	b.ReportAllocs()
	for b.Loop() {
		e.Analyze(j)
	}
}
