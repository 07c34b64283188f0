// Package heuristics rates a finished job (collector/job) the way
// LinkedIn's Dr. Elephant does, reproducing its quirks so that severities
// and scores match its own, and adds cross-layer heuristics that only
// Strata's memory traces allow. An Engine built from a Config (LoadConfig:
// the defaults overridden by a YAML file) runs every enabled heuristic on a
// job and returns a stratav1.JobResult: one result per heuristic that
// applies (severity NONE to CRITICAL, a score, details), the job's
// severity (the highest) and score (the sum), and its resource metrics.
//
// What callers must know: everything here is a pure function of its
// inputs — heuristics never fetch, never log and never read the clock, and
// an Engine may be shared. AnalyzeWithTrace adds the cross-layer
// heuristics only when the TraceSummary is of the job's application
// (ts.AppID == j.AppID); each of them skips itself when a number it needs
// was not measured. In a configuration file an unknown key is an error
// with its line, and a bad threshold (ErrBadParam, ErrThresholdOrder) is an
// error, never a silent fallback to the default. docs/heuristics.md states every rule, threshold and metric, one
// heading per heuristic; doc comments point there by anchor, and
// docs/heuristics.md#the-package describes how the package is laid out.
//
//	cfg, err := heuristics.LoadConfig(path) // "" for the defaults
//	eng, err := heuristics.NewEngine(cfg)
//	res := eng.Analyze(j)                   // *stratav1.JobResult
//	res = eng.AnalyzeWithTrace(j, summary)  // plus cross-layer heuristics
package heuristics
