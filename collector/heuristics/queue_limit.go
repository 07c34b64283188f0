package heuristics

import "github.com/stratatrace/strata/collector/job"

// Job Queue Limit (docs/heuristics.md#job-queue-limit; disabled by default
// as in Dr. Elephant's shipped configuration): on the limited queue, tasks
// whose run time approaches the queue's 15-minute kill limit. Runs for
// failed jobs too. Score 0.

// QueueLimitParams are the parameters of Job Queue Limit.
type QueueLimitParams struct {
	Common               `yaml:",inline"`
	Queue                string     `yaml:"queue" help:"the queue whose tasks are killed after 15 minutes"`
	RuntimeSeverityInSec Thresholds `yaml:"runtime_severity_in_sec" check:"asc" help:"task run time: 15 min − 4, 3, 2, 1 × 30 s"`
}

var queueLimit = register(def[QueueLimitParams]{Key: "job_queue_limit", Name: "Job Queue Limit", Type: job.MapReduce, Order: 114,
	Defaults: QueueLimitParams{Common: Common{Enabled: new(bool)}, Queue: "default",
		RuntimeSeverityInSec: Thresholds{780, 810, 840, 870}},
	Build: func(p QueueLimitParams, _ *Config) Heuristic {
		return &QueueLimit{queue: p.Queue, runtime: p.RuntimeSeverityInSec.Scale(1000)}
	}})

// QueueLimit is the Job Queue Limit heuristic.
type QueueLimit struct {
	queue   string
	runtime Thresholds // ms
}

// Apply implements Heuristic. The queue is mapred.job.queue.name, else the
// job's own queue.
func (h *QueueLimit) Apply(j *job.Job) Result {
	q, ok := j.Conf["mapred.job.queue.name"]
	if !ok {
		q = j.Queue
	}
	if q != h.queue {
		return Result{Severity: None, Details: []Detail{detail("Not Applicable", "The heuristic only applies to queue "+h.queue+", not "+q+".")}}
	}
	sev := None
	d := []Detail{
		detail("Queue", q),
		detail("Number of map tasks", itoa(int64(len(j.MapTasks)))),
		detail("Number of reduce tasks", itoa(int64(len(j.ReduceTasks)))),
	}
	for _, kind := range []struct {
		name  string
		tasks []job.Task
	}{{"map", j.MapTasks}, {"reduce", j.ReduceTasks}} {
		var severe, critical int64
		for i := range kind.tasks {
			if tv, ok := kind.tasks[i].Times(); ok {
				s := h.runtime.Ascending(float64(tv.TotalMs))
				sev = max(sev, s)
				switch s {
				case Severe:
					severe++
				case Critical:
					critical++
				}
			}
		}
		d = append(d,
			detail("Number of "+kind.name+" tasks at SEVERE ("+ReadableTimespan(int64(h.runtime[2]))+" to "+ReadableTimespan(int64(h.runtime[3]))+")", itoa(severe)),
			detail("Number of "+kind.name+" tasks at CRITICAL (over "+ReadableTimespan(int64(h.runtime[3]))+")", itoa(critical)))
	}
	return Result{Severity: sev, Details: d}
}
