package fetcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

func sparkLog(t testing.TB, s gen.SparkApp) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gen.WriteSparkLog(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func lz4Block(t testing.TB, b []byte, end bool) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gen.NewLZ4BlockWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if end {
		w.Close()
	} else {
		w.Abandon()
	}
	return out.Bytes()
}

func snappyStream(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gen.NewSnappyStreamWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return out.Bytes()
}

func zstdFrames(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func write(t testing.TB, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// Every codec Spark writes decodes to the same application as the plain log.
func TestCompressedEventLogs(t *testing.T) {
	dir := t.TempDir()
	const app = "application_1700000000000_0042"
	plain := sparkLog(t, gen.SparkApp{AppID: app, Stages: 3, TasksPerStage: 700, FailedTasks: 3, Seed: 7})
	want := summarize(fetchOne(t, write(t, filepath.Join(dir, app), plain)))
	if want.Spark.Tasks != 2103 || want.Spark.FailedTasks != 3 || want.Warnings != 0 {
		t.Fatalf("plain log summary %+v", want)
	}
	var twoSnappy []byte
	twoSnappy = append(snappyStream(t, plain[:len(plain)/2]), snappyStream(t, plain[len(plain)/2:])...)
	for name, body := range map[string][]byte{
		app + ".lz4":            lz4Block(t, plain, true),
		app + ".snappy":         snappyStream(t, plain),
		app + "_concat.snappy":  twoSnappy,
		app + ".zstd":           zstdFrames(t, plain),
		app + ".zst.inprogress": zstdFrames(t, plain),
		app + "_twice.lz4":      append(lz4Block(t, plain[:1000], true), lz4Block(t, plain[1000:], true)...),
	} {
		t.Run(name, func(t *testing.T) {
			got := summarize(fetchOne(t, write(t, filepath.Join(dir, "c", name), body)))
			if strings.HasSuffix(name, ".inprogress") {
				want := want
				want.Warnings = 1
				if jsonOf(got) != jsonOf(want) {
					t.Errorf("got %s\nwant %s", jsonOf(got), jsonOf(want))
				}
				return
			}
			if jsonOf(got) != jsonOf(want) {
				t.Errorf("got %s\nwant %s", jsonOf(got), jsonOf(want))
			}
		})
	}
}

// A Spark 3 rolling log: parts read in order, each with its own codec.
func TestRollingEventLog(t *testing.T) {
	dir := t.TempDir()
	const app = "application_1700000000000_0007"
	plain := sparkLog(t, gen.SparkApp{AppID: app, Stages: 4, TasksPerStage: 50})
	want := summarize(fetchOne(t, write(t, filepath.Join(dir, "plain", app), plain)))
	lines := bytes.SplitAfter(plain, []byte("\n"))
	third := len(lines) / 3
	part := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	rd := filepath.Join(dir, "logs", "eventlog_v2_"+app)
	write(t, filepath.Join(rd, "appstatus_"+app), nil)
	write(t, filepath.Join(rd, "events_1_"+app+".zstd"), zstdFrames(t, part(lines[:third])))
	write(t, filepath.Join(rd, "events_2_"+app+".zstd"), zstdFrames(t, part(lines[third:2*third])))
	write(t, filepath.Join(rd, "events_10_"+app+".zstd"), zstdFrames(t, part(lines[2*third:])))
	want.Warnings = 1 // parts 3..9 missing
	for _, src := range []string{filepath.Join(dir, "logs"), rd} {
		got := summarize(fetchOne(t, src))
		if jsonOf(got) != jsonOf(want) {
			t.Errorf("%s: got %s\nwant %s", src, jsonOf(got), jsonOf(want))
		}
	}
}

func TestCancelledFetch(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "app"), sparkLog(t, gen.SparkApp{TasksPerStage: 10}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, src := range []string{dir, filepath.Join(dir, "app")} {
		err := Fetch(ctx, src, func(*job.Job) error { t.Error("job delivered after cancel"); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// Truncated and damaged inputs give what was read plus a warning.
func TestTruncatedInputs(t *testing.T) {
	dir := t.TempDir()
	plain := sparkLog(t, gen.SparkApp{Stages: 2, TasksPerStage: 2000})
	full := summarize(fetchOne(t, write(t, filepath.Join(dir, "full", "app"), plain)))
	lz := lz4Block(t, plain, true)
	corrupt := append([]byte(nil), lz...)
	corrupt[len(corrupt)/2] ^= 0xff
	for name, body := range map[string][]byte{
		"cut-mid-line":  plain[:len(plain)*6/10],
		"cut.lz4":       lz[:len(lz)*6/10],
		"abandoned.lz4": lz4Block(t, plain[:len(plain)/2], false),
		"corrupt.lz4":   corrupt,
		"cut.snappy":    func() []byte { s := snappyStream(t, plain); return s[:len(s)*6/10] }(),
		"cut.zstd":      func() []byte { s := zstdFrames(t, plain); return s[:len(s)*6/10] }(),
	} {
		t.Run(name, func(t *testing.T) {
			j := fetchOne(t, write(t, filepath.Join(dir, name, "app"+filepath.Ext(name)), body))
			got := summarize(j)
			if len(j.Warnings) == 0 || got.Spark.Tasks == 0 || got.Spark.Tasks >= full.Spark.Tasks || j.Status == job.Succeeded {
				t.Errorf("tasks %d of %d, status %s, warnings %q", got.Spark.Tasks, full.Spark.Tasks, j.Status, j.Warnings)
			}
		})
	}

	var hist bytes.Buffer
	spec := gen.MRJob{Maps: 300, Reduces: 20}
	if err := gen.WriteJhist(&hist, spec); err != nil {
		t.Fatal(err)
	}
	t.Run("cut.jhist", func(t *testing.T) {
		b := hist.Bytes()
		j := fetchOne(t, write(t, filepath.Join(dir, "jh", "job_1700000000000_0001.jhist"), b[:len(b)/2]))
		if j.ID != "job_1700000000000_0001" || j.Status != job.Unknown || len(j.MapTasks) == 0 || len(j.MapTasks) >= 300 {
			t.Errorf("status %s maps %d", j.Status, len(j.MapTasks))
		}
		var trunc bool
		for _, w := range j.Warnings {
			trunc = trunc || strings.Contains(w, "truncated")
		}
		if !trunc {
			t.Errorf("warnings %q", j.Warnings)
		}
	})
	t.Run("garbled jhist line", func(t *testing.T) {
		b := bytes.Replace(hist.Bytes(), []byte(`{"type":"TASK_STARTED"`), []byte(`{"type":"TASK_STARTED"!`), 1)
		j := fetchOne(t, write(t, filepath.Join(dir, "jh2", "x.jhist"), b))
		if !j.Succeeded() || len(j.MapTasks) != 300 || len(j.Warnings) != 2 { // bad line + missing conf
			t.Errorf("status %s maps %d warnings %q", j.Status, len(j.MapTasks), j.Warnings)
		}
	})
	t.Run("cut rumen", func(t *testing.T) {
		one := `{"jobID":"job_1_0001","outcome":"SUCCESS","mapTasks":[{"taskID":"task_1_0001_m_000000","taskType":"MAP","taskStatus":"SUCCESS","attempts":[{"attemptID":"attempt_1_0001_m_000000_0","result":"SUCCESS","startTime":1,"finishTime":1001,"hdfsBytesRead":5,"physMemKbytes":[1,0,0,4]}]}],"reduceTasks":[]}`
		two := strings.Replace(one, "0001", "0002", -1)
		b := one + "\n" + two[:len(two)/2]
		jobs := fetchAll(t, write(t, filepath.Join(dir, "rumen", "trace.json"), []byte(b)))
		if len(jobs) != 1 || len(jobs[0].Warnings) != 1 || jobs[0].MapTasks[0].Counters.Get(job.HDFSBytesRead) != 5 {
			t.Fatalf("jobs %d %+v", len(jobs), jobs)
		}
		// A gap in a state series is interpolated; the resample spreads 4
		// buckets over 12.
		p := jobs[0].MapTasks[0].AnalyzedAttempt().Splits.PhysMemKbytes
		if len(p) != job.SplitBuckets || p[0] != 1 || p[11] != 4 || p[5] != 2 {
			t.Errorf("phys splits %v", p)
		}
	})
}

func TestUnreadableInputs(t *testing.T) {
	dir := t.TempDir()
	nop := func(*job.Job) error { return nil }
	if err := Fetch(context.Background(), filepath.Join(dir, "absent"), nop); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	junk := write(t, filepath.Join(dir, "junk.txt"), []byte("hello\x00world"))
	if err := Fetch(context.Background(), junk, nop); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("junk: %v", err)
	}
	lzf := write(t, filepath.Join(dir, "app.lzf"), []byte("ZV\x00"))
	if err := Fetch(context.Background(), lzf, nop); !errors.Is(err, ErrUnsupportedCodec) {
		t.Errorf("lzf: %v", err)
	}
	bad := write(t, filepath.Join(dir, "bad", "app.lz4"), []byte("LZ4Blocx-not-really-lz4-at-all-----"))
	if err := Fetch(context.Background(), bad, nop); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad lz4: %v", err)
	}
	// A directory skips what it does not recognise but reports what it
	// recognised and could not read.
	d := filepath.Join(dir, "mixed")
	write(t, filepath.Join(d, "README"), []byte("not a log"))
	write(t, filepath.Join(d, "app"), sparkLog(t, gen.SparkApp{TasksPerStage: 3}))
	write(t, filepath.Join(d, "broken.snappy"), []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x05abcde"))
	n := 0
	err := Fetch(context.Background(), d, func(*job.Job) error { n++; return nil })
	if n != 1 || !errors.Is(err, ErrCorrupt) {
		t.Errorf("mixed dir: %d jobs, err %v", n, err)
	}
	// An error from the callback stops the walk and comes back as is.
	stop := errors.New("stop")
	if err := Fetch(context.Background(), d, func(*job.Job) error { return stop }); err != stop {
		t.Errorf("callback error: %v", err)
	}
}

// An event log that names no application is ErrNoJob, read alone or in a
// directory, never a job with an empty id.
func TestSparkLogWithoutApplication(t *testing.T) {
	dir := t.TempDir()
	const (
		logStart = `{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}`
		env      = `{"Event":"SparkListenerEnvironmentUpdate","Spark Properties":{"spark.master":"yarn"}}`
		noID     = `{"Event":"SparkListenerApplicationStart","App Name":"a","Timestamp":1,"User":"u"}`
		end      = `{"Event":"SparkListenerApplicationEnd","Timestamp":2}`
	)
	for _, c := range []struct{ name, log, why string }{
		{"no start", logStart + "\n" + env + "\n" + end + "\n", "no SparkListenerApplicationStart event"},
		{"start without id", logStart + "\n" + noID + "\n" + end + "\n", "has no App ID"},
		{"start cut", logStart + "\n" + env + "\n" + `{"Event":"SparkListenerApplicationStart","App Name":"a","App I`, "truncated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"), "app"), []byte(c.log))
			for _, src := range []string{path, filepath.Dir(path)} {
				n := 0
				err := Fetch(context.Background(), src, func(*job.Job) error { n++; return nil })
				if n != 0 || !errors.Is(err, ErrNoJob) || !strings.Contains(err.Error(), c.why) {
					t.Errorf("%s: %d jobs, %v; want ErrNoJob saying %q", src, n, err, c.why)
				}
			}
		})
	}
}

func TestGeneratedHistoryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	spec := gen.MRJob{Maps: 40, Reduces: 5, Skew: 4, GCRatio: 0.1, ContainerMB: 4096, UsedMB: 1024}
	if _, err := gen.WriteMRJob(dir, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0002", Maps: 3, Failed: true}); err != nil {
		t.Fatal(err)
	}
	jobs := fetchAll(t, dir)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[0]
	if !j.Succeeded() || len(j.MapTasks) != 40 || len(j.ReduceTasks) != 5 || j.Conf["mapreduce.map.memory.mb"] != "4096" || len(j.Warnings) != 0 {
		t.Fatalf("job %s maps %d reduces %d conf %v warnings %q", j.Status, len(j.MapTasks), len(j.ReduceTasks), j.Conf, j.Warnings)
	}
	small, large := j.MapTasks[0].Counters.Get(job.HDFSBytesRead), j.MapTasks[39].Counters.Get(job.HDFSBytesRead)
	if large < 3*small {
		t.Errorf("skew not visible: %d vs %d", small, large)
	}
	m := j.MapTasks[0]
	if ratio := float64(m.Counters.Get(job.GCTimeMillis)) / float64(m.Counters.Get(job.CPUMilliseconds)); ratio < 0.09 || ratio > 0.11 {
		t.Errorf("gc ratio %f", ratio)
	}
	if p, _, ok := m.PeakMemory(); !ok || p < 900<<20 || p > 1130<<20 {
		t.Errorf("peak %d", p)
	}
	f := jobs[1]
	if f.Status != job.Failed || !strings.Contains(f.Diagnostics, "OutOfMemoryError") || f.MapTasks[0].Analyzed != "attempt_1700000000000_0002_m_000000_1" {
		t.Errorf("failed job %s %q %s", f.Status, f.Diagnostics, f.MapTasks[0].Analyzed)
	}
}

// Strict Avro-JSON wraps nullable unions ({"string": …}, {"<record class>":
// {…}}); both decoders unwrap them.
func TestAvroUnions(t *testing.T) {
	const hist = "Avro-Json\n{}\n" +
		`{"type":"JOB_SUBMITTED","event":{"x.JobSubmitted":{"jobid":"job_1_1","jobName":{"string":"w"},"userName":"u","submitTime":5,"jobQueueName":{"string":"q"}}}}` + "\n" +
		`{"type":"TASK_STARTED","event":{"x.TaskStarted":{"taskid":"task_1_1_m_000000","taskType":"MAP","startTime":6}}}` + "\n" +
		`{"type":"MAP_ATTEMPT_FINISHED","event":{"x.MapAttemptFinished":{"taskid":"task_1_1_m_000000","attemptId":"attempt_1_1_m_000000_0","taskType":"MAP","taskStatus":"SUCCEEDED","finishTime":9,"hostname":{"string":"h"},"counters":{"org.apache.hadoop.mapreduce.jobhistory.JhCounters":{"name":"C","groups":[{"name":"g","counts":[{"name":"HDFS_BYTES_READ","value":7}]}]}},"physMemKbytes":{"array":[1,2,3,4,5,6,7,8,9,10,11,12]}}}}` + "\n" +
		`{"type":"TASK_FINISHED","event":{"x.TaskFinished":{"taskid":"task_1_1_m_000000","taskType":"MAP","finishTime":9,"status":"SUCCEEDED","counters":null,"successfulAttemptId":{"string":"attempt_1_1_m_000000_0"}}}}` + "\n"
	for _, scan := range []bool{true, false} {
		j, err := parseJhistWith(strings.NewReader(hist), scan)
		if err != nil {
			t.Fatal(err)
		}
		m := j.MapTasks[0]
		a := m.AnalyzedAttempt()
		if j.Name != "w" || j.Queue != "q" || a == nil || a.Host != "h" || a.Counters.Get(job.HDFSBytesRead) != 7 || m.Counters != nil {
			t.Fatalf("scan=%v: job %+v task %+v", scan, j, m)
		}
		// No task counters: peak memory comes from the attempt's splits.
		if p, _, ok := m.PeakMemory(); !ok || p != 12*1024 {
			t.Errorf("scan=%v: peak %d %v", scan, p, ok)
		}
	}
}
