package heuristics

import (
	"math"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// M-1 (docs/heuristics.md#test-vectors): one task group, container 4096 MB,
// ideal start 1463218501117.
func TestTaskGroupResourcesM1(t *testing.T) {
	c := job.Counters{job.PhysicalMemoryBytes: 655_577_088, job.VirtualMemoryBytes: 3_051_589_632}
	task0 := job.Task{Kind: job.MapTask, Counters: c, Analyzed: "a",
		Attempts: []job.Attempt{{ID: "a", StartMs: 1464218501117, FinishMs: 1464218534148}}}
	task1 := mapTask(0, c)
	task2 := emptyTask(job.MapTask)
	used, wasted, delay, _, counted := taskGroupResources([]job.Task{task0, task1, task2}, 4096, 1463218501117)
	if delay != 1_000_000_000 || used != 135_168 || wasted != 66_627 || counted != 2 {
		t.Fatalf("M-1: used %d wasted %d delay %d counted %d; want 135168, 66627, 1000000000, 2", used, wasted, delay, counted)
	}
	if u, w, d, _, _ := taskGroupResources(nil, 4096, 0); u != 0 || w != 0 || d != 0 {
		t.Fatalf("empty group: %d %d %d", u, w, d)
	}
}

// The worked examples of Dr. Elephant's metrics documentation: 4 mappers
// of {12, 15, 20, 30} min and 4 reducers of {10, 12, 15, 18} min in 4 GB
// containers use 8.799 GB·h (the doc adds truncated parts: exactly 8.8);
// a job submitted at 1461837302868 and finished at 1461840952182 ran
// 3 649 314 ms ≈ 1.01 h.
func TestMetricsWorkedExamples(t *testing.T) {
	const submit, m = int64(1461837302868), int64(60_000)
	mem := job.Counters{job.PhysicalMemoryBytes: 1 << 30, job.VirtualMemoryBytes: 2 << 30}
	task := func(kind job.TaskKind, start, minutes int64) job.Task {
		return job.Task{Kind: kind, Counters: mem, Analyzed: "a",
			Attempts: []job.Attempt{{ID: "a", StartMs: start, FinishMs: start + minutes*m}}}
	}
	var maps, reds []job.Task
	for _, d := range []int64{12, 15, 20, 30} {
		maps = append(maps, task(job.MapTask, submit, d))
	}
	for _, d := range []int64{10, 12, 15, 18} {
		reds = append(reds, task(job.ReduceTask, submit+30*m, d))
	}
	j := mrJob(maps, reds, map[string]string{"mapreduce.map.memory.mb": "4096", "mapreduce.reduce.memory.mb": "4096"})
	j.SubmitMs, j.StartMs, j.FinishMs = submit, submit+1000, 1461840952182
	got := ComputeMetrics(j, 0.5)
	if math.Abs(got.UsedGBHours()-8.799) > 0.0015 {
		t.Errorf("used = %.4f GB·h, want 8.799 (±truncation)", got.UsedGBHours())
	}
	if got.RuntimeMs != 3_649_314 {
		t.Errorf("runtime = %d ms, want 3649314", got.RuntimeMs)
	}
	if h := float64(got.RuntimeMs) / 3_600_000; math.Abs(h-1.01) > 0.005 {
		t.Errorf("runtime = %.3f h, want ≈1.01", h)
	}
	// Peak 1 GiB ⇒ need 1024 MB; wasted per MB·s = 4096 − 1536 = 2560 of 4096.
	if want := got.UsedMBSeconds / 4096 * 2560; got.WastedMBSeconds != want {
		t.Errorf("wasted = %d MB·s, want %d", got.WastedMBSeconds, want)
	}
	// Mappers waited 0; reducers started at 30 min = the last mapper's finish.
	if got.DelayMs != 0 {
		t.Errorf("delay = %d, want 0", got.DelayMs)
	}
}

func TestMapReduceMetricsEdges(t *testing.T) {
	// Zero memory counters (local runs): wasted = used.
	zero := job.Counters{job.PhysicalMemoryBytes: 0, job.VirtualMemoryBytes: 0}
	j := mrJob([]job.Task{{Kind: job.MapTask, Counters: zero, Analyzed: "a",
		Attempts: []job.Attempt{{ID: "a", StartMs: 1000, FinishMs: 11_500}}}}, nil,
		map[string]string{"mapreduce.map.memory.mb": "1024"})
	got := ComputeMetrics(j, 0.5)
	if got.UsedMBSeconds != 10*1024 || got.WastedMBSeconds != got.UsedMBSeconds {
		t.Errorf("zero memory: used %d wasted %d, want 10240 both", got.UsedMBSeconds, got.WastedMBSeconds)
	}
	// No counted mapper ⇒ reducer delay 0; missing container ⇒ 2048 MB.
	red := job.Task{Kind: job.ReduceTask, Counters: zero, Analyzed: "a",
		Attempts: []job.Attempt{{ID: "a", StartMs: 5000, FinishMs: 7000}}}
	j = mrJob(nil, []job.Task{red}, nil)
	got = ComputeMetrics(j, 0.5)
	if got.DelayMs != 0 || got.UsedMBSeconds != 2*2048 {
		t.Errorf("reducers only: delay %d used %d", got.DelayMs, got.UsedMBSeconds)
	}
	// Progress splits stand in for missing counters.
	split := job.Task{Kind: job.MapTask, Analyzed: "a", Attempts: []job.Attempt{{ID: "a", StartMs: 0, FinishMs: 10_000,
		Splits: &job.ProgressSplits{PhysMemKbytes: []int64{512 << 10, 1 << 20}}}}}
	j = mrJob([]job.Task{split}, nil, map[string]string{"mapreduce.map.memory.mb": "2048"})
	got = ComputeMetrics(j, 0.5)
	if got.UsedMBSeconds != 20480 || got.WastedMBSeconds != (2048-1536)*10 {
		t.Errorf("splits: used %d wasted %d, want 20480 and %d", got.UsedMBSeconds, got.WastedMBSeconds, (2048-1536)*10)
	}
}

// SA-1 and SA-3 (docs/heuristics.md#test-vectors).
func TestSparkMetricsVectors(t *testing.T) {
	app := &job.SparkApp{
		Attempts:  []job.SparkAttempt{{StartMs: 0, EndMs: 8_000_000}},
		Executors: []job.SparkExecutor{{ID: "1", TotalDurationMs: 1_000_000}, {ID: "2", TotalDurationMs: 3_000_000}},
	}
	j := sparkJob(map[string]string{"spark.executor.instances": "2", "spark.executor.memory": "4g"}, app)
	got := ComputeMetrics(j, 0.5)
	if got.UsedMBSeconds != 65_536_000 || got.WastedMBSeconds != 40_960_000 || got.DelayMs != 0 {
		t.Errorf("SA-1: %+v, want used 65536000 wasted 40960000 delay 0", got)
	}
	got = ComputeMetrics(sparkJob(nil, app), 0.5)
	if got.UsedMBSeconds != 0 || got.WastedMBSeconds != 0 || got.DelayMs != 0 {
		t.Errorf("SA-3: %+v, want zeros", got)
	}
	app.Attempts[0].EndMs = -1
	if got := ComputeMetrics(j, 0.5); got.UsedMBSeconds != 0 {
		t.Errorf("negative duration: %+v", got)
	}
}
