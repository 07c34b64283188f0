// Package job is Strata's neutral model of one finished Hadoop job: a
// MapReduce job or a Spark application, read from whatever history source
// (job history files, rumen traces, JobHistory and Spark History Server REST
// APIs, Spark event logs). Fetchers (collector/fetcher) build a *Job;
// heuristics (collector/heuristics) read it and never fetch.
//
// The model is plain structs with no behaviour beyond small derivations
// (task times, counter lookup, peak memory from progress splits). Units are
// in the field names or doc comments: times are milliseconds since the Unix
// epoch (0 = unknown), durations are milliseconds, sizes are bytes unless a
// field says otherwise.
//
// # What every fetcher fills
//
//   - ID, AppID, Type, Name, User, Queue, SubmitMs/StartMs/FinishMs, Status,
//     Source. For MapReduce ID is the job id (job_…) and AppID the YARN
//     application id (application_…); for Spark both are the Spark
//     application id (spark.app.id).
//   - Diagnostics for failed jobs: the stack trace of the attempt the job
//     failed on, or the job's own failure text.
//   - Conf: the job configuration (_conf.xml, REST conf) for MapReduce; the
//     "Spark Properties" of the environment for Spark.
//   - Warnings: one sentence per problem that did not stop the read, e.g. a
//     truncated event log ("event log truncated at line 1234: …"). A
//     truncated input still yields the job as far as it was read.
//
// # MapReduce
//
// Counters holds the job-level totals. MapTasks and ReduceTasks hold every
// task of the job (or the sampled ones, see below). For each task:
//
//   - Counters: the task-level counters, flattened by counter name (Hadoop
//     names: HDFS_BYTES_READ, GC_TIME_MILLIS, PHYSICAL_MEMORY_BYTES, …). When
//     two groups carry the same name, the first group in input order wins.
//     Leave Counters nil when the source has no counters for the task; an
//     empty non-nil map means "counters present, all zero".
//   - Attempts: the attempts the source knows, with their own times,
//     counters and progress splits.
//   - Analyzed: the id of the attempt the analysis looks at — the
//     successful attempt of a SUCCEEDED task, otherwise the attempt the task
//     failed due to (for REST: the unsuccessful attempt with the smallest
//     finish time). Empty when there is none: the task then has no time
//     data, as in Dr. Elephant.
//
// Reduce attempts carry ShuffleFinishMs and SortFinishMs (REST: start +
// elapsedShuffleTime, then + elapsedMergeTime). Map attempts leave them 0.
//
// Progress splits (rumen, jhist): 12 buckets per series, bucket i covering
// task progress [i/12, (i+1)/12). Fetchers normalise them so that
// ClockSplits and CPUUsages hold the milliseconds spent within each bucket
// (the per-bucket increment of a cumulative counter, so the sum is the total)
// and VmemKbytes and PhysMemKbytes hold the memory state observed in each
// bucket (KiB); buckets the task jumped over are interpolated by the
// fetcher. Leave Splits nil when the source has none.
//
// Sampling: when a fetcher samples tasks it keeps only the sampled tasks and
// says so in Warnings.
//
// # Spark
//
// Spark holds the equivalent of the Spark History Server's REST objects
// (applications, jobs, stages, executors), whether the fetcher read them
// from the REST API or derived them from an event log the way the history
// server does: executor TotalDurationMs = Σ(task finish − launch),
// TotalGCTimeMs = Σ JVM GC time, stage ExecutorRunTimeMs = Σ executor run
// time of its tasks, a task failed iff its end reason is not Success, a
// stage FAILED iff its completion carries a failure reason. The executor
// list includes the driver (ID "driver"). Tasks per stage are optional;
// heuristics that need them say so.
package job
