// Package fetcher reads finished Hadoop jobs from history sources into the
// neutral model of collector/job. Fetch (or Options.Fetch) takes a file, a
// directory or a history-server URL and hands every job it reads to a
// callback, one at a time, so a caller never holds more than one job. It
// reads MapReduce job histories (.jhist in Avro JSON or Avro binary, with
// the <jobid>_conf.xml beside them), rumen traces (.json, .json.gz), Spark event logs (plain, .lz4,
// .snappy, .zstd/.zst, .inprogress, Spark 3 rolling-log directories) and
// the JobHistory and Spark History Server REST APIs (a bare
// http://host:port is probed for either). Files are recognised by content;
// names matter only for the codec suffix. A Spark application read from
// its event log is the same model as one read from a history server's REST
// API. LocateJobHistory, DoneDir and Backfill find the job history of a
// YARN application (id, user, finish time) as Dr. Elephant does.
//
// What callers must know: input is untrusted and streamed within the
// bounds of limits.go. A truncated or damaged file yields the job as far as
// it was read, with a sentence in job.Warnings; a line over a bound is
// skipped with a warning; a job whose model would pass Options.MaxJobBytes
// (DefaultMaxJobBytes, 1 GiB) is refused with ErrTooLarge and never reaches
// the callback. Input that is in no known format or cannot be opened is an
// error (ErrUnknownFormat, ErrCorrupt, ErrUnsupportedCodec, ErrNoJob,
// ErrHTTP, ErrTooDeep, or the os error), and so is a history server that
// cannot be reached (ErrUnreachable, wrapping the network's error: a URL
// that gives no answer is never taken for a server of an unknown kind); a
// Spark event log without an application start event naming an App ID is
// ErrNoJob, never a job with an empty id. An error from the callback stops
// the fetch and is returned as is. The parsers never log. Options.Skip lets
// a poller pass over jobs it already stored before their details are
// downloaded.
//
// docs/collector.md#collectorfetcher describes each format, how Spark's
// objects are derived from an event log, the parallel job-history parser,
// progress splits and every bound.
package fetcher
