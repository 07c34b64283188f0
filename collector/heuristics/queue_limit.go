package heuristics

import "github.com/stratatrace/strata/collector/job"

// Job Queue Limit (§5.11; disabled by default as in Dr. Elephant's shipped
// configuration): on the limited queue, tasks whose run time approaches
// the queue's 15-minute kill limit. Runs for failed jobs too. Score 0.

func init() {
	register(entry{key: "job_queue_limit", name: "Job Queue Limit", typ: job.MapReduce, order: orderQueueLimit,
		common: func(c *Config) Common { return c.QueueLimit.Common },
		build: func(c *Config) Heuristic {
			return &QueueLimit{queue: c.QueueLimit.Queue, runtime: c.QueueLimit.RuntimeSeverityInSec.Scale(1000)}
		}})
}

// QueueLimit is the Job Queue Limit heuristic.
type QueueLimit struct {
	queue   string
	runtime Thresholds // ms
}

// Name implements Heuristic.
func (h *QueueLimit) Name() string { return "Job Queue Limit" }

// Apply implements Heuristic. The queue is mapred.job.queue.name, else the
// job's own queue.
func (h *QueueLimit) Apply(j *job.Job) Result {
	q, ok := j.Conf["mapred.job.queue.name"]
	if !ok {
		q = j.Queue
	}
	if q != h.queue {
		return Result{Severity: None, Details: []Detail{detail("Queue "+q, "Not Applicable")}}
	}
	sev := None
	var over int64
	for _, tasks := range [][]job.Task{j.MapTasks, j.ReduceTasks} {
		for i := range tasks {
			if tv, ok := tasks[i].Times(); ok {
				s := h.runtime.Ascending(float64(tv.TotalMs))
				sev = max(sev, s)
				if s > None {
					over++
				}
			}
		}
	}
	return Result{Severity: sev, Details: []Detail{
		detail("Queue", q),
		detail("Tasks near the queue's time limit", itoa(over)),
	}}
}
