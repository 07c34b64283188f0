package heuristics

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Job Queue Limit vectors (docs/heuristics.md#test-vectors): 66 maps + 1
// empty, 33 reduces + 1 empty, all t=[R,0,0,0,0].
func TestQueueLimitVectors(t *testing.T) {
	c := queueLimit.of(defaults(t))
	h := &QueueLimit{queue: c.Queue, runtime: c.RuntimeSeverityInSec.Scale(1000)}
	mk := func(ms int64, queue string) *job.Job {
		maps := cat(repeat(66, mapTask(ms, nil)), []job.Task{emptyTask(job.MapTask)})
		reds := cat(repeat(33, timedTask(job.ReduceTask, ms, 0, 0, nil)), []job.Task{emptyTask(job.ReduceTask)})
		return mrJob(maps, reds, map[string]string{"mapred.job.queue.name": queue})
	}
	runVectors(t, h, []vector{
		{"JQ-1", mk(870_000, "default"), Critical, 0},
		{"JQ-3", mk(810_000, "default"), Moderate, 0},
		{"JQ-5", mk(720_000, "default"), None, 0},
		{"other queue", mk(870_000, "etl"), None, 0},
	})
	r := h.Apply(mk(870_000, "etl"))
	if v, ok := findDetail(r, "Not Applicable"); !ok || !strings.Contains(v, "etl") {
		t.Errorf("other queue: details %v, want a Not Applicable line naming the queue", r.Details)
	}
	r = h.Apply(mk(870_000, "default"))
	if v, _ := findDetail(r, "Number of map tasks at CRITICAL (over 14 min 30 sec)"); v != "66" {
		t.Errorf("default queue: details %v, want 66 map tasks at CRITICAL", r.Details)
	}
	if c.Enabled == nil || *c.Enabled {
		t.Fatal("job_queue_limit should be disabled by default, as in Dr. Elephant's shipped configuration")
	}
}
