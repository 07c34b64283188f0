package heuristics

import (
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// Mapper Memory and Reducer Memory (docs/heuristics.md#mapper-memory):
// flagged only when the container is large (≥ 1.1 × the default container
// by default) and the tasks' average physical memory uses little of it.
// Peak memory comes from the PHYSICAL_MEMORY_BYTES counter, or from
// progress splits when a task's counters lack it.

// MemoryParams are the parameters of Mapper Memory and Reducer Memory.
type MemoryParams struct {
	Common                   `yaml:",inline"`
	MemoryRatioSeverity      Thresholds `yaml:"memory_ratio_severity" check:"desc" help:"avg physical memory / container"`
	ContainerMemorySeverity  Thresholds `yaml:"container_memory_severity" check:"asc" help:"container size, × container_memory_default_mb"`
	ContainerMemoryDefaultMB int64      `yaml:"container_memory_default_mb" check:"positive" help:"container size when the job's conf has none"`
}

// memoryDefaults are Dr. Elephant's code defaults; its shipped
// configuration comments 1 as the first container threshold, but the code
// uses 1.1.
var memoryDefaults = MemoryParams{
	MemoryRatioSeverity:      Thresholds{0.6, 0.5, 0.4, 0.3},
	ContainerMemorySeverity:  Thresholds{1.1, 1.5, 2.0, 2.5},
	ContainerMemoryDefaultMB: 2048,
}

var (
	mapperMemory = register(def[MemoryParams]{Key: "mapper_memory", Name: "Mapper Memory", Type: job.MapReduce, Order: 106,
		Defaults: memoryDefaults,
		Build: func(p MemoryParams, _ *Config) Heuristic {
			return newMemory(job.MapTask, "mapreduce.map.memory.mb", p)
		}})
	reducerMemory = register(def[MemoryParams]{Key: "reducer_memory", Name: "Reducer Memory", Type: job.MapReduce, Order: 110,
		Defaults: memoryDefaults,
		Build: func(p MemoryParams, _ *Config) Heuristic {
			return newMemory(job.ReduceTask, "mapreduce.reduce.memory.mb", p)
		}})
)

// Memory is Mapper Memory or Reducer Memory.
type Memory struct {
	kind      job.TaskKind
	confKey   string
	ratio     Thresholds
	container Thresholds // bytes
	defaultMB int64
}

func newMemory(kind job.TaskKind, key string, c MemoryParams) *Memory {
	return &Memory{kind: kind, confKey: key, ratio: c.MemoryRatioSeverity,
		container: c.ContainerMemorySeverity.Scale(float64(c.ContainerMemoryDefaultMB * mib)),
		defaultMB: c.ContainerMemoryDefaultMB}
}

// containerBytes reads the container size in MB, following one ${key}
// reference; missing or unparsable ⇒ the configured default.
func (h *Memory) containerBytes(conf map[string]string) int64 {
	v := strings.TrimSpace(conf[h.confKey])
	if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
		v = strings.TrimSpace(conf[v[2:len(v)-1]])
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		n = h.defaultMB
	}
	return n * mib
}

// Apply implements Heuristic.
func (h *Memory) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	tasks := tasksOf(j, h.kind)
	var runtimes, phys, virt []int64
	withTimeAndCounters(tasks, func(t *job.Task, tv job.Times) {
		runtimes = append(runtimes, tv.TotalMs)
		p, v, _ := t.PeakMemory()
		phys = append(phys, p)
		virt = append(virt, v)
	})
	container := h.containerBytes(j.Conf)
	avgPhys := Average(phys)
	sev := None
	if len(tasks) > 0 {
		sev = min(h.ratio.Descending(float64(avgPhys)/float64(container)), h.container.Ascending(float64(container)))
	}
	var minPhys, maxPhys int64
	if len(phys) > 0 {
		minPhys, maxPhys = phys[0], phys[0]
		for _, p := range phys {
			minPhys, maxPhys = min(minPhys, p), max(maxPhys, p)
		}
	}
	return Result{
		Severity: sev,
		Score:    Score(sev, len(tasks)),
		Details: []Detail{
			detail("Number of tasks", itoa(int64(len(tasks)))),
			detail("Avg task runtime", ReadableTimespan(Average(runtimes))),
			detail("Avg Physical Memory (MB)", itoa(avgPhys/mib)),
			detail("Max Physical Memory (MB)", itoa(maxPhys/mib)),
			detail("Min Physical Memory (MB)", itoa(minPhys/mib)),
			detail("Avg Virtual Memory (MB)", itoa(Average(virt)/mib)),
			detail("Requested Container Memory", BytesToString(container)),
		},
	}
}
