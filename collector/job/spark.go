package job

// Spark status spellings that differ from Status' common ones.
const (
	StageActive   Status = "ACTIVE"
	StageComplete Status = "COMPLETE"
	StagePending  Status = "PENDING"
	StageSkipped  Status = "SKIPPED"
	TaskSuccess   Status = "SUCCESS"
)

// DriverID is the executor id Spark gives the driver.
const DriverID = "driver"

// SparkApp is a Spark application as the Spark History Server's REST API
// (status API v1) describes it. Spark properties live in Job.Conf.
type SparkApp struct {
	// SparkVersion is the version that wrote the event log, if known.
	SparkVersion string
	// Attempts of the application, oldest first. Heuristics use the last.
	Attempts []SparkAttempt
	// SystemProperties and other environment sections, if the source has
	// them (not needed by the heuristics).
	SystemProperties map[string]string
	Jobs             []SparkJob
	Stages           []SparkStage
	// Executors include the driver (ID "driver").
	Executors []SparkExecutor
}

// LastAttempt returns the last attempt, or nil when there is none.
func (s *SparkApp) LastAttempt() *SparkAttempt {
	if s == nil || len(s.Attempts) == 0 {
		return nil
	}
	return &s.Attempts[len(s.Attempts)-1]
}

// SparkAttempt is one attempt of a Spark application.
type SparkAttempt struct {
	ID        string // empty for client-mode / single-attempt apps
	StartMs   int64  // ms since epoch
	EndMs     int64  // ms since epoch; 0 when unfinished
	SparkUser string
	Completed bool
}

// DurationMs is EndMs − StartMs.
func (a *SparkAttempt) DurationMs() int64 { return a.EndMs - a.StartMs }

// SparkJob is one Spark job (an action).
type SparkJob struct {
	ID           int
	Name         string
	Description  string
	Group        string
	SubmissionMs int64 // ms since epoch; 0 when unknown
	CompletionMs int64 // ms since epoch; 0 when unknown
	StageIDs     []int
	// Status is Succeeded, Failed, Running or Unknown.
	Status Status

	NumTasks           int
	NumActiveTasks     int
	NumCompletedTasks  int
	NumSkippedTasks    int
	NumFailedTasks     int
	NumKilledTasks     int
	NumActiveStages    int
	NumCompletedStages int
	NumSkippedStages   int
	NumFailedStages    int
}

// SparkStage is one attempt of one Spark stage.
type SparkStage struct {
	ID        int
	AttemptID int
	Name      string
	Details   string
	// Status is StageActive, StageComplete, Failed, StagePending or
	// StageSkipped.
	Status        Status
	FailureReason string

	NumTasks         int
	NumActiveTasks   int
	NumCompleteTasks int
	NumFailedTasks   int
	NumKilledTasks   int

	SubmissionMs int64 // ms since epoch
	CompletionMs int64 // ms since epoch

	// ExecutorRunTimeMs is the sum of the tasks' executor run time (ms).
	ExecutorRunTimeMs int64
	// ExecutorCPUTimeNs is the sum of the tasks' executor CPU time (ns).
	ExecutorCPUTimeNs int64

	InputBytes          int64
	InputRecords        int64
	OutputBytes         int64
	OutputRecords       int64
	ShuffleReadBytes    int64
	ShuffleReadRecords  int64
	ShuffleWriteBytes   int64
	ShuffleWriteRecords int64
	MemoryBytesSpilled  int64
	DiskBytesSpilled    int64

	// Tasks of this stage attempt; may be empty when the source omits them.
	Tasks []SparkTask
}

// SparkTask is one Spark task attempt.
type SparkTask struct {
	TaskID      int64
	Index       int
	Attempt     int
	ExecutorID  string
	Host        string
	LaunchMs    int64 // ms since epoch
	FinishMs    int64 // ms since epoch; 0 when unfinished
	Speculative bool
	// Status is TaskSuccess, Failed, Killed or Running.
	Status Status
	// ErrorMessage is the failure reason of a failed task (stack trace or
	// "ExecutorLostFailure …").
	ErrorMessage string

	ExecutorRunTimeMs   int64
	ExecutorCPUTimeNs   int64
	JVMGCTimeMs         int64
	InputBytes          int64
	OutputBytes         int64
	ShuffleReadBytes    int64 // remote + local
	ShuffleWriteBytes   int64
	MemoryBytesSpilled  int64
	DiskBytesSpilled    int64
	PeakExecutionMemory int64 // bytes
}

// DurationMs is FinishMs − LaunchMs, 0 when unfinished.
func (t *SparkTask) DurationMs() int64 {
	if t.FinishMs == 0 {
		return 0
	}
	return t.FinishMs - t.LaunchMs
}

// SparkExecutor is the summary of one executor (or the driver).
type SparkExecutor struct {
	ID       string // "driver" for the driver
	HostPort string
	IsActive bool
	Cores    int

	RDDBlocks int
	// MemoryUsedBytes is the storage memory used (the peak observed, when
	// derived from an event log).
	MemoryUsedBytes int64
	DiskUsedBytes   int64
	// MaxMemoryBytes is the storage memory available to the block manager.
	MaxMemoryBytes int64

	ActiveTasks    int
	FailedTasks    int
	CompletedTasks int
	TotalTasks     int
	MaxTasks       int

	// TotalDurationMs is the sum of the durations of the tasks that ran on
	// this executor (not its wall time).
	TotalDurationMs int64
	// TotalGCTimeMs is the sum of the tasks' JVM GC time.
	TotalGCTimeMs           int64
	TotalInputBytes         int64
	TotalShuffleReadBytes   int64
	TotalShuffleWriteBytes  int64
	TotalMemoryBytesSpilled int64

	AddMs    int64 // ms since epoch the executor was added; 0 unknown
	RemoveMs int64 // ms since epoch it was removed; 0 when never removed

	// Peak holds the executor's peak memory metrics (Spark ≥ 3.0); nil when
	// absent.
	Peak *SparkPeakMemory
}

// SparkPeakMemory are Spark's executor peak memory metrics, in bytes.
type SparkPeakMemory struct {
	JVMHeapMemory          int64
	JVMOffHeapMemory       int64
	OnHeapExecutionMemory  int64
	OffHeapExecutionMemory int64
	OnHeapStorageMemory    int64
	OffHeapStorageMemory   int64
	OnHeapUnifiedMemory    int64
	OffHeapUnifiedMemory   int64
	DirectPoolMemory       int64
	MappedPoolMemory       int64
	ProcessTreeJVMRSS      int64
	MinorGCCount           int64
	MinorGCTimeMs          int64
	MajorGCCount           int64
	MajorGCTimeMs          int64
}
