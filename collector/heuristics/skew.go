package heuristics

import "github.com/stratatrace/strata/collector/job"

// Mapper Skew and Reducer Skew (docs/heuristics.md#mapper-skew): tasks are
// split into two groups by input size (mappers: HDFS+S3 bytes read;
// reducers: shuffle bytes) and by run time with FindTwoGroups. Data skew is
// the relative difference of the group averages, capped by the larger
// group's average size (as a fraction of the HDFS block) and by the smaller
// group's task count; time skew the same in whole seconds, capped by the
// task count only. The severity is the higher of the two; the score counts
// data skew only (Dr. Elephant's quirk).

// SkewParams are the parameters of Mapper Skew and Reducer Skew.
type SkewParams struct {
	Common            `yaml:",inline"`
	NumTasksSeverity  Thresholds `yaml:"num_tasks_severity" check:"asc" help:"tasks in the smaller group"`
	DeviationSeverity Thresholds `yaml:"deviation_severity" check:"asc" help:"(avg larger − avg smaller) / avg smaller"`
	FilesSeverity     Thresholds `yaml:"files_severity" check:"asc" help:"× hdfs_block_size_bytes, avg size of the larger group"`
}

var skewDefaults = SkewParams{
	NumTasksSeverity:  Thresholds{10, 50, 100, 200},
	DeviationSeverity: Thresholds{2, 4, 8, 16},
	FilesSeverity:     Thresholds{1. / 8, 1. / 4, 1. / 2, 1},
}

var (
	mapperSkew = register(def[SkewParams]{Key: "mapper_skew", Name: "Mapper Skew", Type: job.MapReduce, Order: 101,
		Defaults: skewDefaults,
		Build: func(p SkewParams, c *Config) Heuristic {
			return newSkew(job.MapTask, p, c.HDFSBlockSizeBytes)
		}})
	reducerSkew = register(def[SkewParams]{Key: "reducer_skew", Name: "Reducer Skew", Type: job.MapReduce, Order: 107,
		Defaults: skewDefaults,
		Build: func(p SkewParams, c *Config) Heuristic {
			return newSkew(job.ReduceTask, p, c.HDFSBlockSizeBytes)
		}})
)

// Skew is Mapper Skew or Reducer Skew.
type Skew struct {
	kind      job.TaskKind
	numTasks  Thresholds
	deviation Thresholds
	files     Thresholds // bytes
}

func newSkew(kind job.TaskKind, c SkewParams, blockBytes int64) *Skew {
	return &Skew{kind: kind, numTasks: c.NumTasksSeverity, deviation: c.DeviationSeverity,
		files: c.FilesSeverity.Scale(float64(blockBytes))}
}

// Apply implements Heuristic.
func (h *Skew) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	tasks := tasksOf(j, h.kind)
	var data, runtimes []int64
	for i := range tasks {
		t := &tasks[i]
		if t.HasCounters() {
			if h.kind == job.MapTask {
				data = append(data, mapInputBytes(t.Counters))
			} else {
				data = append(data, t.Counters.Get(job.ReduceShuffleBytes))
			}
		}
		if tv, ok := t.Times(); ok {
			runtimes = append(runtimes, tv.TotalMs)
		}
	}

	da, db := FindTwoGroups(data)
	avgA, avgB := Average(da), Average(db)
	sevData := h.deviation.Ascending(float64(absDiff(avgA, avgB) / max(min(avgA, avgB), 1)))
	sevData = min(sevData, h.files.Ascending(float64(avgB)))
	sevData = min(sevData, h.numTasks.Ascending(float64(len(da))))

	ta, tb := FindTwoGroups(runtimes)
	msA, msB := Average(ta), Average(tb)
	secA, secB := msA/1000, msB/1000
	sevTime := h.deviation.Ascending(float64(absDiff(secA, secB) / max(min(secA, secB), 1)))
	sevTime = min(sevTime, h.numTasks.Ascending(float64(len(ta))))

	return Result{
		Severity: max(sevData, sevTime),
		Score:    Score(sevData, len(tasks)),
		Details: []Detail{
			detail("Data skew (Number of tasks)", itoa(int64(len(tasks)))),
			detail("Data skew (Group A)", itoa(int64(len(da)))+" tasks @ "+BytesToString(avgA)+" avg"),
			detail("Data skew (Group B)", itoa(int64(len(db)))+" tasks @ "+BytesToString(avgB)+" avg"),
			detail("Data skew severity", sevData.String()),
			detail("Time skew (Number of tasks)", itoa(int64(len(tasks)))),
			detail("Time skew (Group A)", itoa(int64(len(ta)))+" tasks @ "+clock(msA)+" avg"),
			detail("Time skew (Group B)", itoa(int64(len(tb)))+" tasks @ "+clock(msB)+" avg"),
			detail("Time skew severity", sevTime.String()),
		},
	}
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
