package fetcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// jhistMagic is the first line of an Avro-JSON job history file
// (jhbin.go reads the binary form).
const jhistMagic = "Avro-Json"

// jhLine is one event line: {"type": "...", "event": {"<record class>": {...}}}.
type jhLine struct {
	Type  string               `json:"type"`
	Event map[string]*jhRecord `json:"event"`
	// one is the line's only record, when the hand-written decoder read
	// it (Event is then nil).
	one *jhRecord
}

// jhRecord is the union of the fields of every job-history event record the
// fetcher reads; each event fills the fields its record has.
type jhRecord struct {
	JobID        string     `json:"jobid"`
	JobName      avroString `json:"jobName"`
	UserName     avroString `json:"userName"`
	JobQueueName avroString `json:"jobQueueName"`
	SubmitTime   int64      `json:"submitTime"`
	LaunchTime   int64      `json:"launchTime"`
	FinishTime   int64      `json:"finishTime"`
	TotalMaps    int        `json:"totalMaps"`
	TotalReduces int        `json:"totalReduces"`
	JobStatus    avroString `json:"jobStatus"`
	Diagnostics  avroString `json:"diagnostics"`

	TaskID    string     `json:"taskid"`
	TaskType  string     `json:"taskType"`
	StartTime int64      `json:"startTime"`
	AttemptID string     `json:"attemptId"`
	Tracker   avroString `json:"trackerName"`
	Hostname  avroString `json:"hostname"`

	TaskStatus        avroString `json:"taskStatus"` // attempt finished
	Status            avroString `json:"status"`     // task finished/failed, attempt unsuccessful
	ShuffleFinishTime int64      `json:"shuffleFinishTime"`
	SortFinishTime    int64      `json:"sortFinishTime"`
	Error             avroString `json:"error"`

	SuccessfulAttemptID avroString `json:"successfulAttemptId"`
	FailedDueToAttempt  avroString `json:"failedDueToAttempt"`

	Counters      *jhCounters `json:"counters"`
	TotalCounters *jhCounters `json:"totalCounters"`

	ClockSplits   avroInts `json:"clockSplits"`
	CPUUsages     avroInts `json:"cpuUsages"`
	VMemKbytes    avroInts `json:"vMemKbytes"`
	PhysMemKbytes avroInts `json:"physMemKbytes"`

	// splitBuf backs the four split series read by the hand-written decoder.
	splitBuf []int64

	// Set by prepare.
	flat, flatTotal job.Counters
	splits          *job.ProgressSplits
}

// jhBuilder assembles a job.Job from job-history events in file order.
type jhBuilder struct {
	j        *job.Job
	tasks    map[string]*jhTask
	order    []string
	finished bool // a JOB_FINISHED/FAILED/KILLED event was seen
	// budget bounds the memory of the job being built; once it is spent
	// the read stops and the job is refused (budget.err).
	budget *budget
}

type jhTask struct {
	t          job.Task
	attempts   map[string]int // attempt id -> index in t.Attempts
	successful string
	failedDue  string
	finished   bool
}

// parseJhist reads a job history stream, Avro JSON or Avro binary. It
// never fails on a damaged tail: what was read is returned with a warning.
// It returns an error only when the stream is not a job history at all (or
// a binary one's schema is unusable) or names no job.
func parseJhist(r io.Reader) (*job.Job, error) { return parseJhistWith(r, true) }

// parseJhistWith is parseJhist; scan selects the hand-written line decoder
// (false: encoding/json only, the reference the fuzz test compares with).
func parseJhistWith(r io.Reader, scan bool) (*job.Job, error) {
	return parseJhistBudget(r, scan, newBudget(0))
}

// parseJhistBudget is parseJhistWith building the job within mem; a job
// past it is an ErrTooLarge error.
func parseJhistBudget(r io.Reader, scan bool, mem *budget) (*job.Job, error) {
	lr := newLineReader(r)
	head, err := lr.next()
	if err != nil {
		return nil, fmt.Errorf("read job history header: %w", err)
	}
	binary := false
	switch string(bytes.TrimSpace(head)) {
	case jhistMagic:
	case jhistBinaryMagic:
		binary = true
	default:
		return nil, fmt.Errorf("read job history header: %w: first line is neither %q nor %q", ErrUnknownFormat, jhistMagic, jhistBinaryMagic)
	}
	schema, err := lr.next() // the Avro schema
	if err != nil {
		return nil, fmt.Errorf("read job history schema: %w", err)
	}
	b := &jhBuilder{
		j:      &job.Job{Type: job.MapReduce, Conf: map[string]string{}},
		tasks:  make(map[string]*jhTask),
		budget: mem,
	}
	if binary {
		event, err := compileAvroSchema(schema)
		if err != nil {
			return nil, fmt.Errorf("read job history schema: %w", err)
		}
		readBinaryEvents(lr.br, event, b)
		return b.finish()
	}
	lr.skipLong = true // from here on a line over the bound is one bad line
	if scan && runtime.GOMAXPROCS(0) > 1 {
		parallelJhist(lr, b)
		return b.finish()
	}
	d := newJhDecoder()
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.warnf("job history unreadable after line %d: %v", lr.n, err)
			break
		}
		if isBlank(line) {
			continue
		}
		ev, err := decodeJhLine(line, d, scan)
		if err != nil {
			if lr.reject(err) {
				b.warnf("job history truncated at line %d: %v", lr.n, err)
				break
			}
			continue
		}
		if !b.applyLine(&ev) {
			break
		}
	}
	if msg := lr.skipped(); msg != "" {
		b.warnf("job history: %s", msg)
	}
	return b.finish()
}

// decodeJhLine decodes one event line (with the hand-written decoder when
// scan is set, else or on its refusal with encoding/json) and prepares its
// records for apply. A line nested deeper than maxNesting is errNesting on
// both paths: the scanner gives up at that depth and checkNesting, which
// does not recurse, runs before encoding/json.
func decodeJhLine(line []byte, d *jhDecoder, scan bool) (jhLine, error) {
	var ev jhLine
	if !scan || !scanJhLine(line, d, &ev) {
		ev = jhLine{}
		if err := checkNesting(line); err != nil {
			return jhLine{}, err
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return jhLine{}, err
		}
	}
	if ev.one != nil {
		ev.one.prepare()
	}
	for _, r := range ev.Event {
		if r != nil {
			r.prepare()
		}
	}
	return ev, nil
}

// prepare does the per-record work that needs no builder state (counter
// flattening, split normalisation), so it can run on decoding goroutines.
func (r *jhRecord) prepare() {
	r.flat = r.Counters.flatten()
	r.flatTotal = r.TotalCounters.flatten()
	r.splits = splitsFrom(r.ClockSplits, r.CPUUsages, r.VMemKbytes, r.PhysMemKbytes)
}

// applyLine applies one event line and reports whether the job is still
// within its memory budget (false: stop reading).
func (b *jhBuilder) applyLine(ev *jhLine) bool {
	if ev.one != nil {
		b.apply(ev.Type, ev.one)
	}
	// Real events hold one record; apply several in a fixed order.
	for _, class := range slices.Sorted(maps.Keys(ev.Event)) {
		if rec := ev.Event[class]; rec != nil {
			b.apply(ev.Type, rec)
		}
	}
	return b.budget.err == nil
}

func (b *jhBuilder) warnf(format string, args ...any) {
	b.j.Warnings = append(b.j.Warnings, fmt.Sprintf(format, args...))
}

func (b *jhBuilder) task(id, typ string) *jhTask {
	if t, ok := b.tasks[id]; ok {
		if t.t.Kind == "" && typ != "" {
			t.t.Kind = taskKind(typ, id)
		}
		return t
	}
	b.budget.charge(costTask + int64(len(id)))
	t := &jhTask{attempts: make(map[string]int)}
	t.t.ID = id
	t.t.Kind = taskKind(typ, id)
	b.tasks[id] = t
	b.order = append(b.order, id)
	return t
}

func (b *jhBuilder) attempt(t *jhTask, id string) *job.Attempt {
	if i, ok := t.attempts[id]; ok {
		return &t.t.Attempts[i]
	}
	b.budget.charge(costAttempt + int64(len(id)))
	t.attempts[id] = len(t.t.Attempts)
	t.t.Attempts = append(t.t.Attempts, job.Attempt{ID: id})
	return &t.t.Attempts[len(t.t.Attempts)-1]
}

// taskKind maps a history task type to a job.TaskKind; setup and cleanup
// tasks (Hadoop 0.20/1.x histories) return "".
func taskKind(typ, id string) job.TaskKind {
	switch strings.ToUpper(typ) {
	case "MAP":
		return job.MapTask
	case "REDUCE":
		return job.ReduceTask
	case "SETUP", "CLEANUP", "JOB_SETUP", "JOB_CLEANUP", "TASK_CLEANUP":
		return ""
	}
	switch {
	case strings.Contains(id, "_m_"):
		return job.MapTask
	case strings.Contains(id, "_r_"):
		return job.ReduceTask
	}
	return ""
}

func (b *jhBuilder) apply(typ string, r *jhRecord) {
	j := b.j
	switch typ {
	case "JOB_SUBMITTED":
		b.budget.charge(int64(len(r.JobID) + len(r.JobName) + len(r.UserName) + len(r.JobQueueName)))
		j.ID = r.JobID
		j.Name = string(r.JobName)
		j.User = string(r.UserName)
		j.SubmitMs = r.SubmitTime
		if r.JobQueueName != "" {
			j.Queue = string(r.JobQueueName)
		}
	case "JOB_QUEUE_CHANGED":
		j.Queue = string(r.JobQueueName)
	case "JOB_INITED":
		j.StartMs = r.LaunchTime
	case "JOB_INFO_CHANGED":
		if r.SubmitTime > 0 {
			j.SubmitMs = r.SubmitTime
		}
		if r.LaunchTime > 0 {
			j.StartMs = r.LaunchTime
		}
	case "JOB_FINISHED":
		b.finished = true
		j.FinishMs = r.FinishTime
		j.Status = job.Succeeded
		j.Counters = r.flatTotal
		b.budget.counters(j.Counters)
	case "JOB_FAILED", "JOB_KILLED", "JOB_ERROR":
		b.finished = true
		j.FinishMs = r.FinishTime
		switch strings.ToUpper(string(r.JobStatus)) {
		case "KILLED":
			j.Status = job.Killed
		case "FAILED", "ERROR":
			j.Status = job.Failed
		default:
			if typ == "JOB_KILLED" {
				j.Status = job.Killed
			} else {
				j.Status = job.Failed
			}
		}
		j.Diagnostics = string(r.Diagnostics)
		b.budget.charge(int64(len(j.Diagnostics)))
	case "TASK_STARTED":
		b.task(r.TaskID, r.TaskType)
	case "MAP_ATTEMPT_STARTED", "REDUCE_ATTEMPT_STARTED":
		a := b.attempt(b.task(r.TaskID, r.TaskType), r.AttemptID)
		a.StartMs = r.StartTime
		if a.Host == "" {
			a.Host = string(r.Tracker)
			b.budget.charge(int64(len(a.Host)))
		}
	case "MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED":
		a := b.attempt(b.task(r.TaskID, r.TaskType), r.AttemptID)
		a.Status = attemptStatus(string(r.TaskStatus), job.Succeeded)
		a.FinishMs = r.FinishTime
		a.ShuffleFinishMs = r.ShuffleFinishTime
		a.SortFinishMs = r.SortFinishTime
		if r.Hostname != "" {
			a.Host = string(r.Hostname)
		}
		a.Counters = r.flat
		a.Splits = r.splits
		b.chargeAttempt(a)
	case "MAP_ATTEMPT_FAILED", "MAP_ATTEMPT_KILLED", "REDUCE_ATTEMPT_FAILED", "REDUCE_ATTEMPT_KILLED":
		a := b.attempt(b.task(r.TaskID, r.TaskType), r.AttemptID)
		def := job.Failed
		if strings.HasSuffix(typ, "KILLED") {
			def = job.Killed
		}
		a.Status = attemptStatus(string(r.Status), def)
		a.FinishMs = r.FinishTime
		if r.Hostname != "" {
			a.Host = string(r.Hostname)
		}
		a.Diagnostics = string(r.Error)
		a.Counters = r.flat
		a.Splits = r.splits
		b.chargeAttempt(a)
	case "TASK_FINISHED":
		t := b.task(r.TaskID, r.TaskType)
		t.finished = true
		t.t.Status = attemptStatus(string(r.Status), job.Succeeded)
		t.t.Counters = r.flat
		t.successful = string(r.SuccessfulAttemptID)
		// Share the successful attempt's equal map now, so the duplicate is
		// garbage long before the file is read.
		shared := false
		if i, ok := t.attempts[t.successful]; ok {
			shareMap(&t.t.Attempts[i].Counters, t.t.Counters)
			shared = sameMap(t.t.Attempts[i].Counters, t.t.Counters) // the attempt's copy, charged, is garbage
		}
		if !shared {
			b.budget.counters(t.t.Counters)
		}
	case "TASK_FAILED":
		t := b.task(r.TaskID, r.TaskType)
		t.finished = true
		t.t.Status = attemptStatus(string(r.Status), job.Failed)
		if c := r.flat; c != nil {
			t.t.Counters = c
			b.budget.counters(c)
		}
		t.failedDue = string(r.FailedDueToAttempt)
	}
}

// chargeAttempt charges what a finished or failed attempt event keeps.
func (b *jhBuilder) chargeAttempt(a *job.Attempt) {
	n := int64(len(a.Host)+len(a.Diagnostics)) + int64(len(a.Counters))*costCounter
	if a.Splits != nil {
		n += costSplits
	}
	b.budget.charge(n)
}

func attemptStatus(s string, def job.Status) job.Status {
	switch strings.ToUpper(s) {
	case "SUCCEEDED", "SUCCESS":
		return job.Succeeded
	case "FAILED":
		return job.Failed
	case "KILLED":
		return job.Killed
	case "":
		return def
	}
	return job.Status(strings.ToUpper(s))
}

// taskIDInText finds a task id in a job's failure diagnostics, as Dr.
// Elephant does to locate the attempt whose stack trace explains the
// failure.
var taskIDInText = regexp.MustCompile(`task_[0-9]+_[0-9]+_[mr]_[0-9]+`)

func (b *jhBuilder) finish() (*job.Job, error) {
	j := b.j
	if err := b.budget.err; err != nil {
		return nil, fmt.Errorf("parse job history %s: %w", j.ID, err)
	}
	if j.ID == "" {
		if len(j.Warnings) > 0 { // say why, e.g. the one event line was malformed
			return nil, fmt.Errorf("parse job history: %w: no JOB_SUBMITTED event (%s)", ErrNoJob, strings.Join(j.Warnings, "; "))
		}
		return nil, fmt.Errorf("parse job history: %w: no JOB_SUBMITTED event", ErrNoJob)
	}
	j.AppID = appIDFromJobID(j.ID)
	if !b.finished {
		j.Status = job.Unknown
		b.warnf("job history has no job completion event (job still running or file truncated)")
	}
	for _, id := range b.order {
		t := b.tasks[id]
		switch t.t.Kind {
		case "":
			continue
		}
		if t.t.Status == "" {
			t.t.Status = job.Unknown
		}
		t.t.Analyzed = chooseAttempt(t)
		shareCounters(&t.t)
		if t.t.Kind == job.MapTask {
			j.MapTasks = append(j.MapTasks, t.t)
		} else {
			j.ReduceTasks = append(j.ReduceTasks, t.t)
		}
	}
	if j.Status == job.Failed {
		j.Diagnostics = b.failureDiagnostics()
	}
	return j, nil
}

// chooseAttempt picks the attempt the analysis uses: the successful attempt
// of a succeeded task, else the attempt it failed due to.
func chooseAttempt(t *jhTask) string {
	has := func(id string) bool { _, ok := t.attempts[id]; return id != "" && ok }
	switch t.t.Status {
	case job.Succeeded:
		if has(t.successful) {
			return t.successful
		}
	case job.Failed:
		if has(t.failedDue) {
			return t.failedDue
		}
		return ""
	}
	// No (usable) id from the task event: the succeeded attempt, if any.
	for _, a := range t.t.Attempts {
		if a.Status == job.Succeeded {
			return a.ID
		}
	}
	return ""
}

// failureDiagnostics returns the stack trace of the attempt a failed job
// failed on: the task named in the job diagnostics (else the first failed
// task), its failed-due-to attempt's error; the job's own text otherwise.
func (b *jhBuilder) failureDiagnostics() string {
	j := b.j
	var tid string
	if m := taskIDInText.FindString(j.Diagnostics); m != "" {
		tid = m
	} else {
		for _, id := range b.order {
			if b.tasks[id].t.Status == job.Failed {
				tid = id
				break
			}
		}
	}
	if t, ok := b.tasks[tid]; ok {
		if a := t.t.AnalyzedAttempt(); a != nil && strings.TrimSpace(a.Diagnostics) != "" {
			return a.Diagnostics
		}
		for _, a := range t.t.Attempts {
			if a.Status == job.Failed && strings.TrimSpace(a.Diagnostics) != "" {
				return a.Diagnostics
			}
		}
	}
	return j.Diagnostics
}

// appIDFromJobID maps job_<cluster>_<seq> to application_<cluster>_<seq>.
func appIDFromJobID(id string) string {
	if rest, ok := strings.CutPrefix(id, "job_"); ok {
		return "application_" + rest
	}
	return id
}

// shareCounters lets a task and its analysed attempt share one counters map
// when they hold the same values (the usual case: a task's counters are its
// successful attempt's), halving the memory a large job takes.
func shareCounters(t *job.Task) {
	if a := t.AnalyzedAttempt(); a != nil {
		shareMap(&a.Counters, t.Counters)
	}
}

// shareMap points *dst at m when both hold the same counters.
func shareMap(dst *job.Counters, m job.Counters) {
	if *dst == nil || len(*dst) != len(m) {
		return
	}
	for k, v := range m {
		if w, ok := (*dst)[k]; !ok || w != v {
			return
		}
	}
	*dst = m
}
