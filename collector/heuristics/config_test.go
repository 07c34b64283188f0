package heuristics

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultConfig(t *testing.T) {
	c := defaults(t)
	if c.HDFSBlockSizeBytes != 64<<20 {
		t.Errorf("block size %d", c.HDFSBlockSizeBytes)
	}
	if mapperSkew.of(c).FilesSeverity != (Thresholds{0.125, 0.25, 0.5, 1}) {
		t.Errorf("files_severity %v", mapperSkew.of(c).FilesSeverity)
	}
	if reducerSkew.of(c).DeviationSeverity != mapperSkew.of(c).DeviationSeverity || reducerSkew.of(c).NumTasksSeverity != mapperSkew.of(c).NumTasksSeverity {
		t.Errorf("reducer skew defaults differ from mapper skew")
	}
	if mapperMemory.of(c).ContainerMemorySeverity[0] != 1.1 {
		t.Errorf("container_memory_severity low = %v, want Dr. Elephant's code default 1.1", mapperMemory.of(c).ContainerMemorySeverity[0])
	}
	if got := sparkExecutors.of(c).MaxToMedianRatioSeverity[0]; got < 1.3335 || got > 1.3336 {
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
	if mapperGC.of(c).GCRatioSeverity != (Thresholds{0.1, 0.2, 0.3, 0.5}) {
		t.Errorf("override not applied: %v", mapperGC.of(c).GCRatioSeverity)
	}
	if mapperGC.of(c).RuntimeSeverityInMin != (Thresholds{5, 10, 12, 15}) {
		t.Errorf("unnamed key lost its default: %v", mapperGC.of(c).RuntimeSeverityInMin)
	}
	if reducerGC.of(c).GCRatioSeverity != (Thresholds{0.01, 0.02, 0.03, 0.04}) {
		t.Errorf("reducer_gc changed with mapper_gc: %v", reducerGC.of(c).GCRatioSeverity)
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
		"unknown key":     "mapper_gc:\n  gc_ratio: [1, 2, 3, 4]\n",
		"unknown section": "mapper_gcc:\n  enabled: false\n",
		"three numbers":   "mapper_gc:\n  gc_ratio_severity: [1, 2, 3]\n",
		"bad expression":  "mapper_gc:\n  gc_ratio_severity: \"1, 2, 3, 4&\"\n",
		"wrong order":     "mapper_gc:\n  gc_ratio_severity: [4, 3, 2, 1]\n",
		"descending":      "mapper_time:\n  short_runtime_severity_in_min: [1, 2, 4, 10]\n",
		"bad regexp":      "job_types:\n  - {name: X, type: mapreduce, conf: k, value: '('}\n",
		"two defaults":    "job_types:\n  - {name: X, type: spark, conf: k, default: true}\n  - {name: Y, type: spark, conf: k, default: true}\n",
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

// The defaults document is the reference users write overrides against: it
// decodes back to exactly the defaults, over a config changed everywhere.
func TestDefaultsYAMLRoundTrip(t *testing.T) {
	c := DefaultConfig()
	changed := `
hdfs_block_size_bytes: 1
job_types: []
metrics: {allocated_memory_waste_buffer_percentage: 0}
mapper_skew: {deviation_severity: [1, 1, 1, 1], enabled: false}
job_queue_limit: {enabled: true, queue: etl}
thp_coverage: {min_pages: 1, exclude_jobtypes: [Spark]}
`
	if err := c.Merge(strings.NewReader(changed)); err != nil {
		t.Fatal(err)
	}
	if err := c.Merge(bytes.NewReader(DefaultsYAML())); err != nil {
		t.Fatalf("merge DefaultsYAML: %v", err)
	}
	want := DefaultConfig()
	// Only what the document names is restored; exclude_jobtypes and the
	// switches of heuristics on by default are not in it.
	p := thpCoverage.of(c)
	p.ExcludeJobTypes = nil
	thpCoverage.set(c, p)
	s := mapperSkew.of(c)
	s.Enabled = nil
	mapperSkew.set(c, s)
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults over a changed config:\n%+v\nwant\n%+v", c, want)
	}
}

// Turning a heuristic on in one config never turns it on in another: the
// decoder writes through Common.Enabled, which must not be the default's.
func TestConfigsDoNotShareSwitches(t *testing.T) {
	c := DefaultConfig()
	if err := c.Merge(strings.NewReader("job_queue_limit: {enabled: true}\n")); err != nil {
		t.Fatal(err)
	}
	if !queueLimit.of(c).enabled() {
		t.Fatal("override did not enable job_queue_limit")
	}
	if queueLimit.of(DefaultConfig()).enabled() {
		t.Fatal("enabling job_queue_limit in one config enabled it in the defaults")
	}
}

// Every heuristic declares a direction for each threshold list, and the
// registry refuses one that does not.
func TestRegisterChecksDeclarations(t *testing.T) {
	type bad struct {
		Common `yaml:",inline"`
		T      Thresholds `yaml:"t"`
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "check") {
			t.Fatalf("registering thresholds without a direction: %v, want a panic naming the check tag", r)
		}
	}()
	register(def[bad]{Key: "bad", Name: "Bad", Type: "spark", Order: 999, Build: func(bad, *Config) Heuristic { return Exception{} }})
}
