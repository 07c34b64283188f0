package heuristics

import (
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Configuration (docs/heuristics.md#spark-configuration): the Spark
// properties against recommended settings — Kryo serializer, external
// shuffle service (worse when dynamic allocation runs without it), executor
// and driver memory and cores, dynamic allocation bounds, wildcard
// secondary jars, YARN memory overhead (spark.executor.memoryOverhead, or
// its deprecated name spark.yarn.executor.memoryOverhead; the same for the
// driver). Score 0.

// SparkConfigParams are the parameters of Spark Configuration.
type SparkConfigParams struct {
	Common                            `yaml:",inline"`
	SerializerIfNonNullRecommendation string     `yaml:"serializer_if_non_null_recommendation" help:"spark.serializer expected; anything else (or none) is MODERATE"`
	MemorySeverityInGB                Thresholds `yaml:"memory_severity_in_gb" check:"asc" help:"executor and driver memory"`
	CoresSeverity                     Thresholds `yaml:"cores_severity" check:"asc" help:"executor and driver cores"`
	OverheadMemorySeverityInGB        Thresholds `yaml:"overhead_memory_severity_in_gb" check:"asc" help:"YARN executor and driver memoryOverhead"`
	MaxMinExecutors                   int64      `yaml:"max_min_executors" help:"spark.dynamicAllocation.minExecutors above this is CRITICAL"`
	MaxMaxExecutors                   int64      `yaml:"max_max_executors" help:"spark.dynamicAllocation.maxExecutors above this is CRITICAL"`
}

var sparkConfiguration = register(def[SparkConfigParams]{Key: "spark_configuration", Name: "Spark Configuration", Type: job.Spark, Order: 201,
	Defaults: SparkConfigParams{
		SerializerIfNonNullRecommendation: "org.apache.spark.serializer.KryoSerializer",
		MemorySeverityInGB:                Thresholds{10, 15, 20, 25},
		CoresSeverity:                     Thresholds{4, 6, 8, 10},
		OverheadMemorySeverityInGB:        Thresholds{2, 4, 6, 8},
		MaxMinExecutors:                   1,
		MaxMaxExecutors:                   900,
	},
	Build: func(p SparkConfigParams, _ *Config) Heuristic { return newSparkConfiguration(p) }})

// Spark property names read by the Spark heuristics and metrics.
const (
	propDriverMemory      = "spark.driver.memory"
	propExecutorMemory    = "spark.executor.memory"
	propExecutorInstances = "spark.executor.instances"
	propExecutorCores     = "spark.executor.cores"
	propDriverCores       = "spark.driver.cores"
	propSerializer        = "spark.serializer"
	propDynamicAllocation = "spark.dynamicAllocation.enabled"
	propShuffleService    = "spark.shuffle.service.enabled"
	propMinExecutors      = "spark.dynamicAllocation.minExecutors"
	propMaxExecutors      = "spark.dynamicAllocation.maxExecutors"
	propSecondaryJars     = "spark.yarn.secondary.jars"
	propExecutorOverhead  = "spark.yarn.executor.memoryOverhead"
	propDriverOverhead    = "spark.yarn.driver.memoryOverhead"
	notPresented          = "Not presented. Using default."
	gib                   = 1 << 30
)

// The memory overhead properties as Spark 2.3 and later name them (the
// spark.yarn.* names above are their deprecated spellings); a job sets one
// or the other.
const (
	propExecutorOverheadNow = "spark.executor.memoryOverhead"
	propDriverOverheadNow   = "spark.driver.memoryOverhead"
)

// SparkConfiguration is the Spark Configuration heuristic.
type SparkConfiguration struct {
	serializer  string
	memory      Thresholds // bytes
	cores       Thresholds
	overhead    Thresholds // bytes
	maxMinExecs int64
	maxMaxExecs int64
}

func newSparkConfiguration(c SparkConfigParams) *SparkConfiguration {
	return &SparkConfiguration{serializer: c.SerializerIfNonNullRecommendation,
		memory: c.MemorySeverityInGB.Scale(gib), cores: c.CoresSeverity,
		overhead: c.OverheadMemorySeverityInGB.Scale(gib), maxMinExecs: c.MaxMinExecutors, maxMaxExecs: c.MaxMaxExecutors}
}

// propBytes parses a memory property; ok is false when absent or malformed.
func propBytes(conf map[string]string, key string) (int64, bool) {
	v, ok := conf[key]
	if !ok {
		return 0, false
	}
	b, err := StringToBytes(v)
	return b, err == nil
}

// propInt parses an integer property; ok is false when absent or malformed.
func propInt(conf map[string]string, key string) (int64, bool) {
	v, ok := conf[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// overheadBytes reads a memoryOverhead property, by its current name
// (now) or else its YARN name: absent ⇒ 0; a value ending in a digit is MB,
// anything else a memory string.
func overheadBytes(conf map[string]string, now, yarn string) int64 {
	v := strings.TrimSpace(conf[now])
	if v == "" {
		v = strings.TrimSpace(conf[yarn])
	}
	if v == "" {
		v = "0"
	}
	if c := v[len(v)-1]; '0' <= c && c <= '9' {
		v += "MB"
	}
	b, _ := StringToBytes(v)
	return b
}

func orNotPresented(s string, ok bool) string {
	if !ok {
		return notPresented
	}
	return s
}

// Apply implements Heuristic.
func (h *SparkConfiguration) Apply(j *job.Job) Result {
	conf := j.Conf
	driverMem, dmOK := propBytes(conf, propDriverMemory)
	execMem, emOK := propBytes(conf, propExecutorMemory)
	instances, inOK := propInt(conf, propExecutorInstances)
	execCores, ecOK := propInt(conf, propExecutorCores)
	driverCores, dcOK := propInt(conf, propDriverCores)
	minExecs, minOK := propInt(conf, propMinExecutors)
	maxExecs, maxOK := propInt(conf, propMaxExecutors)
	daRaw, daOK := conf[propDynamicAllocation]
	// Scala's toBoolean: case-insensitive "true".
	da := strings.EqualFold(strings.TrimSpace(daRaw), "true")
	shuffle := strings.EqualFold(strings.TrimSpace(conf[propShuffleService]), "true")
	serializer, serOK := conf[propSerializer]
	driverOverhead := overheadBytes(conf, propDriverOverheadNow, propDriverOverhead)
	execOverhead := overheadBytes(conf, propExecutorOverheadNow, propExecutorOverhead)

	sevSerializer := None
	if !serOK || serializer != h.serializer {
		sevSerializer = Moderate
	}
	sevShuffle := None
	switch {
	case shuffle:
	case da:
		sevShuffle = Severe
	default:
		sevShuffle = Moderate
	}
	sevMinExecs, sevMaxExecs, sevJars := None, None, None
	if minOK && minExecs > h.maxMinExecs {
		sevMinExecs = Critical
	}
	if maxOK && maxExecs > h.maxMaxExecs {
		sevMaxExecs = Critical
	}
	if strings.Contains(conf[propSecondaryJars], "*") {
		sevJars = Critical
	}
	sevDriverOverhead := h.overhead.Ascending(float64(driverOverhead))
	sevExecOverhead := h.overhead.Ascending(float64(execOverhead))
	sev := MaxSeverity(sevSerializer, sevShuffle,
		h.memory.Ascending(float64(execMem)), h.memory.Ascending(float64(driverMem)),
		h.cores.Ascending(float64(execCores)), h.cores.Ascending(float64(driverCores)),
		sevMinExecs, sevMaxExecs, sevJars, sevDriverOverhead, sevExecOverhead)

	var durationMs int64
	if a := j.Spark.LastAttempt(); a != nil {
		durationMs = a.DurationMs()
	}
	d := []Detail{
		detail(propDriverMemory, orNotPresented(BytesToString(driverMem), dmOK)),
		detail(propExecutorMemory, orNotPresented(BytesToString(execMem), emOK)),
		detail(propExecutorInstances, orNotPresented(itoa(instances), inOK)),
		detail(propExecutorCores, orNotPresented(itoa(execCores), ecOK)),
		detail("spark.application.duration", itoa(durationMs/1000)+" Seconds"),
		detail(propDynamicAllocation, orNotPresented(strconv.FormatBool(da), daOK)),
		detail(propDriverCores, orNotPresented(itoa(driverCores), dcOK)),
		detail(propDriverOverhead, BytesToString(driverOverhead)),
		detail(propExecutorOverhead, BytesToString(execOverhead)),
	}
	// Where Dr. Elephant puts them: the serializer and shuffle-service lines
	// carry the configured value and the advice as long text; the other
	// findings are lines whose value is the advice.
	if sevSerializer != None {
		d = append(d, explained(propSerializer, orNotPresented(serializer, serOK),
			"Kryo is not the serializer: set "+propSerializer+" to "+h.serializer+"."))
	}
	if sevShuffle != None {
		shuffleRaw, shuffleOK := conf[propShuffleService]
		advice := "The external shuffle service is off; enable it (" + propShuffleService + "=true)."
		if da {
			advice = "Dynamic allocation runs without the external shuffle service, so removed executors take their " +
				"shuffle files with them: set " + propShuffleService + "=true."
		}
		d = append(d, explained(propShuffleService, orNotPresented(strconv.FormatBool(shuffle), shuffleOK && shuffleRaw != ""), advice))
	}
	if sevMinExecs == Critical {
		d = append(d, detail("Minimum Executors", propMinExecutors+" is "+itoa(minExecs)+
			"; dynamic allocation should start from "+itoa(h.maxMinExecs)+" or fewer executors."))
	}
	if sevMaxExecs == Critical {
		d = append(d, detail("Maximum Executors", propMaxExecutors+" is "+itoa(maxExecs)+
			"; keep it at "+itoa(h.maxMaxExecs)+" or fewer executors."))
	}
	if sevJars == Critical {
		d = append(d, detail("Jars notation", "Name the jars in "+propSecondaryJars+" one by one instead of with a * wildcard."))
	}
	if sevDriverOverhead >= Severe {
		d = append(d, detail("Driver Overhead Memory", "The driver asks for a large memory overhead; lower "+propDriverOverhead+"."))
	}
	if sevExecOverhead >= Severe {
		d = append(d, detail("Executor Overhead Memory", "The executors ask for a large memory overhead; lower "+propExecutorOverhead+"."))
	}
	return Result{Severity: sev, Details: d}
}
