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
// Several collectors may poll the same histories (each behind one
// ClickHouse). With Config.Claims each job is then analysed by one of
// them: a poll reads the live claims first, analyses only the jobs whose
// decided claim is its own, and claims the unclaimed ones in one call at
// its end; a job claimed by another collector, or whose claim is not yet
// decided, waits and its unit is read again at the next poll, until the
// winner has stored it (Known) or the winner's lease ran out and a new
// claim wins. A job is so analysed one poll later than without claims.
//
// A unit that cannot be read is counted (Stats.Errors) and logged once.
// When its content is at fault — not a history, corrupt, nested too deeply,
// over a size bound (see collector/fetcher) — it is skipped (Stats.Failed)
// until its size or modification time changes: a hostile or broken file
// costs one read, however long the collector runs. When the input could not
// be reached (open or stat failed, a history server did not answer) it is
// retried at every poll, without logging again while it fails the same
// way. No input stops the poller; Run only returns when its context ends.
package history
