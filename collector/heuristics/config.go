package heuristics

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"gopkg.in/yaml.v3"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// DefaultsYAML returns the embedded default configuration, comments
// included; it is the reference for every key.
func DefaultsYAML() []byte { return bytes.Clone(defaultsYAML) }

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("invalid heuristics config")

// Common are the switches every heuristic accepts.
type Common struct {
	// Enabled turns the heuristic on; default true.
	Enabled *bool `yaml:"enabled,omitempty"`
	// ExcludeJobTypes skips the heuristic for jobs of these types (§1.6).
	ExcludeJobTypes []string `yaml:"exclude_jobtypes,omitempty"`
}

func (c Common) enabled() bool { return c.Enabled == nil || *c.Enabled }

// JobTypeRule is one row of job type matching (§1.6).
type JobTypeRule struct {
	Name    string `yaml:"name"`
	Type    string `yaml:"type"`            // mapreduce or spark
	Conf    string `yaml:"conf"`            // configuration key that must be present
	Value   string `yaml:"value,omitempty"` // regular expression the whole value must match
	Default bool   `yaml:"default,omitempty"`

	re *regexp.Regexp
}

// MetricsConfig configures the four job metrics.
type MetricsConfig struct {
	AllocatedMemoryWasteBufferPercentage float64 `yaml:"allocated_memory_waste_buffer_percentage"`
}

// SkewConfig configures Mapper Skew and Reducer Skew.
type SkewConfig struct {
	Common            `yaml:",inline"`
	NumTasksSeverity  Thresholds `yaml:"num_tasks_severity"`
	DeviationSeverity Thresholds `yaml:"deviation_severity"`
	FilesSeverity     Thresholds `yaml:"files_severity"`
}

// GCConfig configures Mapper GC and Reducer GC.
type GCConfig struct {
	Common               `yaml:",inline"`
	GCRatioSeverity      Thresholds `yaml:"gc_ratio_severity"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min"`
}

// TimeConfig configures Mapper Time and Reducer Time.
type TimeConfig struct {
	Common                    `yaml:",inline"`
	ShortRuntimeSeverityInMin Thresholds `yaml:"short_runtime_severity_in_min"`
	LongRuntimeSeverityInMin  Thresholds `yaml:"long_runtime_severity_in_min"`
	NumTasksSeverity          Thresholds `yaml:"num_tasks_severity"`
}

// SpeedConfig configures Mapper Speed.
type SpeedConfig struct {
	Common               `yaml:",inline"`
	DiskSpeedSeverity    Thresholds `yaml:"disk_speed_severity"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min"`
}

// SpillConfig configures Mapper Spill.
type SpillConfig struct {
	Common           `yaml:",inline"`
	SpillSeverity    Thresholds `yaml:"spill_severity"`
	NumTasksSeverity Thresholds `yaml:"num_tasks_severity"`
}

// MemoryConfig configures Mapper Memory and Reducer Memory.
type MemoryConfig struct {
	Common                   `yaml:",inline"`
	MemoryRatioSeverity      Thresholds `yaml:"memory_ratio_severity"`
	ContainerMemorySeverity  Thresholds `yaml:"container_memory_severity"`
	ContainerMemoryDefaultMB int64      `yaml:"container_memory_default_mb"`
}

// ShuffleSortConfig configures Shuffle & Sort.
type ShuffleSortConfig struct {
	Common               `yaml:",inline"`
	RuntimeRatioSeverity Thresholds `yaml:"runtime_ratio_severity"`
	RuntimeSeverityInMin Thresholds `yaml:"runtime_severity_in_min"`
}

// DistCacheConfig configures Distributed Cache Limit.
type DistCacheConfig struct {
	Common             `yaml:",inline"`
	FileSizeLimitBytes int64 `yaml:"file_size_limit_bytes"`
}

// QueueLimitConfig configures Job Queue Limit.
type QueueLimitConfig struct {
	Common               `yaml:",inline"`
	Queue                string     `yaml:"queue"`
	RuntimeSeverityInSec Thresholds `yaml:"runtime_severity_in_sec"`
}

// SparkConfigConfig configures Spark Configuration.
type SparkConfigConfig struct {
	Common                            `yaml:",inline"`
	SerializerIfNonNullRecommendation string     `yaml:"serializer_if_non_null_recommendation"`
	MemorySeverityInGB                Thresholds `yaml:"memory_severity_in_gb"`
	CoresSeverity                     Thresholds `yaml:"cores_severity"`
	OverheadMemorySeverityInGB        Thresholds `yaml:"overhead_memory_severity_in_gb"`
	MaxMinExecutors                   int64      `yaml:"max_min_executors"`
	MaxMaxExecutors                   int64      `yaml:"max_max_executors"`
}

// SparkExecutorsConfig configures Spark Executor Metrics.
type SparkExecutorsConfig struct {
	Common                   `yaml:",inline"`
	MaxToMedianRatioSeverity Thresholds `yaml:"max_to_median_ratio_severity"`
	IgnoreMaxBytesLessThan   int64      `yaml:"ignore_max_bytes_less_than"`
	IgnoreMaxMillisLessThan  int64      `yaml:"ignore_max_millis_less_than"`
}

// SparkJobsConfig configures Spark Job Metrics.
type SparkJobsConfig struct {
	Common                     `yaml:",inline"`
	JobFailureRateSeverity     Thresholds `yaml:"job_failure_rate_severity"`
	JobTaskFailureRateSeverity Thresholds `yaml:"job_task_failure_rate_severity"`
}

// SparkStagesConfig configures Spark Stage Metrics.
type SparkStagesConfig struct {
	Common                       `yaml:",inline"`
	StageFailureRateSeverity     Thresholds `yaml:"stage_failure_rate_severity"`
	StageTaskFailureRateSeverity Thresholds `yaml:"stage_task_failure_rate_severity"`
	StageRuntimeSeverityInMin    Thresholds `yaml:"stage_runtime_severity_in_min"`
}

// SparkGCConfig configures Executor GC.
type SparkGCConfig struct {
	Common      `yaml:",inline"`
	GCSeverityA Thresholds `yaml:"gc_severity_a"`
	GCSeverityD Thresholds `yaml:"gc_severity_d"`
}

// NUMABalanceConfig configures the cross-layer NUMA balance heuristic.
type NUMABalanceConfig struct {
	Common            `yaml:",inline"`
	ImbalanceSeverity Thresholds `yaml:"imbalance_severity"`
	MinPages          int64      `yaml:"min_pages"`
}

// CachedSwapConfig configures the cross-layer swapped-cache heuristic.
type CachedSwapConfig struct {
	Common               `yaml:",inline"`
	SwappedShareSeverity Thresholds `yaml:"swapped_share_severity"`
	MinPages             int64      `yaml:"min_pages"`
}

// RemoteFaultsConfig configures the cross-layer remote-fault heuristic.
type RemoteFaultsConfig struct {
	Common              `yaml:",inline"`
	RemoteShareSeverity Thresholds `yaml:"remote_share_severity"`
	MinFaults           int64      `yaml:"min_faults"`
}

// FaultOverheadConfig configures the cross-layer fault / page-walk overhead
// heuristic.
type FaultOverheadConfig struct {
	Common                       `yaml:",inline"`
	WalkCyclesShareSeverity      Thresholds `yaml:"walk_cycles_share_severity"`
	MajorFaultsPerCPUSecSeverity Thresholds `yaml:"major_faults_per_cpu_sec_severity"`
	MinTaskClockSec              float64    `yaml:"min_task_clock_sec"`
}

// THPCoverageConfig configures the cross-layer THP coverage heuristic.
type THPCoverageConfig struct {
	Common           `yaml:",inline"`
	THPShareSeverity Thresholds `yaml:"thp_share_severity"`
	MinPages         int64      `yaml:"min_pages"`
}

// Config holds every threshold and switch. Start from DefaultConfig, then
// Merge override files, then Validate (NewEngine validates).
type Config struct {
	HDFSBlockSizeBytes int64         `yaml:"hdfs_block_size_bytes"`
	JobTypes           []JobTypeRule `yaml:"job_types"`
	Metrics            MetricsConfig `yaml:"metrics"`

	MapperSkew    SkewConfig        `yaml:"mapper_skew"`
	ReducerSkew   SkewConfig        `yaml:"reducer_skew"`
	MapperGC      GCConfig          `yaml:"mapper_gc"`
	ReducerGC     GCConfig          `yaml:"reducer_gc"`
	MapperTime    TimeConfig        `yaml:"mapper_time"`
	MapperSpeed   SpeedConfig       `yaml:"mapper_speed"`
	MapperSpill   SpillConfig       `yaml:"mapper_spill"`
	MapperMemory  MemoryConfig      `yaml:"mapper_memory"`
	ReducerMemory MemoryConfig      `yaml:"reducer_memory"`
	ReducerTime   TimeConfig        `yaml:"reducer_time"`
	ShuffleSort   ShuffleSortConfig `yaml:"shuffle_sort"`
	Exception     Common            `yaml:"exception"`
	DistCache     DistCacheConfig   `yaml:"distributed_cache"`
	QueueLimit    QueueLimitConfig  `yaml:"job_queue_limit"`

	SparkConfig    SparkConfigConfig    `yaml:"spark_configuration"`
	SparkExecutors SparkExecutorsConfig `yaml:"spark_executors"`
	SparkJobs      SparkJobsConfig      `yaml:"spark_jobs"`
	SparkStages    SparkStagesConfig    `yaml:"spark_stages"`
	SparkGC        SparkGCConfig        `yaml:"spark_executor_gc"`

	NUMABalance   NUMABalanceConfig   `yaml:"numa_balance"`
	CachedSwap    CachedSwapConfig    `yaml:"cached_swap"`
	RemoteFaults  RemoteFaultsConfig  `yaml:"remote_faults"`
	FaultOverhead FaultOverheadConfig `yaml:"fault_overhead"`
	THPCoverage   THPCoverageConfig   `yaml:"thp_coverage"`
}

// DefaultConfig returns Dr. Elephant's defaults (and Strata's cross-layer
// ones), decoded from the embedded defaults.yaml.
func DefaultConfig() *Config {
	c := &Config{}
	if err := c.merge(bytes.NewReader(defaultsYAML)); err != nil {
		panic("heuristics: embedded defaults: " + err.Error())
	}
	return c
}

// Merge overlays the YAML document r on c: keys present replace values,
// absent keys keep theirs. Unknown keys are an error.
func (c *Config) Merge(r io.Reader) error {
	if err := c.merge(r); err != nil {
		return fmt.Errorf("merge config: %w: %w", ErrConfig, err)
	}
	return nil
}

func (c *Config) merge(r io.Reader) error {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// LoadConfig returns the defaults overlaid with the file at path (none when
// path is empty), validated.
func LoadConfig(path string) (*Config, error) {
	c := DefaultConfig()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open heuristics config: %w", err)
		}
		defer f.Close()
		if err := c.Merge(f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// validator collects configuration errors.
type validator struct{ errs []error }

func (v *validator) asc(name string, t Thresholds) {
	if err := t.CheckAscending(); err != nil {
		v.errs = append(v.errs, fmt.Errorf("%s: %w", name, err))
	}
}

func (v *validator) desc(name string, t Thresholds) {
	if err := t.CheckDescending(); err != nil {
		v.errs = append(v.errs, fmt.Errorf("%s: %w", name, err))
	}
}

func (v *validator) positive(name string, n int64) {
	if n <= 0 {
		v.errs = append(v.errs, fmt.Errorf("%s: must be positive, is %d", name, n))
	}
}

func (c *SkewConfig) check(key string, v *validator) {
	v.asc(key+".num_tasks_severity", c.NumTasksSeverity)
	v.asc(key+".deviation_severity", c.DeviationSeverity)
	v.asc(key+".files_severity", c.FilesSeverity)
}

func (c *GCConfig) check(key string, v *validator) {
	v.asc(key+".gc_ratio_severity", c.GCRatioSeverity)
	v.asc(key+".runtime_severity_in_min", c.RuntimeSeverityInMin)
}

func (c *TimeConfig) check(key string, v *validator) {
	v.desc(key+".short_runtime_severity_in_min", c.ShortRuntimeSeverityInMin)
	v.asc(key+".long_runtime_severity_in_min", c.LongRuntimeSeverityInMin)
	v.asc(key+".num_tasks_severity", c.NumTasksSeverity)
}

func (c *MemoryConfig) check(key string, v *validator) {
	v.desc(key+".memory_ratio_severity", c.MemoryRatioSeverity)
	v.asc(key+".container_memory_severity", c.ContainerMemorySeverity)
	v.positive(key+".container_memory_default_mb", c.ContainerMemoryDefaultMB)
}

// Validate checks threshold ordering per direction, positive sizes and the
// job type rules, and compiles the rules' regular expressions.
func (c *Config) Validate() error {
	v := &validator{}
	v.positive("hdfs_block_size_bytes", c.HDFSBlockSizeBytes)
	c.MapperSkew.check("mapper_skew", v)
	c.ReducerSkew.check("reducer_skew", v)
	c.MapperGC.check("mapper_gc", v)
	c.ReducerGC.check("reducer_gc", v)
	c.MapperTime.check("mapper_time", v)
	c.ReducerTime.check("reducer_time", v)
	c.MapperMemory.check("mapper_memory", v)
	c.ReducerMemory.check("reducer_memory", v)
	v.desc("mapper_speed.disk_speed_severity", c.MapperSpeed.DiskSpeedSeverity)
	v.asc("mapper_speed.runtime_severity_in_min", c.MapperSpeed.RuntimeSeverityInMin)
	v.asc("mapper_spill.spill_severity", c.MapperSpill.SpillSeverity)
	v.asc("mapper_spill.num_tasks_severity", c.MapperSpill.NumTasksSeverity)
	v.asc("shuffle_sort.runtime_ratio_severity", c.ShuffleSort.RuntimeRatioSeverity)
	v.asc("shuffle_sort.runtime_severity_in_min", c.ShuffleSort.RuntimeSeverityInMin)
	v.positive("distributed_cache.file_size_limit_bytes", c.DistCache.FileSizeLimitBytes)
	v.asc("job_queue_limit.runtime_severity_in_sec", c.QueueLimit.RuntimeSeverityInSec)
	v.asc("spark_configuration.memory_severity_in_gb", c.SparkConfig.MemorySeverityInGB)
	v.asc("spark_configuration.cores_severity", c.SparkConfig.CoresSeverity)
	v.asc("spark_configuration.overhead_memory_severity_in_gb", c.SparkConfig.OverheadMemorySeverityInGB)
	v.asc("spark_executors.max_to_median_ratio_severity", c.SparkExecutors.MaxToMedianRatioSeverity)
	v.asc("spark_jobs.job_failure_rate_severity", c.SparkJobs.JobFailureRateSeverity)
	v.asc("spark_jobs.job_task_failure_rate_severity", c.SparkJobs.JobTaskFailureRateSeverity)
	v.asc("spark_stages.stage_failure_rate_severity", c.SparkStages.StageFailureRateSeverity)
	v.asc("spark_stages.stage_task_failure_rate_severity", c.SparkStages.StageTaskFailureRateSeverity)
	v.asc("spark_stages.stage_runtime_severity_in_min", c.SparkStages.StageRuntimeSeverityInMin)
	v.asc("spark_executor_gc.gc_severity_a", c.SparkGC.GCSeverityA)
	v.desc("spark_executor_gc.gc_severity_d", c.SparkGC.GCSeverityD)
	v.asc("numa_balance.imbalance_severity", c.NUMABalance.ImbalanceSeverity)
	v.asc("cached_swap.swapped_share_severity", c.CachedSwap.SwappedShareSeverity)
	v.asc("remote_faults.remote_share_severity", c.RemoteFaults.RemoteShareSeverity)
	v.asc("fault_overhead.walk_cycles_share_severity", c.FaultOverhead.WalkCyclesShareSeverity)
	v.asc("fault_overhead.major_faults_per_cpu_sec_severity", c.FaultOverhead.MajorFaultsPerCPUSecSeverity)
	v.desc("thp_coverage.thp_share_severity", c.THPCoverage.THPShareSeverity)
	errs := v.errs
	if b := c.Metrics.AllocatedMemoryWasteBufferPercentage; b < 0 {
		errs = append(errs, fmt.Errorf("metrics.allocated_memory_waste_buffer_percentage: negative (%v)", b))
	}
	defaults := map[string]int{}
	for i := range c.JobTypes {
		r := &c.JobTypes[i]
		if r.Name == "" || r.Conf == "" || (r.Type != "mapreduce" && r.Type != "spark") {
			errs = append(errs, fmt.Errorf("job_types[%d]: name, conf and type (mapreduce|spark) are required", i))
			continue
		}
		if r.Default {
			defaults[r.Type]++
		}
		pat := r.Value
		if pat == "" {
			pat = ".*"
		}
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("job_types[%d].value: %w", i, err))
			continue
		}
		r.re = re
	}
	for t, n := range defaults {
		if n > 1 {
			errs = append(errs, fmt.Errorf("job_types: %d default rows for %s, want at most 1", n, t))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("validate: %w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}
