package heuristics

import (
	"math"
	"math/big"
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Metrics are the four job metrics (docs/heuristics.md#job-metrics) in Dr. Elephant's storage units.
type Metrics struct {
	UsedMBSeconds   int64 // resources used, MB·s
	WastedMBSeconds int64 // resources wasted, MB·s
	DelayMs         int64 // wait time, ms
	RuntimeMs       int64 // submission (or start) to finish, ms
}

// UsedGBHours returns the used resources in GB·h.
func (m Metrics) UsedGBHours() float64 { return MBSecondsToGBHours(m.UsedMBSeconds) }

// WastedGBHours returns the wasted resources in GB·h.
func (m Metrics) WastedGBHours() float64 { return MBSecondsToGBHours(m.WastedMBSeconds) }

// Dr. Elephant's MapReduce aggregator constants (docs/heuristics.md#job-metrics).
const (
	defaultContainerMB   = 2048
	clusterVmemPmemRatio = 2.1
	memoryBuffer         = 1.5
	// Spark: executor memory string unit conversion, MB·s from bytes·ms.
	bytesMsPerMBSecond = 1 << 20 * 1000
)

// ComputeMetrics computes the four metrics of j, MapReduce and Spark, as
// docs/heuristics.md#job-metrics says. wasteBuffer is the Spark aggregator's
// allocated_memory_waste_buffer_percentage.
func ComputeMetrics(j *job.Job, wasteBuffer float64) Metrics {
	m := Metrics{RuntimeMs: runtimeMs(j)}
	switch j.Type {
	case job.MapReduce:
		m.UsedMBSeconds, m.WastedMBSeconds, m.DelayMs = mapReduceResources(j)
	case job.Spark:
		m.UsedMBSeconds, m.WastedMBSeconds = sparkResources(j, wasteBuffer)
	}
	return m
}

// runtimeMs is finish − submit (start when submit is unknown), ≥ 0.
func runtimeMs(j *job.Job) int64 {
	start := j.SubmitMs
	if start <= 0 {
		start = j.StartMs
	}
	if j.FinishMs <= 0 || start <= 0 || j.FinishMs < start {
		return 0
	}
	return j.FinishMs - start
}

// containerMB reads a container size key as integer MB; missing,
// unparsable or negative values give 2048 (the aggregator does not follow
// ${…} references, unlike the memory heuristics).
func containerMB(conf map[string]string, key string) int64 {
	v, err := strconv.ParseInt(conf[key], 10, 64)
	if err != nil || v < 0 {
		return defaultContainerMB
	}
	return v
}

func mapReduceResources(j *job.Job) (used, wasted, delay int64) {
	mapMB := containerMB(j.Conf, "mapreduce.map.memory.mb")
	reduceMB := containerMB(j.Conf, "mapreduce.reduce.memory.mb")
	mu, mw, md, lastMapFinish, counted := taskGroupResources(j.MapTasks, mapMB, j.SubmitMs)
	used, wasted, delay = mu, mw, md
	// Reducers ideally start when the last counted mapper finished (slow
	// start is forced to 100 %); with no counted mapper Dr. Elephant's
	// Long.MAX_VALUE overflows into a delay ≤ 0, i.e. 0.
	ru, rw, rd, _, _ := taskGroupResources(j.ReduceTasks, reduceMB, lastMapFinish)
	if counted == 0 {
		rd = 0
	}
	return used + ru, wasted + rw, delay + rd
}

// taskGroupResources is the MapReduce rule of docs/heuristics.md#job-metrics
// for one task group. It returns the
// group's used and wasted MB·s, its delay, the latest finish time of the
// counted tasks and how many were counted. A task counts when it has time
// data and memory data: PHYSICAL/VIRTUAL_MEMORY_BYTES counters, or (Strata)
// progress splits when the task has no such counters.
func taskGroupResources(tasks []job.Task, containerMB, idealStart int64) (used, wasted, delay, maxFinish int64, counted int) {
	var peakMB, maxDuration int64
	var secs []int64
	for i := range tasks {
		t := &tasks[i]
		tv, ok := t.Times()
		if !ok {
			continue
		}
		var phys, vmem int64
		if t.HasCounters() {
			phys, vmem, _ = t.PeakMemory()
		} else if p, v, ok := t.PeakMemory(); ok {
			phys, vmem = p, v
		} else {
			continue
		}
		counted++
		duration := tv.FinishMs - tv.StartMs
		sec := duration / 1000
		secs = append(secs, sec)
		used += containerMB * sec
		need := max(phys>>20, int64(float64(vmem>>20)/clusterVmemPmemRatio))
		peakMB = max(peakMB, need)
		maxFinish = max(maxFinish, tv.FinishMs)
		maxDuration = max(maxDuration, duration)
	}
	if counted == 0 {
		return 0, 0, 0, 0, 0
	}
	delay = max(maxFinish-(idealStart+maxDuration), 0)
	if wastedMB := containerMB - int64(float64(peakMB)*memoryBuffer); wastedMB > 0 {
		for _, s := range secs {
			wasted += wastedMB * s
		}
	}
	return used, wasted, delay, maxFinish, counted
}

// sparkResources is the Spark rule of docs/heuristics.md#job-metrics: allocated = instances × executor memory
// × last attempt duration; actually used = executor memory × Σ executor
// task time (driver included); wasted = allocated − used × (1 + buffer)
// when positive. Nothing is computed without spark.executor.instances and
// spark.executor.memory, or with a negative duration.
func sparkResources(j *job.Job, buffer float64) (used, wasted int64) {
	a := j.Spark.LastAttempt()
	if a == nil {
		return 0, 0
	}
	instances, err := strconv.ParseInt(j.Conf["spark.executor.instances"], 10, 64)
	if err != nil {
		return 0, 0
	}
	memStr, ok := j.Conf["spark.executor.memory"]
	if !ok {
		return 0, 0
	}
	mem, err := StringToBytes(memStr)
	if err != nil {
		return 0, 0
	}
	duration := a.DurationMs()
	if duration < 0 {
		return 0, 0
	}
	unit := big.NewInt(bytesMsPerMBSecond)
	alloc := new(big.Int).Mul(big.NewInt(instances), big.NewInt(mem))
	alloc.Mul(alloc, big.NewInt(duration))
	alloc.Quo(alloc, unit)
	var total int64
	for _, e := range j.Spark.Executors {
		total += e.TotalDurationMs
	}
	usedBig := new(big.Int).Mul(big.NewInt(mem), big.NewInt(total))
	usedBig.Quo(usedBig, unit)
	allocF, _ := new(big.Float).SetInt(alloc).Float64()
	usedF, _ := new(big.Float).SetInt(usedBig).Float64()
	withBuffer := usedF * (1 + buffer)
	if alloc.IsInt64() {
		used = alloc.Int64()
	}
	if withBuffer < allocF {
		w := allocF - withBuffer
		if w < math.MaxInt64 {
			wasted = int64(w)
		}
	}
	return used, wasted
}
