package job

// Type is the kind of application a Job describes.
type Type string

// Application types.
const (
	MapReduce Type = "mapreduce"
	Spark     Type = "spark"
)

// Status is the final status of a job, task or attempt, spelled as Hadoop
// and Spark spell it.
type Status string

// Statuses. Fetchers map source spellings onto these (Spark stage
// "COMPLETE" and task "SUCCESS" keep their own constants below).
const (
	Succeeded Status = "SUCCEEDED"
	Failed    Status = "FAILED"
	Killed    Status = "KILLED"
	Running   Status = "RUNNING"
	Unknown   Status = "UNKNOWN"
)

// Job is one finished (or truncated) application as read from one source.
type Job struct {
	// ID is the job id: job_… for MapReduce, the Spark application id for
	// Spark.
	ID string
	// AppID is the YARN (or Spark) application id; it joins the job to
	// Strata's traces.
	AppID string
	Type  Type
	Name  string
	User  string
	Queue string

	// SubmitMs, StartMs and FinishMs are ms since the Unix epoch; 0 when
	// unknown. StartMs is the launch time of the job (MapReduce) or the
	// start of the last attempt (Spark).
	SubmitMs int64
	StartMs  int64
	FinishMs int64

	// Status is the job's final status (Succeeded or Failed for analysed
	// jobs).
	Status Status
	// Diagnostics is the failure text of a failed job: preferably the stack
	// trace of the attempt it failed on.
	Diagnostics string

	// Source is the file path or URL the job was read from.
	Source string

	// Conf is the job configuration (MapReduce) or the Spark properties
	// (Spark). Never nil after a fetch; may be empty.
	Conf map[string]string

	// Counters are the job-level counters (MapReduce), flattened by name.
	Counters Counters

	// MapTasks and ReduceTasks are the tasks of a MapReduce job.
	MapTasks    []Task
	ReduceTasks []Task

	// Spark is the application data of a Spark job; nil for MapReduce.
	Spark *SparkApp

	// Warnings describe input problems that did not stop the read
	// (truncated logs, sampled tasks, unknown events).
	Warnings []string
}

// Succeeded reports whether the job's final status is SUCCEEDED.
func (j *Job) Succeeded() bool { return j.Status == Succeeded }

// Counters maps a counter name (Hadoop's, e.g. "HDFS_BYTES_READ",
// "GC_TIME_MILLIS") to its value. A nil Counters means "no counters known";
// lookups on it return 0.
type Counters map[string]int64

// Get returns the named counter, 0 when absent (as Dr. Elephant does).
func (c Counters) Get(name string) int64 { return c[name] }

// Has reports whether the named counter is present.
func (c Counters) Has(name string) bool {
	_, ok := c[name]
	return ok
}

// Counter names used by the heuristics and metrics (Hadoop spelling).
const (
	HDFSBytesRead        = "HDFS_BYTES_READ"
	HDFSBytesWritten     = "HDFS_BYTES_WRITTEN"
	S3BytesRead          = "S3_BYTES_READ"
	S3ABytesRead         = "S3A_BYTES_READ"
	S3NBytesRead         = "S3N_BYTES_READ"
	FileBytesRead        = "FILE_BYTES_READ"
	FileBytesWritten     = "FILE_BYTES_WRITTEN"
	MapInputRecords      = "MAP_INPUT_RECORDS"
	MapOutputRecords     = "MAP_OUTPUT_RECORDS"
	MapOutputBytes       = "MAP_OUTPUT_BYTES"
	ReduceShuffleBytes   = "REDUCE_SHUFFLE_BYTES"
	ReduceInputRecords   = "REDUCE_INPUT_RECORDS"
	ReduceOutputRecords  = "REDUCE_OUTPUT_RECORDS"
	SpilledRecords       = "SPILLED_RECORDS"
	CPUMilliseconds      = "CPU_MILLISECONDS"
	GCTimeMillis         = "GC_TIME_MILLIS"
	CommittedHeapBytes   = "COMMITTED_HEAP_BYTES"
	PhysicalMemoryBytes  = "PHYSICAL_MEMORY_BYTES"
	VirtualMemoryBytes   = "VIRTUAL_MEMORY_BYTES"
	SplitRawBytes        = "SPLIT_RAW_BYTES"
	CombineInputRecords  = "COMBINE_INPUT_RECORDS"
	CombineOutputRecords = "COMBINE_OUTPUT_RECORDS"
)
