package fetcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

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

// parseRumen streams the jobs of a rumen trace to fn, one at a time, with
// the default memory budget per job.
func parseRumen(r io.Reader, source string, fn func(*job.Job) error) error {
	return parseRumenLimit(r, source, 0, fn)
}

// parseRumenLimit streams the jobs of a rumen trace to fn, one at a time.
// Each job is handed over only after the next one decoded (or the stream
// ended cleanly), so a damaged tail becomes a warning on the last good job.
// A stream whose first job does not decode is an error.
//
// A job object is not decoded whole: its fields are read one value at a
// time, its task arrays one task at a time, each task converted to the
// model at once. So memory holds the job's model (within maxJob bytes,
// default DefaultMaxJobBytes) and one value of at most maxValueBytes,
// however large the object or its strings.
func parseRumenLimit(r io.Reader, source string, maxJob int64, fn func(*job.Job) error) error {
	rd := newRumenReader(r)
	var pending *job.Job
	n := 0
	for {
		j, err := rd.job(source, newBudget(maxJob))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var typeErr *json.UnmarshalTypeError
			if pending == nil && (errors.As(err, &typeErr) || errors.Is(err, errNotRumenJob)) {
				// JSON, but not shaped like a rumen job.
				return fmt.Errorf("read rumen trace: %w: %v", ErrUnknownFormat, err)
			}
			if pending == nil || errors.Is(err, ErrTooLarge) {
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
		pending = j
	}
	if pending == nil {
		return fmt.Errorf("read rumen trace: %w: no jobs", ErrNoJob)
	}
	return fn(pending)
}

// errNotRumenJob marks a JSON value that is not a rumen job object.
var errNotRumenJob = errors.New("not a rumen job object")

// rumenReader walks a stream of rumen job objects with encoding/json's
// tokenizer. Every value it decodes whole passes through a capReader
// (bound maxValueBytes from the value's start) and a nestingReader.
type rumenReader struct {
	dec *json.Decoder
	cap *capReader
}

func newRumenReader(r io.Reader) *rumenReader {
	c := &capReader{r: &nestingReader{r: r}}
	return &rumenReader{dec: json.NewDecoder(c), cap: c}
}

// allow lets the decoder read up to maxValueBytes past what it consumed.
func (rd *rumenReader) allow() { rd.cap.limit = rd.dec.InputOffset() + maxValueBytes }

// err turns a capReader refusal into a clear error.
func (rd *rumenReader) err(what string, err error) error {
	if errors.Is(err, errTooBig) {
		return fmt.Errorf("read %s at byte %d: %w: a value longer than %d MiB", what, rd.dec.InputOffset(), ErrTooLarge, maxValueBytes>>20)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s at byte %d: %w", what, rd.dec.InputOffset(), err)
	}
	return err
}

func (rd *rumenReader) token(what string) (json.Token, error) {
	rd.allow()
	tok, err := rd.dec.Token()
	return tok, rd.err(what, err)
}

func (rd *rumenReader) decode(what string, v any) error {
	rd.allow()
	return rd.err(what, rd.dec.Decode(v))
}

// job reads the next job object; io.EOF at a clean end of the stream.
func (rd *rumenReader) job(source string, mem *budget) (*job.Job, error) {
	tok, err := rd.token("rumen job")
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("read rumen job: %w: found %v", errNotRumenJob, tok)
	}
	var rj rumenJob
	var maps, reduces []job.Task
	for rd.dec.More() {
		tok, err := rd.token("rumen job key")
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch {
		case strings.EqualFold(key, "mapTasks"):
			maps, err = rd.tasks(job.MapTask, mem)
		case strings.EqualFold(key, "reduceTasks"):
			reduces, err = rd.tasks(job.ReduceTask, mem)
		default:
			err = rd.field(key, &rj, mem)
		}
		if err != nil {
			return nil, err
		}
		if mem.err != nil {
			return nil, fmt.Errorf("read rumen job %s: %w", rj.JobID, mem.err)
		}
	}
	if _, err := rd.token("rumen job end"); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if rj.JobID == "" {
		return nil, fmt.Errorf("%w: object has no jobID", ErrUnknownFormat)
	}
	j := rj.toJob(source)
	j.MapTasks, j.ReduceTasks = maps, reduces
	return j, nil
}

// field decodes one job field into rj the way decoding the whole object
// would (encoding/json matches key names without regard to case).
func (rd *rumenReader) field(key string, rj *rumenJob, mem *budget) error {
	var raw json.RawMessage
	if err := rd.decode("rumen job field "+key, &raw); err != nil {
		return err
	}
	mem.charge(int64(len(raw)))
	k, _ := json.Marshal(key)
	obj := make([]byte, 0, len(k)+len(raw)+3)
	obj = append(append(append(append(append(obj, '{'), k...), ':'), raw...), '}')
	return json.Unmarshal(obj, rj)
}

// tasks reads a task array (or null) one task at a time.
func (rd *rumenReader) tasks(kind job.TaskKind, mem *budget) ([]job.Task, error) {
	tok, err := rd.token("rumen task list")
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &json.UnmarshalTypeError{Value: fmt.Sprint(tok), Type: reflect.TypeFor[[]rumenTask](), Field: string(kind)}
	}
	var out []job.Task
	for rd.dec.More() {
		var rt rumenTask
		if err := rd.decode("rumen task", &rt); err != nil {
			return nil, err
		}
		t := rt.toTask(kind)
		if !mem.task(&t) {
			return nil, mem.err
		}
		out = append(out, t)
	}
	if _, err := rd.token("rumen task list end"); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return out, nil
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

// toTask converts one rumen task.
func (rt *rumenTask) toTask(kind job.TaskKind) job.Task {
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
	return t
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
