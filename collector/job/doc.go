// Package job is Strata's neutral model of one finished Hadoop job — a
// MapReduce job or a Spark application — whatever history source it was
// read from. Fetchers (collector/fetcher) build a *Job; heuristics
// (collector/heuristics) read it and never fetch. The model is plain
// structs whose only behaviour is small derivations: task times
// (Task.Times), counter lookup, peak memory from progress splits.
//
// What fetchers and readers must agree on: times are milliseconds since the
// Unix epoch (0 = unknown), durations milliseconds, sizes bytes unless a
// field says otherwise. For MapReduce ID is the job id and AppID the YARN
// application id; for Spark both are spark.app.id. A nil Counters or Splits
// means the source had none; an empty non-nil Counters means all zero.
// Task.Analyzed names the attempt the analysis uses (empty: the task has no
// time data). Progress splits are normalised by the fetcher (12 buckets;
// clock and CPU as per-bucket increments, memory as per-bucket state).
// Spark holds what the Spark History Server's REST API serves, the driver
// included in the executor list as ID "driver". A problem that did not
// stop the read is one sentence in Warnings, and a truncated input yields
// the job as far as it was read.
//
// CachedBlock is the other side of the join: one cached RDD block as
// Strata's traces saw it (gets, free, pages per NUMA node, faults, DAMON
// heat), which the collector reads from its store for the cross-layer
// heuristics; it is never read from a job history.
//
// docs/collector.md#collectorjob lists what every fetcher fills and how
// each MapReduce and Spark field is derived.
package job
