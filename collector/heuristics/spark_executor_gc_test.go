package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Executor GC vectors (docs/heuristics.md#test-vectors): D thresholds
// 0.5,0.3,0.2,0.1, A defaults.
func TestSparkExecutorGCVectors(t *testing.T) {
	h := &SparkExecutorGC{high: sparkExecutorGC.of(defaults(t)).GCSeverityA, low: Thresholds{0.5, 0.3, 0.2, 0.1}}
	const m = 60_000
	app := &job.SparkApp{Executors: []job.SparkExecutor{
		{ID: "1", TotalGCTimeMs: 2 * m, TotalDurationMs: 15 * m},
		{ID: "2", TotalGCTimeMs: 6 * m, TotalDurationMs: 14 * m},
		{ID: "3", TotalGCTimeMs: 4 * m, TotalDurationMs: 20 * m},
		{ID: "4", TotalGCTimeMs: 8 * m, TotalDurationMs: 30 * m},
		{ID: "driver", TotalGCTimeMs: 100 * m, TotalDurationMs: 1 * m},
	}}
	r := h.Apply(sparkJob(nil, app))
	if r.Severity != Critical || r.Score != 0 {
		t.Fatalf("EG-1 severity %v score %d, want CRITICAL 0", r.Severity, r.Score)
	}
	if len(r.Details) != 5 {
		t.Fatalf("EG-1 details %v, want 5", r.Details)
	}
	if r.Details[1].Value != "1200000" || r.Details[2].Value != "4740000" ||
		r.Details[3].Name != "Gc ratio high" || r.Details[4].Name != "Gc ratio low" {
		t.Errorf("EG-1 details %v", r.Details)
	}
	if r.Details[0].Value[:6] != "0.2531" {
		t.Errorf("EG-1 ratio %s, want ≈0.2532", r.Details[0].Value)
	}
	if r := h.Apply(sparkJob(nil, nil)); r.Severity != None {
		t.Errorf("no executors: %v, want NONE", r.Severity)
	}
}
