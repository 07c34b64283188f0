package fetcher

import (
	"slices"
	"strconv"
	"strings"
)

// This file derives, from an event log, the executor fields a Spark
// History Server (3.x, 4.x) serves that are not task sums: storage memory
// and disk used, RDD blocks, max tasks, and the driver's duration and GC
// time. Each follows the history server's own accounting (its
// AppStatusListener and AppStatusStore), so an application read from its
// event log and from a live server's REST API gives the same model; the
// test/workloads comparison checks it on real servers.

// liveRDD is a cached RDD as the history server tracks it: which executors
// hold each of its blocks, and its memory and disk per executor.
type liveRDD struct {
	parts map[string][]string  // block name -> executors holding it
	dist  map[string]*[2]int64 // executor -> memory, disk of this RDD
}

// stageRDDs starts tracking the RDDs a submitted stage caches (those with
// a valid storage level), as the history server does on stage submission.
func (s *sparkReplay) stageRDDs(si *seStageInfo) {
	for _, r := range si.RDDInfo {
		if _, ok := s.rdds[r.RDDID]; ok || !r.StorageLevel.valid() {
			continue
		}
		s.budget.charge(costSparkObject)
		s.rdds[r.RDDID] = &liveRDD{parts: map[string][]string{}, dist: map[string]*[2]int64{}}
	}
}

// addDelta is v+d, never below zero (the history server's addDeltaToValue).
func addDelta(v, d int64) int64 { return max(0, v+d) }

// blockUpdated applies one block update (spark.eventLog.logBlockUpdates):
// a level that uses memory (disk) adds the block's memory (disk) size to
// its executor, one that does not subtracts it — a removed block reports
// size 0, so removing a broadcast piece leaves the executor's memory
// as it was, as on the server. RDD blocks also count per executor while
// their RDD is tracked; stream and other blocks change nothing. Executors
// the log has not added are not created.
func (s *sparkReplay) blockUpdated(block, exec string, level *storageLevel, mem, disk int64) {
	isRDD := strings.HasPrefix(block, "rdd_")
	if level == nil || (!isRDD && !strings.HasPrefix(block, "broadcast_")) {
		return
	}
	memDelta, diskDelta := mem, disk
	if !level.UseMemory {
		memDelta = -mem
	}
	if !level.UseDisk {
		diskDelta = -disk
	}
	e, known := s.execs[exec]
	if known {
		e.MemoryUsed = addDelta(e.MemoryUsed, memDelta)
		e.DiskUsed = addDelta(e.DiskUsed, diskDelta)
	}
	if !isRDD {
		return
	}
	id, ok := rddOfBlock(block)
	r := s.rdds[id]
	if !ok || r == nil {
		return
	}
	held := r.parts[block]
	blocksDelta := 0
	if level.valid() {
		if !slices.Contains(held, exec) {
			blocksDelta = 1
			held = append(held, exec)
		}
	} else {
		blocksDelta = -1
		held = slices.DeleteFunc(slices.Clone(held), func(x string) bool { return x == exec })
	}
	if len(held) > 0 {
		if _, ok := r.parts[block]; !ok {
			s.budget.charge(costSparkObject/4 + int64(len(block)))
		}
		r.parts[block] = held
	} else {
		delete(r.parts, block)
	}
	if known {
		if e.RDDBlocks+blocksDelta > 0 {
			d := r.dist[exec]
			if d == nil {
				d = &[2]int64{}
				r.dist[exec] = d
			}
			d[0], d[1] = addDelta(d[0], memDelta), addDelta(d[1], diskDelta)
		} else {
			delete(r.dist, exec)
		}
		e.RDDBlocks += blocksDelta
	}
}

// unpersist forgets an RDD: its blocks leave their executors' counts and
// its memory and disk their executors' use.
func (s *sparkReplay) unpersist(id int) {
	r, ok := s.rdds[id]
	if !ok {
		return
	}
	delete(s.rdds, id)
	for _, execs := range r.parts {
		for _, x := range execs {
			if e, ok := s.execs[x]; ok {
				e.RDDBlocks--
			}
		}
	}
	for x, d := range r.dist {
		if e, ok := s.execs[x]; ok {
			e.MemoryUsed = addDelta(e.MemoryUsed, -d[0])
			e.DiskUsed = addDelta(e.DiskUsed, -d[1])
		}
	}
}

// asServed finishes the executors as the history server's REST API shows
// them: max tasks are the executor's cores over spark.task.cpus (the
// default resource profile), and the driver's total duration is the
// application's run time once it ended, its GC time its peak TotalGCTime
// metric when it has peak metrics (AppStatusStore replaces both for the
// driver).
func (s *sparkReplay) asServed() {
	cpus := 1
	if v, err := strconv.Atoi(s.app.Props["spark.task.cpus"]); err == nil && v > 0 {
		cpus = v
	}
	for _, e := range s.execs {
		e.MaxTasks = e.TotalCores / cpus
	}
	d, ok := s.execs["driver"]
	if !ok || len(s.app.Attempts) == 0 {
		return
	}
	if a := s.app.Attempts[0]; a.EndMs > 0 {
		d.TotalDurationMs = int64(a.EndMs - a.StartMs)
	}
	if d.PeakMemoryMetrics != nil {
		d.TotalGCTimeMs = d.PeakMemoryMetrics["TotalGCTime"]
	}
}

// rddOfBlock is the RDD id of an rdd_<id>_<partition> block name.
func rddOfBlock(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "rdd_")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "_")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(num)
	return id, err == nil
}
