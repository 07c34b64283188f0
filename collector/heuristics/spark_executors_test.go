package heuristics

import (
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Executors vectors (docs/heuristics.md#test-vectors): ratio thresholds
// 1.414,2,4,16, ignore 4 000 000 B and 4 000 001 ms; executors i = 1..4.
func TestSparkExecutorsVectors(t *testing.T) {
	h := &SparkExecutors{ratio: Thresholds{1.414, 2, 4, 16}, ignoreBytes: 4_000_000, ignoreMillis: 4_000_001}
	var ex []job.SparkExecutor
	for i := int64(1); i <= 4; i++ {
		ex = append(ex, job.SparkExecutor{ID: itoa(i), MemoryUsedBytes: i * 1_000_000, TotalDurationMs: i*1_000_000 + 1,
			TotalInputBytes: i*1_000_000 + 2, TotalShuffleReadBytes: i*1_000_000 + 3, TotalShuffleWriteBytes: i*1_000_000 + 4,
			MaxMemoryBytes: 5_000_000})
	}
	r := h.Apply(sparkJob(nil, &job.SparkApp{Executors: ex}))
	if r.Severity != Low || r.Score != 0 {
		t.Fatalf("EX-1 severity %v score %d, want LOW 0", r.Severity, r.Score)
	}
	for name, want := range map[string]string{
		"Total executor storage memory allocated":  "19.07 MB",
		"Total executor storage memory used":       "9.54 MB",
		"Executor storage memory utilization rate": "0.500",
		"Executor task time sum":                   "10000",
	} {
		if got, _ := findDetail(r, name); got != want {
			t.Errorf("EX-1 %s = %q, want %q", name, got, want)
		}
	}
	mem := Distribute([]int64{1_000_000, 2_000_000, 3_000_000, 4_000_000})
	if want := (Distribution{1_000_000, 1_000_000, 2_500_000, 3_000_000, 4_000_000}); mem != want {
		t.Errorf("EX-1 memory distribution %+v, want %+v", mem, want)
	}
	dur := Distribute([]int64{1_000_001, 2_000_001, 3_000_001, 4_000_001})
	if want := (Distribution{1_000_001, 1_000_001, 2_500_001, 3_000_001, 4_000_001}); dur != want {
		t.Errorf("EX-1 task time distribution %+v, want %+v", dur, want)
	}

	// EX-3: (0,0,0,0,16000) is CRITICAL with ignore 16000 (median 0), NONE with 16001.
	d := Distribution{0, 0, 0, 0, 16000}
	if s := d.severity(h.ratio, 16000); s != Critical {
		t.Errorf("EX-3 ignore 16000: %v, want CRITICAL", s)
	}
	if s := d.severity(h.ratio, 16001); s != None {
		t.Errorf("EX-3 ignore 16001: %v, want NONE", s)
	}
	if r := h.Apply(sparkJob(nil, nil)); r.Skip || r.Severity != None {
		t.Errorf("no executors: %+v, want NONE", r)
	}
}
