package heuristics

import (
	"strconv"
	"time"

	"github.com/stratatrace/strata/collector/job"
)

// Helpers shared by the MapReduce heuristics. "Tasks" always means the
// whole mapper or reducer array, including tasks without data: n counts
// them for scores and task-count severities, as in Dr. Elephant.

const (
	msPerMinute = 60_000
	mib         = 1 << 20
	// diskReadSpeed is Dr. Elephant's reference disk speed, bytes/s.
	diskReadSpeed = 100 * mib
)

// mapInputBytes is a mapper's input: HDFS + S3 + S3A + S3N bytes read.
func mapInputBytes(c job.Counters) int64 {
	return c.Get(job.HDFSBytesRead) + c.Get(job.S3BytesRead) + c.Get(job.S3ABytesRead) + c.Get(job.S3NBytesRead)
}

// tasksOf returns the job's map or reduce tasks.
func tasksOf(j *job.Job, kind job.TaskKind) []job.Task {
	if kind == job.ReduceTask {
		return j.ReduceTasks
	}
	return j.MapTasks
}

// withTimeAndCounters calls fn for every task that has both time data and
// counters.
func withTimeAndCounters(tasks []job.Task, fn func(t *job.Task, tv job.Times)) {
	for i := range tasks {
		t := &tasks[i]
		if !t.HasCounters() {
			continue
		}
		if tv, ok := t.Times(); ok {
			fn(t, tv)
		}
	}
}

// minutes scales thresholds given in minutes to ms.
func minutes(t Thresholds) Thresholds { return t.Scale(msPerMinute) }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// ftoa formats a ratio the way Java prints a double.
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// withFactor appends a DescribeFactor string when there is one.
func withFactor(s, factor string) string {
	if factor == "" {
		return s
	}
	return s + " " + factor
}

// clock formats ms as HH:MM:SS, or "N msec" below one second.
func clock(ms int64) string {
	if ms < 1000 {
		return itoa(ms) + " msec"
	}
	d := time.Duration(ms) * time.Millisecond
	h := int64(d / time.Hour)
	m := int64(d/time.Minute) % 60
	s := int64(d/time.Second) % 60
	return pad2(h) + ":" + pad2(m) + ":" + pad2(s)
}

func pad2(v int64) string {
	if v < 10 {
		return "0" + itoa(v)
	}
	return itoa(v)
}
