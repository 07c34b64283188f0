package fetcher

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fetchAll fetches source and returns its jobs in order.
func fetchAll(t testing.TB, source string) []*job.Job {
	t.Helper()
	var jobs []*job.Job
	if err := Fetch(context.Background(), source, func(j *job.Job) error {
		jobs = append(jobs, j)
		return nil
	}); err != nil {
		t.Fatalf("Fetch(%s): %v", source, err)
	}
	return jobs
}

func fetchOne(t testing.TB, source string) *job.Job {
	t.Helper()
	jobs := fetchAll(t, source)
	if len(jobs) != 1 {
		t.Fatalf("Fetch(%s): %d jobs, want 1", source, len(jobs))
	}
	return jobs[0]
}

func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("glob %s/%s: %v %v", dir, pattern, m, err)
	}
	return m[0]
}

// The facts Dr. Elephant's own fetcher tests assert, and those INDEX.md
// lists for the job histories.
func TestSampleJobHistories(t *testing.T) {
	data := testenv.Samples(t)
	done := filepath.Join(data, "drelephant/history/done/2018/05/17/000000")
	inter := filepath.Join(data, "drelephant/history/done_intermediate/user")
	hs := filepath.Join(data, "mrhistory/hadoop-hs-test")

	t.Run("done layout", func(t *testing.T) {
		j := fetchOne(t, onlyFile(t, done, "job_1526555215992_0001-*.jhist"))
		if j.ID != "job_1526555215992_0001" || j.AppID != "application_1526555215992_0001" {
			t.Errorf("ids = %s %s", j.ID, j.AppID)
		}
		if got := j.Conf["map.sort.class"]; got != "org.apache.hadoop.util.QuickSort" {
			t.Errorf("conf map.sort.class = %q", got)
		}
		if got := j.Conf["mapreduce.map.memory.mb"]; got != "1024" {
			t.Errorf("conf mapreduce.map.memory.mb = %q", got)
		}
		if got := j.Counters.Get(job.FileBytesRead); got != 28 {
			t.Errorf("FILE_BYTES_READ = %d, want 28", got)
		}
		if len(j.MapTasks) != 1 || len(j.ReduceTasks) != 1 || !j.Succeeded() {
			t.Errorf("maps %d reduces %d status %s", len(j.MapTasks), len(j.ReduceTasks), j.Status)
		}
		if j.User != "user" || j.Queue != "default" || j.Name != "QuasiMonteCarlo" {
			t.Errorf("user %q queue %q name %q", j.User, j.Queue, j.Name)
		}
		if j.SubmitMs != 1526555642677 || j.FinishMs != 1526555658299 {
			t.Errorf("submit %d finish %d", j.SubmitMs, j.FinishMs)
		}
		r := j.ReduceTasks[0]
		tv, ok := r.Times()
		if !ok || tv.ShuffleMs != 1526555658031-1526555656049 || tv.SortMs != 1526555658048-1526555658031 {
			t.Errorf("reduce times %+v %v", tv, ok)
		}
		if len(j.Warnings) != 0 {
			t.Errorf("warnings %q", j.Warnings)
		}
	})
	t.Run("done_intermediate layout", func(t *testing.T) {
		j := fetchOne(t, onlyFile(t, inter, "*.jhist"))
		if got := j.Counters.Get(job.CommittedHeapBytes); got != 346030080 {
			t.Errorf("COMMITTED_HEAP_BYTES = %d, want 346030080", got)
		}
		if got := j.Conf["mapreduce.output.fileoutputformat.compress.type"]; got != "RECORD" {
			t.Errorf("compress.type = %q", got)
		}
	})
	t.Run("backfill directory", func(t *testing.T) {
		jobs := fetchAll(t, filepath.Join(data, "drelephant/history"))
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		want := "job_1526555215992_0001 job_1526555215992_0002 job_1526555215992_0004"
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("jobs = %s, want %s", got, want)
		}
	})
	t.Run("sleep job with splits", func(t *testing.T) {
		j := fetchOne(t, onlyFile(t, hs, "job_1329348432655_0001-*.jhist"))
		if len(j.MapTasks) != 10 || len(j.ReduceTasks) != 2 || j.Conf["mapreduce.map.memory.mb"] != "512" {
			t.Fatalf("maps %d reduces %d conf %q", len(j.MapTasks), len(j.ReduceTasks), j.Conf["mapreduce.map.memory.mb"])
		}
		for _, tk := range append(append([]job.Task{}, j.MapTasks...), j.ReduceTasks...) {
			a := tk.AnalyzedAttempt()
			if a == nil {
				continue // a reduce that never ran in this history
			}
			if a.Splits == nil || len(a.Splits.ClockSplits) != job.SplitBuckets {
				t.Fatalf("%s: splits %+v", tk.ID, a.Splits)
			}
			// CPU splits are increments summing to (about) the CPU counter;
			// memory splits are states whose peak is the memory counter.
			cpu := tk.Counters.Get(job.CPUMilliseconds)
			if d := a.Splits.TotalCPUMs() - cpu; d < -cpu/10 || d > cpu/10 {
				t.Errorf("%s: Σ cpuUsages %d vs CPU_MILLISECONDS %d", tk.ID, a.Splits.TotalCPUMs(), cpu)
			}
			phys, _, ok := a.Splits.PeakMemory()
			want := tk.Counters.Get(job.PhysicalMemoryBytes)
			if !ok || phys < want*9/10 || phys > want*11/10 {
				t.Errorf("%s: peak split memory %d vs PHYSICAL_MEMORY_BYTES %d", tk.ID, phys, want)
			}
		}
	})
	t.Run("map-only job without conf", func(t *testing.T) {
		j := fetchOne(t, onlyFile(t, hs, "job_1416424547277_0002-*.jhist"))
		if len(j.MapTasks) != 2 || len(j.ReduceTasks) != 0 || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "_conf.xml") {
			t.Errorf("maps %d reduces %d warnings %q", len(j.MapTasks), len(j.ReduceTasks), j.Warnings)
		}
	})
	t.Run("failed jobs", func(t *testing.T) {
		for _, c := range []struct{ file, diag string }{
			{"job_1393307629410_0001-*.jhist", "Timed out after 5 secs"},
			{"job_2.0.3-alpha-FAILED.jhist", "Intentional map failure"},
			{"job_2.4.0-FAILED.jhist", "Intentional map failure"},
			{"job_0.23.9-FAILED.jhist", "Intentional map failure"},
		} {
			j := fetchOne(t, onlyFile(t, hs, c.file))
			if j.Status != job.Failed || !strings.Contains(j.Diagnostics, c.diag) {
				t.Errorf("%s: status %s diagnostics %.80q", c.file, j.Status, j.Diagnostics)
			}
			analysed := 0
			for _, tk := range j.MapTasks {
				if tk.Status != job.Failed {
					continue
				}
				if a := tk.AnalyzedAttempt(); a != nil {
					analysed++
					if a.Status != job.Failed {
						t.Errorf("%s: failed task %s analyses a %s attempt", c.file, tk.ID, a.Status)
					}
				}
			}
			if analysed == 0 {
				t.Errorf("%s: no failed task has an analysed attempt", c.file)
			}
		}
	})
}

func TestSampleRumen(t *testing.T) {
	data := testenv.Samples(t)
	jobs := fetchAll(t, filepath.Join(data, "mrhistory/rumen/sls-2jobs2min-rumen-jh.json"))
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	m := jobs[0].MapTasks[0]
	if len(jobs[0].MapTasks) != 96 || m.Counters.Get(job.HDFSBytesRead) != 82 || m.Counters.Get(job.MapOutputRecords) != 4166667 {
		t.Errorf("maps %d first map counters %v", len(jobs[0].MapTasks), m.Counters)
	}
	if m.Counters.Get(job.PhysicalMemoryBytes) != 308215808 || m.Counters.Has(job.ReduceShuffleBytes) {
		t.Errorf("resource usage counters %v", m.Counters)
	}
	a := m.AnalyzedAttempt()
	if phys, _, ok := a.Splits.PeakMemory(); !ok || phys != 310604*1024 {
		t.Errorf("split peak %d", phys)
	}
	if a.Splits.TotalClockMs() != 17043-0 && a.Splits.TotalClockMs() <= 0 {
		t.Errorf("clock %d", a.Splits.TotalClockMs())
	}
	zombie := fetchAll(t, filepath.Join(data, "mrhistory/rumen/zombie-input-trace.json"))
	var maps, reduces int
	for _, j := range zombie {
		maps += len(j.MapTasks)
		reduces += len(j.ReduceTasks)
	}
	if len(zombie) != 4 || zombie[0].Status != job.Killed {
		t.Errorf("zombie: %d jobs, first %s", len(zombie), zombie[0].Status)
	}
	if maps != 154 || reduces != 49 {
		t.Errorf("zombie: %d maps %d reduces, want 154/49", maps, reduces)
	}
	gold := fetchAll(t, filepath.Join(data, "mrhistory/rumen/small-trace-goldFoldedTrace.json.gz"))
	maps, reduces = 0, 0
	for _, j := range gold {
		maps += len(j.MapTasks)
		reduces += len(j.ReduceTasks)
	}
	if len(gold) != 89 || maps != 1214 || reduces != 582 {
		t.Errorf("gold trace: %d jobs %d maps %d reduces, want 89/1214/582", len(gold), maps, reduces)
	}
}

// Counts from INDEX.md (tasks = TaskEnd events; executors excluding the
// driver = ExecutorAdded events).
func TestSampleEventLogs(t *testing.T) {
	data := testenv.Samples(t)
	dir := filepath.Join(data, "sparkevents/apache-spark")
	for _, c := range []struct {
		file                             string
		jobsOK, jobsFailed               int
		tasks, failed, killed, executors int
	}{
		{"local-1422981759269", 4, 0, 33, 0, 0, 0},
		{"local-1422981780767", 2, 1, 32, 1, 0, 0},
		{"local-1426533911241", 1, 0, 8, 0, 0, 0},
		{"local-1430917381534", 1, 0, 110, 0, 0, 0},
		{"local-1430917381535_1", 0, 0, 0, 0, 0, 0},
		{"app-20161115172038-0000", 1, 0, 26, 10, 0, 4},
		{"app-20161116163331-0000", 1, 0, 24, 8, 0, 4},
		{"app-20180109111548-0000", 1, 0, 22, 2, 0, 2},
		{"app-20200706201101-0003", 3, 0, 48, 0, 0, 1},
		{"application_1506645932520_24630151", 1, 0, 9, 0, 0, 7},
		{"application_1516285256255_0012", 1, 0, 24, 4, 0, 5},
		{"application_1538416563558_0014", 8, 0, 35, 8, 0, 9},
		{"application_1553914137147_0018", 3, 0, 6, 0, 0, 3},
		{"application_1555004656427_0144", 0, 0, 0, 0, 0, 2},
		{"application_1578436911597_0052", 1, 0, 6, 0, 0, 1},
		{"application_1628109047826_1317105", 1, 0, 5, 0, 1, 10},
		{"local-1642039451826", 6, 0, 35, 0, 0, 0}, // its ExecutorAdded is the driver
	} {
		t.Run(c.file, func(t *testing.T) {
			j := fetchOne(t, filepath.Join(dir, c.file))
			if j.Type != job.Spark || j.Spark == nil || j.ID == "" || !j.Succeeded() {
				t.Fatalf("type %s id %q status %s", j.Type, j.ID, j.Status)
			}
			var ok, bad, tasks, failed, killed, execs int
			for _, x := range j.Spark.Jobs {
				switch x.Status {
				case job.Succeeded:
					ok++
				case job.Failed:
					bad++
				}
			}
			for _, st := range j.Spark.Stages {
				tasks += len(st.Tasks)
				failed += st.NumFailedTasks
				killed += st.NumKilledTasks
			}
			for _, e := range j.Spark.Executors {
				if e.ID != job.DriverID {
					execs++
				}
			}
			if ok != c.jobsOK || bad != c.jobsFailed || tasks != c.tasks || failed != c.failed || killed != c.killed || execs != c.executors {
				t.Errorf("jobs %d/%d tasks %d failed %d killed %d executors %d; want %d/%d %d %d %d %d",
					ok, bad, tasks, failed, killed, execs, c.jobsOK, c.jobsFailed, c.tasks, c.failed, c.killed, c.executors)
			}
			if len(j.Warnings) != 0 {
				t.Errorf("warnings %q", j.Warnings)
			}
		})
	}
	t.Run("drelephant event_log_1", func(t *testing.T) {
		j := fetchOne(t, filepath.Join(data, "drelephant/spark_event_logs/event_log_1"))
		if j.ID != "application_1457600942802_0093" || j.Conf["spark.executor.instances"] != "900" || j.Spark.SparkVersion != "1.5.1" ||
			j.Conf["spark.executor.memory"] != "1g" || j.Conf["spark.driver.memory"] != "2G" || len(j.Spark.Executors) != 3 {
			t.Errorf("id %s conf %v executors %d", j.ID, j.Conf, len(j.Spark.Executors))
		}
	})
	t.Run("drelephant event_log_2 (no end)", func(t *testing.T) {
		j := fetchOne(t, filepath.Join(data, "drelephant/spark_event_logs/event_log_2"))
		if j.Status != job.Running || len(j.Warnings) != 1 || j.Conf["spark.serializer"] == "" {
			t.Errorf("status %s warnings %q", j.Status, j.Warnings)
		}
	})
}

// The replay must derive what the history server itself serves for the same
// log (HistoryServerSuite's recorded expectations).
func TestEventLogMatchesHistoryServer(t *testing.T) {
	data := testenv.Samples(t)
	j := fetchOne(t, filepath.Join(data, "sparkevents/apache-spark/local-1422981780767"))
	exp := filepath.Join(data, "sparkevents/shs-rest-expectations")
	var stages []sparkStage
	readJSON(t, filepath.Join(exp, "stage_list_json_expectation.json"), &stages)
	if len(stages) != len(j.Spark.Stages) {
		t.Fatalf("%d stages, history server lists %d", len(j.Spark.Stages), len(stages))
	}
	for i, want := range stages {
		got := j.Spark.Stages[i]
		if got.ID != want.StageID || string(got.Status) != want.Status || got.NumCompleteTasks != want.NumCompleteTasks ||
			got.NumFailedTasks != want.NumFailedTasks || got.ExecutorRunTimeMs != want.ExecutorRunTimeMs ||
			got.InputBytes != want.InputBytes || got.ShuffleWriteBytes != want.ShuffleWriteBytes {
			t.Errorf("stage %d: got %s %d/%d run %d in %d sw %d; want %+v", got.ID, got.Status, got.NumCompleteTasks,
				got.NumFailedTasks, got.ExecutorRunTimeMs, got.InputBytes, got.ShuffleWriteBytes, want)
		}
	}
	var jobs []sparkJob
	readJSON(t, filepath.Join(exp, "job_list_json_expectation.json"), &jobs)
	for i, want := range jobs {
		got := j.Spark.Jobs[i]
		if got.ID != want.JobID || string(got.Status) != want.Status || got.NumCompletedTasks != want.NumCompletedTasks ||
			got.NumFailedTasks != want.NumFailedTasks || got.NumCompletedStages != want.NumCompletedStages {
			t.Errorf("job %d: got %+v; want %+v", got.ID, got, want)
		}
	}
	var execs []sparkExecutor
	readJSON(t, filepath.Join(exp, "executor_list_json_expectation.json"), &execs)
	d, want := j.Spark.Executors[0], execs[0]
	if d.ID != want.ID || d.CompletedTasks != want.CompletedTasks || d.FailedTasks != want.FailedTasks ||
		d.TotalTasks != want.TotalTasks || d.TotalInputBytes != want.TotalInputBytes ||
		d.TotalShuffleWriteBytes != want.TotalShuffleWrite || d.MaxMemoryBytes != want.MaxMemory {
		t.Errorf("driver: got %+v; want %+v", d, want)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// summary is the compact golden form of a parsed job: counts, ids and key
// counters, never the third-party content itself.
type summary struct {
	ID, AppID, Type, Status string
	Maps, Reduces, Attempts int
	WithSplits              int              `json:",omitempty"`
	Counters                map[string]int64 `json:",omitempty"`
	ConfKeys                int
	Spark                   *sparkSummary `json:",omitempty"`
	Warnings                int           `json:",omitempty"`
}

type sparkSummary struct {
	Jobs, Stages, Tasks, Executors, FailedTasks int
	DurationMs, TaskTimeMs, GCTimeMs            int64
}

var goldenCounters = []string{job.HDFSBytesRead, job.FileBytesRead, job.CPUMilliseconds, job.GCTimeMillis,
	job.PhysicalMemoryBytes, job.SpilledRecords, job.ReduceShuffleBytes}

func summarize(j *job.Job) summary {
	s := summary{ID: j.ID, AppID: j.AppID, Type: string(j.Type), Status: string(j.Status),
		Maps: len(j.MapTasks), Reduces: len(j.ReduceTasks), ConfKeys: len(j.Conf), Warnings: len(j.Warnings)}
	for _, ts := range [][]job.Task{j.MapTasks, j.ReduceTasks} {
		for _, t := range ts {
			s.Attempts += len(t.Attempts)
			if a := t.AnalyzedAttempt(); a != nil && a.Splits != nil {
				s.WithSplits++
			}
		}
	}
	for _, c := range goldenCounters {
		if j.Counters.Has(c) {
			if s.Counters == nil {
				s.Counters = map[string]int64{}
			}
			s.Counters[c] = j.Counters.Get(c)
		}
	}
	if sp := j.Spark; sp != nil {
		ss := &sparkSummary{Jobs: len(sp.Jobs), Stages: len(sp.Stages), Executors: len(sp.Executors)}
		if a := sp.LastAttempt(); a != nil {
			ss.DurationMs = a.DurationMs()
		}
		for _, st := range sp.Stages {
			ss.Tasks += len(st.Tasks)
			ss.FailedTasks += st.NumFailedTasks
		}
		for _, e := range sp.Executors {
			ss.TaskTimeMs += e.TotalDurationMs
			ss.GCTimeMs += e.TotalGCTimeMs
		}
		s.Spark = ss
	}
	return s
}

// golden returns the golden file testdata/name, or with -update rewrites it
// from got and returns ok = false.
func golden(t *testing.T, name string, got any) (want []byte, ok bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return nil, false
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	return want, true
}

// TestSampleGolden fetches every sample and compares compact summaries with
// testdata/samples.golden.json (rewrite with -update).
func TestSampleGolden(t *testing.T) {
	data := testenv.Samples(t)
	got := map[string][]summary{}
	err := Fetch(context.Background(), data, func(j *job.Job) error {
		rel, _ := filepath.Rel(data, j.Source)
		got[rel] = append(got[rel], summarize(j))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want, ok := golden(t, "samples.golden.json", got)
	if !ok {
		return
	}
	var wantM map[string][]summary
	if err := json.Unmarshal(want, &wantM); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range wantM {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := wantM[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, _ := json.Marshal(got[k])
		w, _ := json.Marshal(wantM[k])
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", k, g, w)
		}
	}
}

// Executor summaries derived from event logs against the history server's
// recorded ones. The driver's totalDuration is left out: the history server
// reports the application's duration there, while Dr. Elephant's event-log
// path (and collector/job) define it as Σ task time; memoryUsed is the peak
// storage memory here and the final one there.
func TestEventLogExecutorsMatchHistoryServer(t *testing.T) {
	data := testenv.Samples(t)
	for _, c := range []struct{ log, expectation string }{
		{"app-20161116163331-0000", "executor_memory_usage"},
		{"application_1553914137147_0018", "executor_list_with_executor_metrics_json"},
	} {
		j := fetchOne(t, filepath.Join(data, "sparkevents/apache-spark", c.log))
		var want []sparkExecutor
		readJSON(t, filepath.Join(data, "sparkevents/shs-rest-expectations", c.expectation+"_expectation.json"), &want)
		got := map[string]job.SparkExecutor{}
		for _, e := range j.Spark.Executors {
			got[e.ID] = e
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d executors, history server %d", c.log, len(got), len(want))
		}
		for _, w := range want {
			g, ok := got[w.ID]
			dur := g.TotalDurationMs
			if w.ID == job.DriverID {
				dur = w.TotalDurationMs
			}
			if !ok || dur != w.TotalDurationMs || g.TotalGCTimeMs != w.TotalGCTimeMs || g.TotalInputBytes != w.TotalInputBytes ||
				g.TotalShuffleReadBytes != w.TotalShuffleRead || g.TotalShuffleWriteBytes != w.TotalShuffleWrite ||
				g.CompletedTasks != w.CompletedTasks || g.FailedTasks != w.FailedTasks || g.TotalTasks != w.TotalTasks ||
				g.MaxMemoryBytes != w.MaxMemory || g.Cores != w.TotalCores {
				t.Errorf("%s executor %s:\n got %+v\nwant %+v", c.log, w.ID, g, w)
			}
			if hp := w.PeakMemoryMetrics["JVMHeapMemory"]; hp > 0 && (g.Peak == nil || g.Peak.JVMHeapMemory != hp || g.Peak.MajorGCTimeMs != w.PeakMemoryMetrics["MajorGCTime"]) {
				t.Errorf("%s executor %s: peak %+v, want %v", c.log, w.ID, g.Peak, w.PeakMemoryMetrics)
			}
		}
	}
}
