package heuristics

import (
	"strconv"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Memory / Reducer Memory vectors (docs/heuristics.md#test-vectors):
// 100 tasks t=0s with PHYSICAL_MEMORY_BYTES = avg MB, container from the
// conf, +1 empty.
func TestMemoryVectors(t *testing.T) {
	c := defaults(t)
	mk := func(kind job.TaskKind, key string, physMB, containerMB int64) *job.Job {
		tasks := cat(repeat(100, timedTask(kind, 0, 0, 0, job.Counters{job.PhysicalMemoryBytes: physMB * mb1})),
			[]job.Task{emptyTask(kind)})
		conf := map[string]string{key: strconv.FormatInt(containerMB, 10)}
		if kind == job.MapTask {
			return mrJob(tasks, nil, conf)
		}
		return mrJob(nil, tasks, conf)
	}
	for _, tc := range []struct {
		kind job.TaskKind
		key  string
	}{{job.MapTask, "mapreduce.map.memory.mb"}, {job.ReduceTask, "mapreduce.reduce.memory.mb"}} {
		h := newMemory(tc.kind, tc.key, mapperMemory.of(c))
		t.Run(string(tc.kind), func(t *testing.T) {
			runVectors(t, h, []vector{
				{"MEM-1", mk(tc.kind, tc.key, 2048, 8192), Critical, 404},
				{"MEM-3", mk(tc.kind, tc.key, 4096, 8192), Moderate, 202},
				{"MEM-5", mk(tc.kind, tc.key, 256, 2048), None, 0},
			})
		})
	}
}

func TestMemoryContainerConf(t *testing.T) {
	h := newMemory(job.MapTask, "mapreduce.map.memory.mb", mapperMemory.of(defaults(t)))
	for _, tc := range []struct {
		conf map[string]string
		want int64
	}{
		{map[string]string{}, 2048 * mb1},
		{map[string]string{"mapreduce.map.memory.mb": "4096"}, 4096 * mb1},
		{map[string]string{"mapreduce.map.memory.mb": "${other}", "other": "3072"}, 3072 * mb1},
		{map[string]string{"mapreduce.map.memory.mb": "lots"}, 2048 * mb1},
	} {
		if got := h.containerBytes(tc.conf); got != tc.want {
			t.Errorf("containerBytes(%v) = %d, want %d", tc.conf, got, tc.want)
		}
	}
}

func TestMemoryFromSplits(t *testing.T) {
	// A task whose counters lack PHYSICAL_MEMORY_BYTES uses its splits.
	splits := &job.ProgressSplits{PhysMemKbytes: []int64{1 << 20, 2 << 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}
	task := job.Task{Kind: job.MapTask, Analyzed: "a", Counters: job.Counters{},
		Attempts: []job.Attempt{{ID: "a", Splits: splits}}}
	j := mrJob(repeat(10, task), nil, map[string]string{"mapreduce.map.memory.mb": "8192"})
	r := newMemory(job.MapTask, "mapreduce.map.memory.mb", mapperMemory.of(defaults(t))).Apply(j)
	if v, _ := findDetail(r, "Avg Physical Memory (MB)"); v != "2048" {
		t.Fatalf("avg physical %q, want 2048 (details %v)", v, r.Details)
	}
	if r.Severity != Critical {
		t.Fatalf("severity %v, want CRITICAL", r.Severity)
	}
}
