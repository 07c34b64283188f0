// Package heuristics analyses a finished job (collector/job) the way
// LinkedIn's Dr. Elephant does, plus cross-layer heuristics only Strata can
// compute from its memory traces.
//
// Everything here is a pure function of its inputs: heuristics never fetch,
// never log and never read the clock. The authority for every rule, default
// and quirk is the research note ../shared/research/drelephant.md (section
// numbers in the doc comments refer to it); Dr. Elephant's quirks are
// reproduced on purpose so that severities and scores match its own.
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
//
// # Use
//
//	cfg, err := heuristics.LoadConfig(path) // "" for the embedded defaults
//	eng, err := heuristics.NewEngine(cfg)
//	res := eng.Analyze(j)                   // *stratav1.JobResult
//	res = eng.AnalyzeWithTrace(j, summary)  // plus cross-layer heuristics
//
// Every heuristic is one file registering itself in init (the only
// package-level state); a mapper/reducer pair that shares one rule (skew,
// GC, memory) shares its file, as Dr. Elephant's generic classes do; results come in Dr. Elephant's shipped order. The
// thresholds live in defaults.yaml (embedded; DefaultsYAML returns it with
// its comments); an override file replaces only the keys it names and
// unknown keys are an error.
//
// # Metrics
//
// ComputeMetrics gives used and wasted resources (MB·s, shown as GB·h),
// wait time and runtime (§3). MapReduce charges each task its container
// size × whole seconds, and wastes container − 1.5 × the group's peak
// memory; where a task has no memory counters Strata uses the peak of its
// progress splits (Dr. Elephant would skip the task). Spark (master)
// charges executor instances × executor memory × the last attempt's
// duration.
//
// # Cross-layer input
//
// TraceSummary is filled by the collector from its store for the job's
// application id (collector/server); AnalyzeWithTrace runs the cross-layer heuristics only
// when ts.AppID equals the job's AppID, and each of them skips itself when
// the numbers it needs were not measured.
package heuristics
