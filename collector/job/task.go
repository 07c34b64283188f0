package job

// TaskKind says whether a MapReduce task is a map or a reduce task.
type TaskKind string

// Task kinds.
const (
	MapTask    TaskKind = "MAP"
	ReduceTask TaskKind = "REDUCE"
)

// Task is one MapReduce task.
type Task struct {
	ID     string // task_…_m_000000
	Kind   TaskKind
	Status Status
	// Counters are the task-level counters; nil when the source has none.
	Counters Counters
	// Analyzed is the id of the attempt the analysis uses: the successful
	// attempt, else the attempt the task failed due to; empty when none.
	Analyzed string
	// Attempts are the task's attempts in the order the source lists them.
	Attempts []Attempt
}

// Attempt is one MapReduce task attempt.
type Attempt struct {
	ID     string // attempt_…_m_000000_0
	Status Status
	Host   string
	// StartMs and FinishMs are ms since the Unix epoch.
	StartMs  int64
	FinishMs int64
	// ShuffleFinishMs and SortFinishMs are ms since the Unix epoch; reduce
	// attempts only, 0 otherwise.
	ShuffleFinishMs int64
	SortFinishMs    int64
	// Counters of this attempt by name; nil when the source has none.
	Counters Counters
	// Splits are the attempt's progress splits; nil when absent.
	Splits *ProgressSplits
	// Diagnostics is the error text of an unsuccessful attempt.
	Diagnostics string
}

// AnalyzedAttempt returns the attempt named by t.Analyzed, or nil.
func (t *Task) AnalyzedAttempt() *Attempt {
	if t.Analyzed == "" {
		return nil
	}
	for i := range t.Attempts {
		if t.Attempts[i].ID == t.Analyzed {
			return &t.Attempts[i]
		}
	}
	return nil
}

// Times is Dr. Elephant's per-task time vector, in ms.
type Times struct {
	TotalMs   int64 // finish − start of the analysed attempt
	ShuffleMs int64 // reduce: shuffle finish − start; map: 0
	SortMs    int64 // reduce: sort finish − shuffle finish; map: 0
	StartMs   int64 // ms since epoch
	FinishMs  int64 // ms since epoch
}

// CodeMs is the time spent in user code: total − shuffle − sort.
func (t Times) CodeMs() int64 { return t.TotalMs - t.ShuffleMs - t.SortMs }

// Times returns the task's time vector from its analysed attempt, and false
// when the task has no analysed attempt (no time data).
func (t *Task) Times() (Times, bool) {
	a := t.AnalyzedAttempt()
	if a == nil {
		return Times{}, false
	}
	tv := Times{TotalMs: a.FinishMs - a.StartMs, StartMs: a.StartMs, FinishMs: a.FinishMs}
	if t.Kind == ReduceTask && (a.ShuffleFinishMs != 0 || a.SortFinishMs != 0) {
		tv.ShuffleMs = a.ShuffleFinishMs - a.StartMs
		tv.SortMs = a.SortFinishMs - a.ShuffleFinishMs
	}
	return tv, true
}

// HasCounters reports whether the task carries counters.
func (t *Task) HasCounters() bool { return t.Counters != nil }
