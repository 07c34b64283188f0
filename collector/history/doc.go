// Package history is the collector's job-history poller. Every interval it
// reads the configured sources (directories of job histories and event
// logs, JobHistory / Spark History Server URLs) with collector/fetcher,
// analyses each finished job once with an Analyzer (the heuristics engine)
// and stores the result through a Sink (the store).
//
// Once means: a job whose id the sink already has is not analysed again,
// and a file or rolling-log directory whose size and modification time
// have not changed since all its jobs were handled is not even re-read.
// Finished means SUCCEEDED or FAILED, as Dr. Elephant analyses them (KILLED
// jobs are skipped). A job that is not finished (a running Spark
// application, a job history without its completion event) is deferred; if
// its input stays unchanged for SettleRounds polls it is analysed as it
// stands, with the fetcher's truncation warning in the result, so a log
// cut short for good is still reported once — unless its writer marks it in
// progress (an ".inprogress" event log or rolling-log status file), which is
// waited for until it is renamed.
//
// A source that cannot be read is logged and retried at the next poll; Run
// only returns when its context ends.
package history
