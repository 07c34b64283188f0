// Package heuristics analyses a finished job (collector/job) the way
// LinkedIn's Dr. Elephant does, plus cross-layer heuristics only Strata can
// compute from its memory traces.
//
// Everything here is a pure function of its inputs: heuristics never fetch,
// never log and never read the clock. docs/heuristics.md in the repository
// states every rule, threshold, metric and statistics primitive in prose,
// one heading per heuristic; doc comments point there by anchor
// (docs/heuristics.md#mapper-skew). Dr. Elephant's quirks are reproduced on
// purpose so that severities and scores match its own.
//
// # Model
//
//   - Severity: NONE < LOW < MODERATE < SEVERE < CRITICAL, values 0–4, the
//     same as stratav1.Severity.
//   - Thresholds: four numbers (low, moderate, severe, critical) evaluated
//     Ascending (bigger is worse) or Descending, inclusive at the bounds.
//   - Score(sev, n): 0 for NONE and LOW, else severity × n, n being the
//     number of tasks the heuristic looked at (Spark master heuristics,
//     Exception and Distributed Cache always score 0).
//   - A job's severity is the highest of its results; its score their sum.
//   - A result's details are (name, value, long text): the value is the
//     measured or configured number, the long text (Detail.Details) the
//     advice or stack trace Dr. Elephant shows below it.
//
// # Use
//
//	cfg, err := heuristics.LoadConfig(path) // "" for the defaults
//	eng, err := heuristics.NewEngine(cfg)
//	res := eng.Analyze(j)                   // *stratav1.JobResult
//	res = eng.AnalyzeWithTrace(j, summary)  // plus cross-layer heuristics
//
// # A heuristic in one file
//
// Each heuristic's file declares everything about it in one def passed to
// register: its YAML key, display name, place in the results, default
// parameters (a struct embedding Common whose fields carry their YAML key,
// a help text and a check tag) and its constructor. Adding a heuristic
// touches that file, its test and its section of docs/heuristics.md (a
// test fails without it). A mapper/reducer pair that shares one rule
// (skew, GC, memory) shares its file and parameter type, as Dr. Elephant's
// generic classes do.
//
// Configuration is YAML: the shared settings (hdfs_block_size_bytes,
// job_types, metrics) and one section per heuristic under its key. An
// override file names only what it changes; an unknown key at any level is
// an error with its line. DefaultsYAML (strata analyze -defaults) prints
// every key with its default and meaning, generated from the registry.
//
// # Metrics
//
// ComputeMetrics gives used and wasted resources (MB·s, shown as GB·h),
// wait time and runtime (docs/heuristics.md#job-metrics). MapReduce charges
// each task its container size × whole seconds, and wastes container − 1.5
// × the group's peak memory; where a task has no memory counters Strata
// uses the peak of its progress splits (Dr. Elephant would skip the task).
// Spark (master) charges executor instances × executor memory × the last
// attempt's duration.
//
// # Cross-layer input
//
// TraceSummary is filled by the collector from its store for the job's
// application id (collector/server); AnalyzeWithTrace runs the cross-layer
// heuristics only when ts.AppID equals the job's AppID, and each of them
// skips itself when the numbers it needs were not measured.
package heuristics
