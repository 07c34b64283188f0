package fetcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// sparkEvent is the union of the event-log fields the replay reads. Event
// names and field names are Spark's JsonProtocol spellings.
type sparkEvent struct {
	Event string `json:"Event"`

	SparkVersion string `json:"Spark Version"`

	AppName      string `json:"App Name"`
	AppID        string `json:"App ID"`
	AppAttemptID string `json:"App Attempt ID"`
	Timestamp    int64  `json:"Timestamp"`
	User         string `json:"User"`

	SparkProperties  json.RawMessage `json:"Spark Properties"`
	SystemProperties json.RawMessage `json:"System Properties"`

	ExecutorID   string `json:"Executor ID"`
	ExecutorInfo *struct {
		Host       string `json:"Host"`
		TotalCores int    `json:"Total Cores"`
	} `json:"Executor Info"`
	RemovedReason string `json:"Removed Reason"`

	BlockManagerID *struct {
		ExecutorID string `json:"Executor ID"`
		Host       string `json:"Host"`
		Port       int    `json:"Port"`
	} `json:"Block Manager ID"`
	MaximumMemory int64 `json:"Maximum Memory"`

	JobID          int            `json:"Job ID"`
	Properties     map[string]any `json:"Properties"` // a job's local properties (JobStart)
	SubmissionTime int64          `json:"Submission Time"`
	CompletionTime int64          `json:"Completion Time"`
	StageInfos     []*seStageInfo `json:"Stage Infos"`
	StageIDs       []int          `json:"Stage IDs"`
	JobResult      *struct {
		Result string `json:"Result"`
	} `json:"Job Result"`

	StageInfo      *seStageInfo `json:"Stage Info"`
	StageID        int          `json:"Stage ID"`
	StageAttemptID int          `json:"Stage Attempt ID"`

	TaskEndReason *struct {
		Reason      string `json:"Reason"`
		ClassName   string `json:"Class Name"`
		Description string `json:"Description"`
		KillReason  string `json:"Kill Reason"`
	} `json:"Task End Reason"`
	TaskInfo *struct {
		TaskID      int64  `json:"Task ID"`
		Index       int    `json:"Index"`
		Attempt     int    `json:"Attempt"`
		LaunchTime  int64  `json:"Launch Time"`
		ExecutorID  string `json:"Executor ID"`
		Host        string `json:"Host"`
		Speculative bool   `json:"Speculative"`
		FinishTime  int64  `json:"Finish Time"`
		Failed      bool   `json:"Failed"`
		Killed      bool   `json:"Killed"`
	} `json:"Task Info"`
	TaskMetrics *seTaskMetrics `json:"Task Metrics"`

	ExecutorMetrics map[string]int64 `json:"Executor Metrics"`

	TaskExecutorMetrics map[string]int64 `json:"Task Executor Metrics"`

	BlockUpdatedInfo *struct {
		BlockManagerID struct {
			ExecutorID string `json:"Executor ID"`
		} `json:"Block Manager ID"`
		BlockID      string        `json:"Block ID"`
		StorageLevel *storageLevel `json:"Storage Level"`
		MemorySize   int64         `json:"Memory Size"`
		DiskSize     int64         `json:"Disk Size"`
	} `json:"Block Updated Info"`

	RDDID int `json:"RDD ID"` // SparkListenerUnpersistRDD
}

// storageLevel is a block's or an RDD's storage level as event logs write it.
type storageLevel struct {
	UseDisk     bool `json:"Use Disk"`
	UseMemory   bool `json:"Use Memory"`
	UseOffHeap  bool `json:"Use Off Heap"`
	Replication int  `json:"Replication"`
}

// valid is Spark's StorageLevel.isValid: stored somewhere, at least once.
func (l *storageLevel) valid() bool {
	return l != nil && (l.UseMemory || l.UseDisk) && l.Replication > 0
}

type seStageInfo struct {
	RDDInfo []struct {
		RDDID        int           `json:"RDD ID"`
		StorageLevel *storageLevel `json:"Storage Level"`
	} `json:"RDD Info"`
	StageID        int    `json:"Stage ID"`
	StageAttemptID int    `json:"Stage Attempt ID"`
	Name           string `json:"Stage Name"`
	NumTasks       int    `json:"Number of Tasks"`
	SubmissionTime int64  `json:"Submission Time"`
	CompletionTime int64  `json:"Completion Time"`
	FailureReason  string `json:"Failure Reason"`
	Details        string `json:"Details"`
}

type seTaskMetrics struct {
	ExecutorRunTime     int64 `json:"Executor Run Time"`
	ExecutorCPUTime     int64 `json:"Executor CPU Time"`
	JVMGCTime           int64 `json:"JVM GC Time"`
	MemoryBytesSpilled  int64 `json:"Memory Bytes Spilled"`
	DiskBytesSpilled    int64 `json:"Disk Bytes Spilled"`
	PeakExecutionMemory int64 `json:"Peak Execution Memory"`
	ShuffleRead         *struct {
		RemoteBytesRead int64 `json:"Remote Bytes Read"`
		LocalBytesRead  int64 `json:"Local Bytes Read"`
		RecordsRead     int64 `json:"Total Records Read"`
	} `json:"Shuffle Read Metrics"`
	ShuffleWrite *struct {
		BytesWritten   int64 `json:"Shuffle Bytes Written"`
		RecordsWritten int64 `json:"Shuffle Records Written"`
	} `json:"Shuffle Write Metrics"`
	Input *struct {
		BytesRead   int64 `json:"Bytes Read"`
		RecordsRead int64 `json:"Records Read"`
	} `json:"Input Metrics"`
	Output *struct {
		BytesWritten   int64 `json:"Bytes Written"`
		RecordsWritten int64 `json:"Records Written"`
	} `json:"Output Metrics"`
}

// sparkEvents are the events the replay handles; lines of other events
// (SQL, metrics updates, …) are skipped without being decoded.
var sparkEvents = map[string]bool{
	"SparkListenerLogStart":             true,
	"SparkListenerApplicationStart":     true,
	"SparkListenerApplicationEnd":       true,
	"SparkListenerEnvironmentUpdate":    true,
	"SparkListenerExecutorAdded":        true,
	"SparkListenerExecutorRemoved":      true,
	"SparkListenerBlockManagerAdded":    true,
	"SparkListenerJobStart":             true,
	"SparkListenerJobEnd":               true,
	"SparkListenerStageSubmitted":       true,
	"SparkListenerStageCompleted":       true,
	"SparkListenerTaskEnd":              true,
	"SparkListenerStageExecutorMetrics": true,
	"SparkListenerBlockUpdated":         true,
	"SparkListenerUnpersistRDD":         true,
}

// errNotEvent marks a line that does not start like a Spark event.
var errNotEvent = errors.New(`not a {"Event": …} line`)

// eventName extracts the event name from the start of a line without
// decoding it ({"Event":"Name",…} is how Spark writes every line).
func eventName(line []byte) (string, bool) {
	const key = `"Event":`
	i := bytes.Index(line[:min(len(line), 64)], []byte(key))
	if i < 0 {
		return "", false
	}
	rest := bytes.TrimLeft(line[i+len(key):], " ")
	if len(rest) == 0 || rest[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 {
		return "", false
	}
	return string(rest[1 : 1+end]), true
}

// sparkReplay derives the history server's objects from events.
type sparkReplay struct {
	app      *sparkApp
	warnings []string
	started  bool
	ended    bool

	jobs      map[int]*sparkJob
	stages    map[[2]int]*sparkStage
	byID      map[int][]*sparkStage // stage id -> its attempts
	stageJobs map[int][]int         // stage id -> job ids
	execs     map[string]*sparkExecutor
	rdds      map[int]*liveRDD // cached RDDs, as the history server tracks them (storage.go)

	// budget bounds the memory of the application's model; taskBytes is
	// what the kept task details take of it (at most maxSparkTaskBytes),
	// and dropped counts the tasks whose details were not kept.
	budget    *budget
	taskBytes int64
	dropped   int
}

// parseSparkLog replays a Spark event log stream. A damaged or cut tail
// leaves the application as far as it was read, with a warning; it returns
// an error only when the stream is not an event log, names no application
// (no application start event with an App ID: ErrNoJob) or the
// application does not fit the default memory budget.
func parseSparkLog(r io.Reader) (*sparkApp, []string, error) {
	return parseSparkLogBudget(r, newBudget(0))
}

// parseSparkLogBudget is parseSparkLog building the application within
// mem; past it the replay stops with an ErrTooLarge error.
func parseSparkLogBudget(r io.Reader, mem *budget) (*sparkApp, []string, error) {
	s := &sparkReplay{
		budget:    mem,
		app:       &sparkApp{Props: map[string]string{}},
		jobs:      map[int]*sparkJob{},
		stages:    map[[2]int]*sparkStage{},
		byID:      map[int][]*sparkStage{},
		stageJobs: map[int][]int{},
		execs:     map[string]*sparkExecutor{},
		rdds:      map[int]*liveRDD{},
	}
	lr := newLineReader(r)
	lr.skipLong = true
	var events int
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if events == 0 {
				return nil, nil, fmt.Errorf("read event log: %w", err)
			}
			s.warnf("event log unreadable after line %d: %v", lr.n, err)
			break
		}
		if isBlank(line) {
			continue
		}
		name, ok := eventName(line)
		if !ok {
			if events == 0 && lr.n <= 1 {
				return nil, nil, fmt.Errorf("read event log: %w: line 1 is not a Spark event", ErrUnknownFormat)
			}
			if lr.reject(errNotEvent) {
				s.warnf("event log truncated at line %d", lr.n)
				break
			}
			continue
		}
		events++
		if !sparkEvents[name] {
			continue
		}
		var ev sparkEvent
		err = checkNesting(line)
		if err == nil {
			err = json.Unmarshal(line, &ev)
		}
		if err != nil {
			if lr.reject(err) {
				s.warnf("event log truncated at line %d: %v", lr.n, err)
				break
			}
			continue
		}
		s.apply(&ev)
		if err := s.budget.err; err != nil {
			return nil, nil, fmt.Errorf("replay event log up to line %d: %w", lr.n, err)
		}
	}
	if events == 0 {
		return nil, nil, fmt.Errorf("read event log: %w: no events", ErrUnknownFormat)
	}
	if s.app.ID == "" {
		why := "no SparkListenerApplicationStart event"
		if s.started {
			why = "its SparkListenerApplicationStart event has no App ID"
		}
		if len(s.warnings) > 0 { // say what else went wrong, e.g. the start line was malformed
			why += " (" + strings.Join(s.warnings, "; ") + ")"
		}
		if msg := lr.skipped(); msg != "" {
			why += " (" + msg + ")"
		}
		return nil, nil, fmt.Errorf("read event log: %w: %s", ErrNoJob, why)
	}
	if msg := lr.skipped(); msg != "" {
		s.warnf("event log: %s", msg)
	}
	if !s.ended {
		s.warnf("event log has no application end event (application in progress or log truncated)")
	}
	if s.dropped > 0 {
		s.warnf("kept the details of %d tasks, not of %d more (%d MiB bound); stage and executor totals cover every task",
			s.keptTasks(), s.dropped, maxSparkTaskBytes>>20)
	}
	s.finish()
	return s.app, s.warnings, nil
}

func (s *sparkReplay) warnf(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

func normExecID(id string) string {
	if id == "<driver>" {
		return "driver"
	}
	return id
}

func (s *sparkReplay) exec(id string) *sparkExecutor {
	id = normExecID(id)
	e, ok := s.execs[id]
	if !ok {
		s.budget.charge(costSparkObject + int64(len(id)))
		e = &sparkExecutor{ID: id, IsActive: true}
		s.execs[id] = e
	}
	return e
}

func (s *sparkReplay) stage(id, attempt int) *sparkStage {
	k := [2]int{id, attempt}
	st, ok := s.stages[k]
	if !ok {
		s.budget.charge(costSparkObject)
		st = &sparkStage{StageID: id, AttemptID: attempt, Status: "PENDING"}
		s.stages[k] = st
		s.byID[id] = append(s.byID[id], st)
	}
	return st
}

func (s *sparkReplay) fillStageInfo(st *sparkStage, in *seStageInfo) {
	s.budget.charge(int64(len(in.Name) + len(in.Details) + len(in.FailureReason)))
	if in.Name != "" {
		st.Name = in.Name
	}
	if in.NumTasks > 0 {
		st.NumTasks = in.NumTasks
	}
	if in.Details != "" {
		st.Details = in.Details
	}
	if in.SubmissionTime > 0 {
		st.SubmissionMs = shsTime(in.SubmissionTime)
	}
	if in.CompletionTime > 0 {
		st.CompletionMs = shsTime(in.CompletionTime)
	}
}

func (s *sparkReplay) apply(ev *sparkEvent) {
	a := s.app
	switch ev.Event {
	case "SparkListenerLogStart":
		a.SparkVersion = ev.SparkVersion
	case "SparkListenerApplicationStart":
		s.started = true
		a.ID, a.Name = ev.AppID, ev.AppName
		a.Attempts = []sparkAttempt{{AttemptID: ev.AppAttemptID, StartMs: shsTime(ev.Timestamp), SparkUser: ev.User}}
	case "SparkListenerApplicationEnd":
		s.ended = true
		if len(a.Attempts) == 0 {
			a.Attempts = []sparkAttempt{{}}
		}
		a.Attempts[0].EndMs = shsTime(ev.Timestamp)
		a.Attempts[0].Completed = true
	case "SparkListenerEnvironmentUpdate":
		s.budget.charge(int64(len(ev.SparkProperties) + len(ev.SystemProperties)))
		decodeProps(ev.SparkProperties, a.Props)
		if len(ev.SystemProperties) > 2 {
			if a.SysProps == nil {
				a.SysProps = map[string]string{}
			}
			decodeProps(ev.SystemProperties, a.SysProps)
		}
	case "SparkListenerExecutorAdded":
		e := s.exec(ev.ExecutorID)
		e.AddMs = shsTime(ev.Timestamp)
		if ev.ExecutorInfo != nil {
			e.TotalCores = ev.ExecutorInfo.TotalCores
			if e.HostPort == "" {
				e.HostPort = ev.ExecutorInfo.Host
			}
		}
	case "SparkListenerExecutorRemoved":
		e := s.exec(ev.ExecutorID)
		e.IsActive = false
		e.RemoveMs = shsTime(ev.Timestamp)
		e.RemoveReason = ev.RemovedReason
	case "SparkListenerBlockManagerAdded":
		if ev.BlockManagerID == nil {
			return
		}
		e := s.exec(ev.BlockManagerID.ExecutorID)
		e.MaxMemory = ev.MaximumMemory
		e.HostPort = ev.BlockManagerID.Host + ":" + strconv.Itoa(ev.BlockManagerID.Port)
		if e.AddMs == 0 {
			e.AddMs = shsTime(ev.Timestamp)
		}
	case "SparkListenerJobStart":
		s.budget.charge(costSparkObject + 16*int64(len(ev.StageIDs)+len(ev.StageInfos)))
		j := &sparkJob{JobID: ev.JobID, SubmissionMs: shsTime(ev.SubmissionTime), Status: "RUNNING", StageIDs: ev.StageIDs}
		// The history server takes these two from the job's properties.
		if d, ok := ev.Properties["spark.job.description"].(string); ok {
			j.Description = d
		}
		if g, ok := ev.Properties["spark.jobGroup.id"].(string); ok {
			j.JobGroup = g
		}
		s.budget.charge(int64(len(j.Description) + len(j.JobGroup)))
		for _, si := range ev.StageInfos {
			if si == nil {
				continue
			}
			st := s.stage(si.StageID, si.StageAttemptID)
			s.fillStageInfo(st, si)
			j.NumTasks += si.NumTasks
			if j.Name == "" || si.StageID == maxInt(ev.StageIDs) {
				j.Name = si.Name
			}
		}
		if len(j.StageIDs) == 0 {
			for _, si := range ev.StageInfos {
				if si != nil {
					j.StageIDs = append(j.StageIDs, si.StageID)
				}
			}
		}
		for _, sid := range j.StageIDs {
			s.stageJobs[sid] = append(s.stageJobs[sid], j.JobID)
		}
		s.jobs[j.JobID] = j
	case "SparkListenerJobEnd":
		j, ok := s.jobs[ev.JobID]
		if !ok {
			s.budget.charge(costSparkObject)
			j = &sparkJob{JobID: ev.JobID}
			s.jobs[ev.JobID] = j
		}
		j.CompletionMs = shsTime(ev.CompletionTime)
		j.Status = "FAILED"
		if ev.JobResult != nil && ev.JobResult.Result == "JobSucceeded" {
			j.Status = "SUCCEEDED"
		}
		// Stages of the job that never ran are skipped.
		for _, sid := range j.StageIDs {
			for _, st := range s.byID[sid] {
				if st.Status == "PENDING" {
					st.Status = "SKIPPED"
					j.NumSkippedStages++
					j.NumSkippedTasks += st.NumTasks
				}
			}
		}
	case "SparkListenerStageSubmitted":
		if ev.StageInfo == nil {
			return
		}
		st := s.stage(ev.StageInfo.StageID, ev.StageInfo.StageAttemptID)
		s.fillStageInfo(st, ev.StageInfo)
		s.stageRDDs(ev.StageInfo)
		st.Status = "ACTIVE"
		s.forJobs(st.StageID, func(j *sparkJob) { j.NumActiveStages++ })
	case "SparkListenerStageCompleted":
		if ev.StageInfo == nil {
			return
		}
		st := s.stage(ev.StageInfo.StageID, ev.StageInfo.StageAttemptID)
		s.fillStageInfo(st, ev.StageInfo)
		wasActive := st.Status == "ACTIVE"
		if ev.StageInfo.FailureReason != "" {
			st.Status = "FAILED"
			st.FailureReason = ev.StageInfo.FailureReason
		} else {
			st.Status = "COMPLETE"
		}
		s.forJobs(st.StageID, func(j *sparkJob) {
			if wasActive && j.NumActiveStages > 0 {
				j.NumActiveStages--
			}
			if st.Status == "FAILED" {
				j.NumFailedStages++
			} else {
				j.NumCompletedStages++
			}
		})
	case "SparkListenerTaskEnd":
		s.taskEnd(ev)
	case "SparkListenerStageExecutorMetrics":
		if len(ev.ExecutorMetrics) == 0 {
			return
		}
		s.peak(s.exec(ev.ExecutorID), ev.ExecutorMetrics)
	case "SparkListenerBlockUpdated":
		if b := ev.BlockUpdatedInfo; b != nil {
			s.blockUpdated(b.BlockID, normExecID(b.BlockManagerID.ExecutorID), b.StorageLevel, b.MemorySize, b.DiskSize)
		}
	case "SparkListenerUnpersistRDD":
		s.unpersist(ev.RDDID)
	}
}

// peak raises e's peak memory metrics to m where m is higher; like the
// history server, the metrics are present (zeros included) once any task
// end or stage executor metrics event named the executor.
func (s *sparkReplay) peak(e *sparkExecutor, m map[string]int64) {
	if e.PeakMemoryMetrics == nil {
		e.PeakMemoryMetrics = map[string]int64{}
	}
	for k, v := range m {
		old, ok := e.PeakMemoryMetrics[k]
		if !ok {
			s.budget.charge(costCounter + int64(len(k)))
		}
		if !ok || v > old {
			e.PeakMemoryMetrics[k] = v
		}
	}
}

func maxInt(xs []int) int {
	m := -1
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func (s *sparkReplay) forJobs(stageID int, f func(*sparkJob)) {
	for _, id := range s.stageJobs[stageID] {
		if j := s.jobs[id]; j != nil {
			f(j)
		}
	}
}

func (s *sparkReplay) taskEnd(ev *sparkEvent) {
	ti := ev.TaskInfo
	if ti == nil {
		return
	}
	st := s.stage(ev.StageID, ev.StageAttemptID)
	t := job.SparkTask{
		TaskID: ti.TaskID, Index: ti.Index, Attempt: ti.Attempt,
		ExecutorID: normExecID(ti.ExecutorID), Host: ti.Host,
		LaunchMs: ti.LaunchTime, FinishMs: ti.FinishTime, Speculative: ti.Speculative,
		Status: job.TaskSuccess,
	}
	reason := "Success"
	if r := ev.TaskEndReason; r != nil && r.Reason != "" {
		reason = r.Reason
		if r.Description != "" {
			t.ErrorMessage = r.ClassName + ": " + r.Description
		} else if r.KillReason != "" {
			t.ErrorMessage = r.KillReason
		} else if reason != "Success" {
			t.ErrorMessage = reason
		}
	}
	var completed, failed, killed int
	switch reason {
	case "Success":
		completed = 1
	case "TaskKilled", "TaskCommitDenied":
		t.Status, killed = job.Killed, 1
	default:
		t.Status, failed = job.Failed, 1
	}
	if m := ev.TaskMetrics; m != nil {
		t.ExecutorRunTimeMs = m.ExecutorRunTime
		t.ExecutorCPUTimeNs = m.ExecutorCPUTime
		t.JVMGCTimeMs = m.JVMGCTime
		t.MemoryBytesSpilled = m.MemoryBytesSpilled
		t.DiskBytesSpilled = m.DiskBytesSpilled
		t.PeakExecutionMemory = m.PeakExecutionMemory
		if m.Input != nil {
			t.InputBytes = m.Input.BytesRead
			st.InputRecords += m.Input.RecordsRead
		}
		if m.Output != nil {
			t.OutputBytes = m.Output.BytesWritten
			st.OutputRecords += m.Output.RecordsWritten
		}
		if m.ShuffleRead != nil {
			t.ShuffleReadBytes = m.ShuffleRead.RemoteBytesRead + m.ShuffleRead.LocalBytesRead
			st.ShuffleReadRecords += m.ShuffleRead.RecordsRead
		}
		if m.ShuffleWrite != nil {
			t.ShuffleWriteBytes = m.ShuffleWrite.BytesWritten
			st.ShuffleWriteRecords += m.ShuffleWrite.RecordsWritten
		}
	}
	st.NumCompleteTasks += completed
	st.NumFailedTasks += failed
	st.NumKilledTasks += killed
	st.ExecutorRunTimeMs += t.ExecutorRunTimeMs
	st.ExecutorCPUTimeNs += t.ExecutorCPUTimeNs
	st.JVMGCTimeMs += t.JVMGCTimeMs
	st.InputBytes += t.InputBytes
	st.OutputBytes += t.OutputBytes
	st.ShuffleReadBytes += t.ShuffleReadBytes
	st.ShuffleWriteBytes += t.ShuffleWriteBytes
	st.MemoryBytesSpilled += t.MemoryBytesSpilled
	st.DiskBytesSpilled += t.DiskBytesSpilled
	st.PeakExecutionMemory = max(st.PeakExecutionMemory, t.PeakExecutionMemory)
	s.keepTask(st, &t)

	s.forJobs(st.StageID, func(j *sparkJob) {
		j.NumCompletedTasks += completed
		j.NumFailedTasks += failed
		j.NumKilledTasks += killed
	})

	e := s.exec(t.ExecutorID)
	if e.HostPort == "" {
		e.HostPort = t.Host
	}
	s.peak(e, ev.TaskExecutorMetrics)
	e.CompletedTasks += completed
	e.FailedTasks += failed
	e.TotalTasks += completed + failed
	if t.FinishMs > 0 && t.LaunchMs > 0 {
		e.TotalDurationMs += t.FinishMs - t.LaunchMs
	}
	e.TotalGCTimeMs += t.JVMGCTimeMs
	e.TotalInputBytes += t.InputBytes
	e.TotalShuffleRead += t.ShuffleReadBytes
	e.TotalShuffleWrite += t.ShuffleWriteBytes
	e.MemorySpilled += t.MemoryBytesSpilled
	e.DiskSpilled += t.DiskBytesSpilled
}

// finish orders the derived objects as the history server lists them:
// jobs and stages newest first, executors driver first then by id.
func (s *sparkReplay) finish() {
	a := s.app
	for _, j := range s.jobs {
		a.Jobs = append(a.Jobs, j)
	}
	sort.Slice(a.Jobs, func(i, k int) bool { return a.Jobs[i].JobID > a.Jobs[k].JobID })
	for _, st := range s.stages {
		a.Stages = append(a.Stages, st)
	}
	sort.Slice(a.Stages, func(i, k int) bool {
		x, y := a.Stages[i], a.Stages[k]
		if x.StageID != y.StageID {
			return x.StageID > y.StageID
		}
		return x.AttemptID > y.AttemptID
	})
	s.asServed()
	for _, e := range s.execs {
		a.Executors = append(a.Executors, e)
	}
	sortExecutors(a.Executors)
}

// sortExecutors orders executors driver first, then by numeric id (then
// by id): the order of a model read from an event log and from a history
// server, which lists them in the order of its own store.
func sortExecutors(es []*sparkExecutor) {
	sort.Slice(es, func(i, k int) bool {
		x, y := es[i], es[k]
		if (x.ID == "driver") != (y.ID == "driver") {
			return x.ID == "driver"
		}
		xi, errx := strconv.Atoi(x.ID)
		yi, erry := strconv.Atoi(y.ID)
		if errx == nil && erry == nil {
			return xi < yi
		}
		return x.ID < y.ID
	})
}

// decodeProps reads "Spark Properties", written as an object by Spark and
// as a list of [key, value] pairs by some older writers.
func decodeProps(raw json.RawMessage, into map[string]string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	if raw[0] == '{' {
		var m map[string]string
		if json.Unmarshal(raw, &m) == nil {
			for k, v := range m {
				into[k] = v
			}
		}
		return
	}
	var pairs [][]string
	if json.Unmarshal(raw, &pairs) == nil {
		for _, p := range pairs {
			if len(p) == 2 {
				into[p[0]] = p[1]
			}
		}
	}
}

// keepTask keeps t's details in its stage while they fit maxSparkTaskBytes;
// the totals already hold it either way.
func (s *sparkReplay) keepTask(st *sparkStage, t *job.SparkTask) {
	n := costSparkTask + int64(len(t.ExecutorID)+len(t.Host)+len(t.ErrorMessage))
	if s.taskBytes+n > maxSparkTaskBytes {
		s.dropped++
		return
	}
	s.taskBytes += n
	s.budget.charge(n)
	st.Tasks = append(st.Tasks, *t)
}

// keptTasks counts the task details kept.
func (s *sparkReplay) keptTasks() int {
	n := 0
	for _, st := range s.stages {
		n += len(st.Tasks)
	}
	return n
}
