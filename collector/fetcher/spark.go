package fetcher

import (
	"bytes"
	"cmp"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/job"
)

// The Spark application data below mirrors the Spark History Server's REST
// objects (status API v1): the REST fetcher decodes responses straight into
// it (the JSON names are the REST ones) and the event-log fetcher derives the
// same objects by replaying events the way the history server does.

type sparkApp struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Attempts []sparkAttempt `json:"attempts"`

	// SparkVersion is from the event log's LogStart event.
	SparkVersion string `json:"-"`
	// Props are the "Spark Properties" of the environment, SysProps its
	// "System Properties".
	Props     map[string]string `json:"-"`
	SysProps  map[string]string `json:"-"`
	Jobs      []*sparkJob       `json:"-"`
	Stages    []*sparkStage     `json:"-"`
	Executors []*sparkExecutor  `json:"-"`
}

type sparkAttempt struct {
	AttemptID string  `json:"attemptId"`
	StartMs   shsTime `json:"startTime"`
	EndMs     shsTime `json:"endTime"`
	SparkUser string  `json:"sparkUser"`
	Completed bool    `json:"completed"`
	Version   string  `json:"appSparkVersion"`
	// The *Epoch fields of newer servers, preferred when present.
	StartEpoch int64 `json:"startTimeEpoch"`
	EndEpoch   int64 `json:"endTimeEpoch"`
}

func (a *sparkAttempt) start() int64 {
	if a.StartEpoch > 0 {
		return a.StartEpoch
	}
	return int64(a.StartMs)
}

func (a *sparkAttempt) end() int64 {
	if a.EndEpoch > 0 {
		return a.EndEpoch
	}
	return int64(a.EndMs)
}

type sparkJob struct {
	JobID              int     `json:"jobId"`
	Name               string  `json:"name"`
	Description        string  `json:"description"`
	SubmissionMs       shsTime `json:"submissionTime"`
	CompletionMs       shsTime `json:"completionTime"`
	StageIDs           []int   `json:"stageIds"`
	JobGroup           string  `json:"jobGroup"`
	Status             string  `json:"status"`
	NumTasks           int     `json:"numTasks"`
	NumActiveTasks     int     `json:"numActiveTasks"`
	NumCompletedTasks  int     `json:"numCompletedTasks"`
	NumSkippedTasks    int     `json:"numSkippedTasks"`
	NumFailedTasks     int     `json:"numFailedTasks"`
	NumKilledTasks     int     `json:"numKilledTasks"`
	NumActiveStages    int     `json:"numActiveStages"`
	NumCompletedStages int     `json:"numCompletedStages"`
	NumSkippedStages   int     `json:"numSkippedStages"`
	NumFailedStages    int     `json:"numFailedStages"`
}

type sparkStage struct {
	Status              string  `json:"status"`
	StageID             int     `json:"stageId"`
	AttemptID           int     `json:"attemptId"`
	Name                string  `json:"name"`
	NumTasks            int     `json:"numTasks"`
	NumActiveTasks      int     `json:"numActiveTasks"`
	NumCompleteTasks    int     `json:"numCompleteTasks"`
	NumFailedTasks      int     `json:"numFailedTasks"`
	NumKilledTasks      int     `json:"numKilledTasks"`
	SubmissionMs        shsTime `json:"submissionTime"`
	CompletionMs        shsTime `json:"completionTime"`
	ExecutorRunTimeMs   int64   `json:"executorRunTime"`
	ExecutorCPUTimeNs   int64   `json:"executorCpuTime"`
	JVMGCTimeMs         int64   `json:"jvmGcTime"`
	InputBytes          int64   `json:"inputBytes"`
	InputRecords        int64   `json:"inputRecords"`
	OutputBytes         int64   `json:"outputBytes"`
	OutputRecords       int64   `json:"outputRecords"`
	ShuffleReadBytes    int64   `json:"shuffleReadBytes"`
	ShuffleReadRecords  int64   `json:"shuffleReadRecords"`
	ShuffleWriteBytes   int64   `json:"shuffleWriteBytes"`
	ShuffleWriteRecords int64   `json:"shuffleWriteRecords"`
	MemoryBytesSpilled  int64   `json:"memoryBytesSpilled"`
	DiskBytesSpilled    int64   `json:"diskBytesSpilled"`
	PeakExecutionMemory int64   `json:"peakExecutionMemory"`
	FailureReason       string  `json:"failureReason"`
	Details             string  `json:"details"`

	Tasks []job.SparkTask `json:"-"` // from the event log only
}

type sparkExecutor struct {
	ID                string           `json:"id"`
	HostPort          string           `json:"hostPort"`
	IsActive          bool             `json:"isActive"`
	RDDBlocks         int              `json:"rddBlocks"`
	MemoryUsed        int64            `json:"memoryUsed"`
	DiskUsed          int64            `json:"diskUsed"`
	TotalCores        int              `json:"totalCores"`
	MaxTasks          int              `json:"maxTasks"`
	ActiveTasks       int              `json:"activeTasks"`
	FailedTasks       int              `json:"failedTasks"`
	CompletedTasks    int              `json:"completedTasks"`
	TotalTasks        int              `json:"totalTasks"`
	TotalDurationMs   int64            `json:"totalDuration"`
	TotalGCTimeMs     int64            `json:"totalGCTime"`
	TotalInputBytes   int64            `json:"totalInputBytes"`
	TotalShuffleRead  int64            `json:"totalShuffleRead"`
	TotalShuffleWrite int64            `json:"totalShuffleWrite"`
	MaxMemory         int64            `json:"maxMemory"`
	AddMs             shsTime          `json:"addTime"`
	RemoveMs          shsTime          `json:"removeTime"`
	RemoveReason      string           `json:"removeReason"`
	PeakMemoryMetrics map[string]int64 `json:"peakMemoryMetrics"`

	// MemorySpilled is Σ memory bytes spilled by its tasks (event logs only).
	MemorySpilled int64 `json:"-"`
	// DiskSpilled is Σ disk bytes spilled by its tasks (event logs only).
	DiskSpilled int64 `json:"-"`
}

// shsTime is a time in ms since the epoch that the history server spells
// "2015-02-03T16:42:59.720GMT"; numbers are accepted too.
type shsTime int64

// shsLayout is the history server's date layout (always GMT).
const shsLayout = "2006-01-02T15:04:05.000GMT"

func (t *shsTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == 'n' {
		*t = 0
		return nil
	}
	if b[0] != '"' {
		v, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return err
		}
		*t = shsTime(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*t = 0
		return nil
	}
	tm, err := time.Parse(shsLayout, s)
	if err != nil {
		// Tolerate other zone spellings and precisions.
		tm, err = time.Parse("2006-01-02T15:04:05.999Z07:00", s)
		if err != nil {
			return err
		}
	}
	*t = shsTime(tm.UnixMilli())
	return nil
}

// toJob converts the application into the neutral model. source is the path
// or URL it was read from.
func (a *sparkApp) toJob(source string, warnings []string) *job.Job {
	j := &job.Job{
		ID: a.ID, AppID: a.ID, Type: job.Spark, Name: a.Name, Source: source,
		Conf: a.Props, Warnings: warnings,
	}
	if j.Conf == nil {
		j.Conf = map[string]string{}
	}
	j.Queue = j.Conf["spark.yarn.queue"]
	sa := &job.SparkApp{SparkVersion: a.SparkVersion, SystemProperties: a.SysProps}
	for _, at := range a.Attempts {
		sa.Attempts = append(sa.Attempts, job.SparkAttempt{
			ID: at.AttemptID, StartMs: at.start(), EndMs: at.end(),
			SparkUser: at.SparkUser, Completed: at.Completed,
		})
	}
	// The history server lists attempts newest first; the model wants the
	// last one last.
	sort.SliceStable(sa.Attempts, func(i, k int) bool { return sa.Attempts[i].StartMs < sa.Attempts[k].StartMs })
	if sa.SparkVersion == "" {
		for _, at := range a.Attempts {
			sa.SparkVersion = cmp.Or(sa.SparkVersion, at.Version)
		}
	}
	if last := sa.LastAttempt(); last != nil {
		j.User = last.SparkUser
		j.SubmitMs, j.StartMs, j.FinishMs = last.StartMs, last.StartMs, last.EndMs
		if last.Completed {
			j.Status = job.Succeeded
		} else {
			j.Status = job.Running
		}
	} else {
		j.Status = job.Unknown
	}
	for _, x := range a.Jobs {
		sa.Jobs = append(sa.Jobs, job.SparkJob{
			ID: x.JobID, Name: x.Name, Description: x.Description, Group: x.JobGroup,
			SubmissionMs: int64(x.SubmissionMs), CompletionMs: int64(x.CompletionMs),
			StageIDs: x.StageIDs, Status: sparkJobStatus(x.Status),
			NumTasks: x.NumTasks, NumActiveTasks: x.NumActiveTasks, NumCompletedTasks: x.NumCompletedTasks,
			NumSkippedTasks: x.NumSkippedTasks, NumFailedTasks: x.NumFailedTasks, NumKilledTasks: x.NumKilledTasks,
			NumActiveStages: x.NumActiveStages, NumCompletedStages: x.NumCompletedStages,
			NumSkippedStages: x.NumSkippedStages, NumFailedStages: x.NumFailedStages,
		})
	}
	for _, x := range a.Stages {
		st := job.SparkStage{
			ID: x.StageID, AttemptID: x.AttemptID, Name: x.Name, Details: x.Details,
			Status: sparkStageStatus(x.Status), FailureReason: x.FailureReason,
			NumTasks: x.NumTasks, NumActiveTasks: x.NumActiveTasks, NumCompleteTasks: x.NumCompleteTasks,
			NumFailedTasks: x.NumFailedTasks, NumKilledTasks: x.NumKilledTasks,
			SubmissionMs: int64(x.SubmissionMs), CompletionMs: int64(x.CompletionMs),
			ExecutorRunTimeMs: x.ExecutorRunTimeMs, ExecutorCPUTimeNs: x.ExecutorCPUTimeNs,
			InputBytes: x.InputBytes, InputRecords: x.InputRecords,
			OutputBytes: x.OutputBytes, OutputRecords: x.OutputRecords,
			ShuffleReadBytes: x.ShuffleReadBytes, ShuffleReadRecords: x.ShuffleReadRecords,
			ShuffleWriteBytes: x.ShuffleWriteBytes, ShuffleWriteRecords: x.ShuffleWriteRecords,
			MemoryBytesSpilled: x.MemoryBytesSpilled, DiskBytesSpilled: x.DiskBytesSpilled,
		}
		st.Tasks = x.Tasks
		sa.Stages = append(sa.Stages, st)
	}
	for _, e := range a.Executors {
		sa.Executors = append(sa.Executors, job.SparkExecutor{
			ID: e.ID, HostPort: e.HostPort, IsActive: e.IsActive, Cores: e.TotalCores,
			RDDBlocks: e.RDDBlocks, MemoryUsedBytes: e.MemoryUsed, DiskUsedBytes: e.DiskUsed,
			MaxMemoryBytes: e.MaxMemory, ActiveTasks: e.ActiveTasks, FailedTasks: e.FailedTasks,
			CompletedTasks: e.CompletedTasks, TotalTasks: e.TotalTasks, MaxTasks: e.MaxTasks,
			TotalDurationMs: e.TotalDurationMs, TotalGCTimeMs: e.TotalGCTimeMs,
			TotalInputBytes: e.TotalInputBytes, TotalShuffleReadBytes: e.TotalShuffleRead,
			TotalShuffleWriteBytes: e.TotalShuffleWrite, TotalMemoryBytesSpilled: e.MemorySpilled,
			AddMs: int64(e.AddMs), RemoveMs: int64(e.RemoveMs), Peak: peakMemory(e.PeakMemoryMetrics),
		})
	}
	j.Spark = sa
	return j
}

// peakMemory converts peak metrics; present (all zeros, possibly) when the
// source had them at all, as the history server serves zeros for an
// executor whose tasks ended without executor metrics.
func peakMemory(m map[string]int64) *job.SparkPeakMemory {
	if m == nil {
		return nil
	}
	return &job.SparkPeakMemory{
		JVMHeapMemory: m["JVMHeapMemory"], JVMOffHeapMemory: m["JVMOffHeapMemory"],
		OnHeapExecutionMemory: m["OnHeapExecutionMemory"], OffHeapExecutionMemory: m["OffHeapExecutionMemory"],
		OnHeapStorageMemory: m["OnHeapStorageMemory"], OffHeapStorageMemory: m["OffHeapStorageMemory"],
		OnHeapUnifiedMemory: m["OnHeapUnifiedMemory"], OffHeapUnifiedMemory: m["OffHeapUnifiedMemory"],
		DirectPoolMemory: m["DirectPoolMemory"], MappedPoolMemory: m["MappedPoolMemory"],
		ProcessTreeJVMRSS: m["ProcessTreeJVMRSSMemory"],
		MinorGCCount:      m["MinorGCCount"], MinorGCTimeMs: m["MinorGCTime"],
		MajorGCCount: m["MajorGCCount"], MajorGCTimeMs: m["MajorGCTime"],
	}
}

func sparkJobStatus(s string) job.Status {
	switch strings.ToUpper(s) {
	case "SUCCEEDED":
		return job.Succeeded
	case "FAILED":
		return job.Failed
	case "RUNNING":
		return job.Running
	}
	return job.Unknown
}

func sparkStageStatus(s string) job.Status {
	switch strings.ToUpper(s) {
	case "ACTIVE":
		return job.StageActive
	case "COMPLETE":
		return job.StageComplete
	case "FAILED":
		return job.Failed
	case "SKIPPED":
		return job.StageSkipped
	}
	return job.StagePending
}
