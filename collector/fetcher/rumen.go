package fetcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/stratatrace/strata/collector/job"
)

// Rumen traces (Hadoop's rumen tool, also Gridmix/SLS inputs) are a stream
// of JSON job objects, concatenated without separators. Counters are
// attempt fields (-1 = unknown); resource usage comes from
// resourceUsageMetrics and the attempt's progress splits.

type rumenJob struct {
	JobID         string         `json:"jobID"`
	User          string         `json:"user"`
	JobName       string         `json:"jobName"`
	Queue         string         `json:"queue"`
	SubmitTime    int64          `json:"submitTime"`
	LaunchTime    int64          `json:"launchTime"`
	FinishTime    int64          `json:"finishTime"`
	Outcome       string         `json:"outcome"`
	MapTasks      []rumenTask    `json:"mapTasks"`
	ReduceTasks   []rumenTask    `json:"reduceTasks"`
	JobProperties map[string]any `json:"jobProperties"`
	JobMapMB      int64          `json:"jobMapMB"`
	JobReduceMB   int64          `json:"jobReduceMB"`
}

type rumenTask struct {
	TaskID     string         `json:"taskID"`
	TaskType   string         `json:"taskType"`
	TaskStatus string         `json:"taskStatus"`
	StartTime  int64          `json:"startTime"`
	FinishTime int64          `json:"finishTime"`
	Attempts   []rumenAttempt `json:"attempts"`
}

type rumenAttempt struct {
	AttemptID       string `json:"attemptID"`
	Result          string `json:"result"`
	HostName        string `json:"hostName"`
	StartTime       int64  `json:"startTime"`
	FinishTime      int64  `json:"finishTime"`
	ShuffleFinished int64  `json:"shuffleFinished"`
	SortFinished    int64  `json:"sortFinished"`

	HDFSBytesRead       *int64 `json:"hdfsBytesRead"`
	HDFSBytesWritten    *int64 `json:"hdfsBytesWritten"`
	FileBytesRead       *int64 `json:"fileBytesRead"`
	FileBytesWritten    *int64 `json:"fileBytesWritten"`
	MapInputRecords     *int64 `json:"mapInputRecords"`
	MapOutputBytes      *int64 `json:"mapOutputBytes"`
	MapOutputRecords    *int64 `json:"mapOutputRecords"`
	CombineInputRecords *int64 `json:"combineInputRecords"`
	ReduceInputGroups   *int64 `json:"reduceInputGroups"`
	ReduceInputRecords  *int64 `json:"reduceInputRecords"`
	ReduceShuffleBytes  *int64 `json:"reduceShuffleBytes"`
	ReduceOutputRecords *int64 `json:"reduceOutputRecords"`
	SpilledRecords      *int64 `json:"spilledRecords"`

	ResourceUsage *struct {
		CumulativeCPUUsage  int64 `json:"cumulativeCpuUsage"`
		VirtualMemoryUsage  int64 `json:"virtualMemoryUsage"`
		PhysicalMemoryUsage int64 `json:"physicalMemoryUsage"`
		HeapUsage           int64 `json:"heapUsage"`
	} `json:"resourceUsageMetrics"`

	ClockSplits   []int64 `json:"clockSplits"`
	CPUUsages     []int64 `json:"cpuUsages"`
	VmemKbytes    []int64 `json:"vmemKbytes"`
	PhysMemKbytes []int64 `json:"physMemKbytes"`
}

// parseRumen streams the jobs of a rumen trace to fn, one at a time. Each
// job is handed over only after the next one decoded (or the stream ended
// cleanly), so a damaged tail becomes a warning on the last good job. A
// stream whose first job does not decode is an error.
func parseRumen(r io.Reader, source string, fn func(*job.Job) error) error {
	dec := json.NewDecoder(r)
	var pending *job.Job
	n := 0
	for {
		var rj rumenJob
		err := dec.Decode(&rj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && rj.JobID == "" {
			err = fmt.Errorf("%w: object %d has no jobID", ErrUnknownFormat, n+1)
		}
		if err != nil {
			var typeErr *json.UnmarshalTypeError
			if pending == nil && errors.As(err, &typeErr) {
				// JSON, but not shaped like a rumen job.
				return fmt.Errorf("read rumen trace: %w: %v", ErrUnknownFormat, err)
			}
			if pending == nil {
				return fmt.Errorf("read rumen trace: %w", err)
			}
			pending.Warnings = append(pending.Warnings,
				fmt.Sprintf("rumen trace damaged or truncated after job %d (%s): %v", n, pending.ID, err))
			break
		}
		if pending != nil {
			if err := fn(pending); err != nil {
				return err
			}
		}
		n++
		pending = rj.toJob(source)
	}
	if pending == nil {
		return fmt.Errorf("read rumen trace: %w: no jobs", ErrNoJob)
	}
	return fn(pending)
}

func (rj *rumenJob) toJob(source string) *job.Job {
	j := &job.Job{
		ID: rj.JobID, AppID: appIDFromJobID(rj.JobID), Type: job.MapReduce,
		Name: rj.JobName, User: rj.User, Queue: rj.Queue,
		SubmitMs: rj.SubmitTime, StartMs: rj.LaunchTime, FinishMs: rj.FinishTime,
		Status: rumenStatus(rj.Outcome), Source: source, Conf: map[string]string{},
	}
	for k, v := range rj.JobProperties {
		switch v := v.(type) {
		case string:
			j.Conf[k] = v
		case nil:
		default:
			b, _ := json.Marshal(v)
			j.Conf[k] = string(b)
		}
	}
	if j.Name == "" {
		j.Name = firstOf(j.Conf, "mapreduce.job.name", "mapred.job.name")
	}
	if j.Queue == "" {
		j.Queue = firstOf(j.Conf, "mapreduce.job.queuename", "mapred.job.queue.name")
	}
	if rj.JobMapMB > 0 {
		if _, ok := j.Conf["mapreduce.map.memory.mb"]; !ok {
			j.Conf["mapreduce.map.memory.mb"] = fmt.Sprint(rj.JobMapMB)
		}
	}
	if rj.JobReduceMB > 0 {
		if _, ok := j.Conf["mapreduce.reduce.memory.mb"]; !ok {
			j.Conf["mapreduce.reduce.memory.mb"] = fmt.Sprint(rj.JobReduceMB)
		}
	}
	j.MapTasks = rumenTasks(rj.MapTasks, job.MapTask)
	j.ReduceTasks = rumenTasks(rj.ReduceTasks, job.ReduceTask)
	return j
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

func rumenStatus(s string) job.Status { return attemptStatus(s, job.Unknown) }

func rumenTasks(in []rumenTask, kind job.TaskKind) []job.Task {
	if len(in) == 0 {
		return nil
	}
	out := make([]job.Task, 0, len(in))
	for i := range in {
		rt := &in[i]
		t := job.Task{ID: rt.TaskID, Kind: kind, Status: rumenStatus(rt.TaskStatus)}
		t.Attempts = make([]job.Attempt, len(rt.Attempts))
		for k := range rt.Attempts {
			ra := &rt.Attempts[k]
			a := job.Attempt{
				ID: ra.AttemptID, Status: rumenStatus(ra.Result), Host: ra.HostName,
				StartMs: ra.StartTime, FinishMs: ra.FinishTime,
				Counters: ra.counters(),
				Splits:   splitsFrom(ra.ClockSplits, ra.CPUUsages, ra.VmemKbytes, ra.PhysMemKbytes),
			}
			if kind == job.ReduceTask {
				a.ShuffleFinishMs = max(ra.ShuffleFinished, 0)
				a.SortFinishMs = max(ra.SortFinished, 0)
			}
			t.Attempts[k] = a
		}
		t.Analyzed = analyzedAttempt(t.Status, t.Attempts)
		if a := t.AnalyzedAttempt(); a != nil {
			t.Counters = a.Counters
		}
		out = append(out, t)
	}
	return out
}

// analyzedAttempt picks the successful attempt of a succeeded task, else the
// unsuccessful attempt that finished first (the JobHistory REST rule).
func analyzedAttempt(status job.Status, as []job.Attempt) string {
	if status == job.Succeeded {
		for _, a := range as {
			if a.Status == job.Succeeded {
				return a.ID
			}
		}
	}
	var cand []job.Attempt
	for _, a := range as {
		if a.Status != job.Succeeded {
			cand = append(cand, a)
		}
	}
	if len(cand) == 0 {
		return ""
	}
	sort.SliceStable(cand, func(i, k int) bool { return cand[i].FinishMs < cand[k].FinishMs })
	return cand[0].ID
}

// counters maps the attempt's known (non-negative) fields to Hadoop counter
// names; nil when it has none.
func (ra *rumenAttempt) counters() job.Counters {
	c := job.Counters{}
	set := func(name string, v *int64) {
		if v != nil && *v >= 0 {
			c[name] = *v
		}
	}
	set(job.HDFSBytesRead, ra.HDFSBytesRead)
	set(job.HDFSBytesWritten, ra.HDFSBytesWritten)
	set(job.FileBytesRead, ra.FileBytesRead)
	set(job.FileBytesWritten, ra.FileBytesWritten)
	set(job.MapInputRecords, ra.MapInputRecords)
	set(job.MapOutputBytes, ra.MapOutputBytes)
	set(job.MapOutputRecords, ra.MapOutputRecords)
	set(job.CombineInputRecords, ra.CombineInputRecords)
	set("REDUCE_INPUT_GROUPS", ra.ReduceInputGroups)
	set(job.ReduceInputRecords, ra.ReduceInputRecords)
	set(job.ReduceShuffleBytes, ra.ReduceShuffleBytes)
	set(job.ReduceOutputRecords, ra.ReduceOutputRecords)
	set(job.SpilledRecords, ra.SpilledRecords)
	if u := ra.ResourceUsage; u != nil {
		pos := func(name string, v int64) {
			if v > 0 {
				c[name] = v
			}
		}
		pos(job.CPUMilliseconds, u.CumulativeCPUUsage)
		pos(job.PhysicalMemoryBytes, u.PhysicalMemoryUsage)
		pos(job.VirtualMemoryBytes, u.VirtualMemoryUsage)
		pos(job.CommittedHeapBytes, u.HeapUsage)
	}
	if len(c) == 0 {
		return nil
	}
	return c
}
