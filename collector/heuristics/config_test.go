package heuristics

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultConfig(t *testing.T) {
	c := defaults(t)
	if c.HDFSBlockSizeBytes != 64<<20 {
		t.Errorf("block size %d", c.HDFSBlockSizeBytes)
	}
	if c.MapperSkew.FilesSeverity != (Thresholds{0.125, 0.25, 0.5, 1}) {
		t.Errorf("files_severity %v", c.MapperSkew.FilesSeverity)
	}
	if c.ReducerSkew.DeviationSeverity != c.MapperSkew.DeviationSeverity || c.ReducerSkew.NumTasksSeverity != c.MapperSkew.NumTasksSeverity {
		t.Errorf("reducer skew defaults differ from mapper skew")
	}
	if c.MapperMemory.ContainerMemorySeverity[0] != 1.1 {
		t.Errorf("container_memory_severity low = %v, want Dr. Elephant's code default 1.1", c.MapperMemory.ContainerMemorySeverity[0])
	}
	if got := c.SparkExecutors.MaxToMedianRatioSeverity[0]; got < 1.3335 || got > 1.3336 {
		t.Errorf("executor ratio low %v, want 10^0.125", got)
	}
	if !strings.Contains(string(DefaultsYAML()), "Dr. Elephant") {
		t.Error("DefaultsYAML lost its comments")
	}
}

func TestConfigOverride(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.yaml")
	doc := `
mapper_gc:
  gc_ratio_severity: "0.1, 0.2, 0.3, 1/2"
  exclude_jobtypes: [OozieLauncher]
spark_jobs:
  enabled: false
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.MapperGC.GCRatioSeverity != (Thresholds{0.1, 0.2, 0.3, 0.5}) {
		t.Errorf("override not applied: %v", c.MapperGC.GCRatioSeverity)
	}
	if c.MapperGC.RuntimeSeverityInMin != (Thresholds{5, 10, 12, 15}) {
		t.Errorf("unnamed key lost its default: %v", c.MapperGC.RuntimeSeverityInMin)
	}
	if c.ReducerGC.GCRatioSeverity != (Thresholds{0.01, 0.02, 0.03, 0.04}) {
		t.Errorf("reducer_gc changed with mapper_gc: %v", c.ReducerGC.GCRatioSeverity)
	}
	e, err := NewEngine(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range e.Heuristics("spark") {
		if n == "Spark Job Metrics" {
			t.Error("disabled heuristic still registered")
		}
	}

	for name, bad := range map[string]string{
		"unknown key":    "mapper_gc:\n  gc_ratio: [1, 2, 3, 4]\n",
		"three numbers":  "mapper_gc:\n  gc_ratio_severity: [1, 2, 3]\n",
		"bad expression": "mapper_gc:\n  gc_ratio_severity: \"1, 2, 3, 4&\"\n",
		"wrong order":    "mapper_gc:\n  gc_ratio_severity: [4, 3, 2, 1]\n",
		"descending":     "mapper_time:\n  short_runtime_severity_in_min: [1, 2, 4, 10]\n",
		"bad regexp":     "job_types:\n  - {name: X, type: mapreduce, conf: k, value: '('}\n",
		"two defaults":   "job_types:\n  - {name: X, type: spark, conf: k, default: true}\n  - {name: Y, type: spark, conf: k, default: true}\n",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(path); !errors.Is(err, ErrConfig) && !errors.Is(err, ErrBadParam) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}
