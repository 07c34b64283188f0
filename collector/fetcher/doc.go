// Package fetcher reads finished Hadoop jobs from history sources into the
// neutral model of collector/job. Its one entry point is Fetch, which takes
// a file, a directory or a history-server URL and hands every job it reads
// to a callback, one at a time, so a caller never holds more than one job.
//
// # Formats
//
//   - MapReduce job histories (.jhist): Avro-JSON, a line "Avro-Json", a
//     line with the Avro schema, then one event per line
//     {"type": "TASK_FINISHED", "event": {"<record class>": {…}}}. Union
//     values may be bare or wrapped ({"string": "…"}) depending on the
//     Hadoop version. The job conf is the <jobid>_conf.xml beside the
//     history file, in both the done (done/yyyy/mm/dd/serial/) and the
//     done_intermediate (done_intermediate/<user>/) layouts.
//   - Rumen traces (.json, .json.gz): concatenated JSON job objects; -1
//     marks an unknown counter.
//   - Spark event logs: JSON lines, plain or compressed with the codecs
//     Spark writes, chosen by suffix: .lz4 (lz4-java's LZ4BlockOutputStream
//     block stream, not the LZ4 frame format), .snappy (snappy-java's
//     SnappyOutputStream stream, not Snappy's framing format), .zstd/.zst
//     (standard zstd frames). A ".inprogress" suffix is allowed. Spark 3
//     rolling logs are directories eventlog_v2_<appid> of parts
//     events_<n>_<appid>[.codec] read in order (from the last .compact part).
//     The history server's objects (jobs, stages, executors) are derived
//     by replaying the events as the history server (3.x, 4.x) does, so an
//     application read from its log and from a live server's REST API is
//     the same model (test/workloads checks it against real servers): an
//     executor's memoryUsed, diskUsed and rddBlocks follow the logged block
//     updates (spark.eventLog.logBlockUpdates; without them 0, as served,
//     and Spark 1.x "Updated Blocks" are ignored, as the server ignores
//     them), maxTasks is its cores over spark.task.cpus, peak memory
//     metrics are present (zeros included) once a task ended on it, and the
//     driver's totalDuration is the application's run time and its
//     totalGCTime its peak TotalGCTime metric, the values the server puts
//     in the driver's place.
//   - JobHistory server REST (…/ws/v1/history/mapreduce/jobs[/{id}]) and
//     Spark History Server REST (…/api/v1/applications[/{id}]); a bare
//     http://host:port is probed for either.
//
// LocateJobHistory, DoneDir and Backfill find job histories the way Dr.
// Elephant's job-history fetcher does, for callers that start from a YARN
// application (id, user, finish time) rather than from a directory.
//
// Files are recognised by content (the first few KiB after decompression),
// so names do not matter except for the codec suffix. Options carries an
// HTTP client for history servers (TLS, authentication) and a Skip
// callback that lets a poller pass over jobs it already stored before
// their details are downloaded.
//
// # Speed
//
// Job histories are the largest inputs (a 100 000-task job is ~400 MiB).
// Their lines are decoded by a hand-written scanner (jhscan.go) on
// GOMAXPROCS goroutines and applied to the job in file order (jhpar.go);
// any line the scanner does not handle exactly is decoded with
// encoding/json instead, and a differential fuzz test holds the two to the
// same result. BenchmarkJobHistory100k compares the whole parse with a
// plain encoding/json decode of the same file.
//
// # Progress splits
//
// Job histories and rumen traces carry per-attempt progress splits in 12
// buckets. They land in job.Attempt.Splits normalised as collector/job
// documents (see splitsFrom): wall clock and CPU as per-bucket increments,
// memory as per-bucket state, gaps left by a progress jump interpolated.
// job.Task.PeakMemory falls back to them when the memory counters are
// missing (rumen attempts without resourceUsageMetrics).
//
// # Damaged and hostile input
//
// Everything is streamed: lines with a bounded buffer, rumen jobs one value
// (a field, a task) at a time, compressed streams block by block, Spark
// tasks folded into stage and executor totals as they are read. A truncated
// or damaged file yields the job as far as it was read, with a sentence in
// job.Warnings; a file that is not in any known format, or that cannot be
// opened, is an error (ErrUnknownFormat, ErrCorrupt, ErrUnsupportedCodec,
// ErrNoJob, ErrHTTP, or the os error). The parsers never log.
//
// limits.go holds the bounds that keep any input from crashing or swelling
// the caller: 128 levels of nesting in any JSON value or conf XML (no
// decoder recurses deeper, so no input overflows a stack; past it:
// ErrTooDeep), 64 MiB per line or rumen value, 16 MiB per job conf, 256
// MiB per REST response, 128 MiB of Spark per-task details, and a memory
// budget per job model (DefaultMaxJobBytes, 1 GiB, Options.MaxJobBytes)
// past which the job is refused (ErrTooLarge). A line over a bound is one
// malformed line, skipped with a warning; a job over its budget never
// reaches the caller.
package fetcher
