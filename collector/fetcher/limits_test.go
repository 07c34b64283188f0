package fetcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
)

// deepBrackets is the shape that crashed the jhist scanner: millions of
// nested arrays (or objects) in one line, well under the line limit.
const deepBrackets = 5_000_000

func nested(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// deepJhistLines are event lines nested far past maxNesting where each of
// the scanner's recursive paths would follow them: an unknown key's value,
// an Avro string union, a counters record, and an event record itself. The
// counters shape is 53 bytes a level, so it gets a fifth of n to stay under
// the line bound.
func deepJhistLines(n int) map[string]string {
	objs := strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	return map[string]string{
		"arrays":   `{"type":"TASK_STARTED","event":{"x":{"taskid":"task_1_1_m_000009","other":` + nested("[", "]", n) + `}}}`,
		"objects":  `{"type":"TASK_STARTED","event":{"x":{"taskid":"task_1_1_m_000009","other":` + objs + `}}}`,
		"union":    `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1_2","jobName":` + strings.Repeat(`{"string":`, n) + `"n"` + strings.Repeat("}", n) + `}}}`,
		"counters": `{"type":"TASK_FINISHED","event":{"x":{"taskid":"task_1_1_m_000009","counters":` + strings.Repeat(`{"org.apache.hadoop.mapreduce.jobhistory.JhCounters":`, n/5) + "null" + strings.Repeat("}", n/5) + `}}}`,
		"bare":     nested("[", "]", n),
	}
}

const jhistHead = "Avro-Json\n{}\n"

const goodSubmit = `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1_1","jobName":"n","userName":"u"}}}`

// A line of millions of nested brackets is a malformed line with a clear
// warning, on the parallel, the sequential and the encoding/json path; the
// job around it is read. Before the depth limit this overflowed the
// goroutine stack: a fatal error that no recover catches.
func TestJhistDeepNesting(t *testing.T) {
	for name, line := range deepJhistLines(deepBrackets) {
		in := jhistHead + goodSubmit + "\n" + line + "\n" + `{"type":"JOB_FINISHED","event":{"x":{"finishTime":5}}}` + "\n"
		for _, path := range []struct {
			name  string
			procs int
			scan  bool
		}{{"parallel", 2, true}, {"sequential", 1, true}, {"encoding-json", 2, false}} {
			t.Run(name+"/"+path.name, func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(path.procs))
				j, err := parseJhistWith(strings.NewReader(in), path.scan)
				if err != nil {
					t.Fatal(err)
				}
				if j.ID != "job_1_1" || j.FinishMs != 5 {
					t.Errorf("job %q finish %d: the lines around the deep one were lost", j.ID, j.FinishMs)
				}
				if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "skipped 1 malformed line(s), first at line 4: input nested too deeply: more than 128 levels") {
					t.Errorf("warnings %q", j.Warnings)
				}
			})
		}
	}
}

// A line over the line bound costs that line only, not the rest of the file.
func TestJhistLongLineSkipped(t *testing.T) {
	long := `{"type":"X","event":{"x":{"jobName":"` + strings.Repeat("a", maxLineBytes) + `"}}}`
	in := jhistHead + goodSubmit + "\n" + long + "\n" + `{"type":"JOB_FINISHED","event":{"x":{"finishTime":5}}}` + "\n"
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			j, err := parseJhist(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if j.FinishMs != 5 || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "skipped 1 malformed line(s), first at line 4: input too large: line longer than 64 MiB") {
				t.Errorf("GOMAXPROCS %d: finish %d, warnings %q", procs, j.FinishMs, j.Warnings)
			}
		}()
	}
}

// A history whose only event is the deep line cannot be read: the error
// says why, and Fetch returns it for that file while reading the others.
func TestJhistDeepNestingOnlyLine(t *testing.T) {
	dir := t.TempDir()
	bad := write(t, filepath.Join(dir, "job_1_9-bad.jhist"), []byte(jhistHead+deepJhistLines(deepBrackets)["arrays"]+"\n"))
	write(t, filepath.Join(dir, "job_1_1-good.jhist"), []byte(jhistHead+goodSubmit+"\n"))
	err := Fetch(context.Background(), bad, func(j *job.Job) error { t.Fatalf("job %s from the bad file", j.ID); return nil })
	if !errors.Is(err, ErrNoJob) || !strings.Contains(err.Error(), "nested too deeply") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v", err)
	}
	var ids []string
	err = Fetch(context.Background(), dir, func(j *job.Job) error { ids = append(ids, j.ID); return nil })
	if len(ids) != 1 || ids[0] != "job_1_1" || err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("directory: jobs %v, err %v", ids, err)
	}
}

// checkNesting and nestingReader agree with each other at the boundary and
// ignore brackets inside strings, escaped quotes included.
func TestNestingBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		deep bool
	}{
		{nested("[", "]", maxNesting), false},
		{nested("[", "]", maxNesting+1), true},
		{strings.Repeat(`{"k":`, maxNesting) + "1" + strings.Repeat("}", maxNesting), false},
		{strings.Repeat(`{"k":`, maxNesting+1) + "1" + strings.Repeat("}", maxNesting+1), true},
		{`["` + strings.Repeat("[", 10*maxNesting) + `"]`, false},
		{`["\"` + strings.Repeat("[", 10*maxNesting) + `"]`, false},
		{`["\\",` + nested("[", "]", maxNesting-1) + `]`, false},
		{`["\\",` + nested("[", "]", maxNesting) + `]`, true},
		{strings.Repeat("[", deepBrackets), true},
	} {
		err := checkNesting([]byte(tc.in))
		if (err != nil) != tc.deep || (err != nil && !errors.Is(err, ErrTooDeep)) {
			t.Errorf("checkNesting(%.40q…) = %v, want deep %v", tc.in, err, tc.deep)
		}
		// The reader sees the same stream in small reads.
		_, rerr := io.Copy(io.Discard, &nestingReader{r: &smallReads{r: strings.NewReader(tc.in), n: 7}})
		if (rerr != nil) != tc.deep || (rerr != nil && !errors.Is(rerr, ErrTooDeep)) {
			t.Errorf("nestingReader(%.40q…) = %v, want deep %v", tc.in, rerr, tc.deep)
		}
	}
}

// smallReads returns at most n bytes per Read.
type smallReads struct {
	r io.Reader
	n int
}

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

// Every other parser stops at the same depth with ErrTooDeep: an event log
// line (skipped like any malformed line), a rumen job (the trace is not
// readable), a job conf (a warning on its job), a REST response.
func TestNestingEveryParser(t *testing.T) {
	deep := nested("[", "]", deepBrackets)
	t.Run("spark", func(t *testing.T) {
		log := `{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1}` + "\n" +
			`{"Event":"SparkListenerTaskEnd","Stage ID":0,"Task Info":{"Task ID":1},"Accumulables":` + deep + "}\n" +
			`{"Event":"SparkListenerApplicationEnd","Timestamp":9}` + "\n"
		app, warns, err := parseSparkLog(strings.NewReader(log))
		if err != nil || app.ID != "app-1" || app.Attempts[0].EndMs != 9 {
			t.Fatalf("app %+v, err %v", app, err)
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "line 2: input nested too deeply") {
			t.Errorf("warnings %q", warns)
		}
	})
	t.Run("rumen", func(t *testing.T) {
		for _, in := range []string{
			`{"jobID":"job_1_1","mapTasks":[{"taskID":"t","attempts":` + deep + `}]}`,
			`{"jobID":"job_1_1","jobProperties":{"a":` + deep + `}}`,
		} {
			err := parseRumen(strings.NewReader(in), "x", func(j *job.Job) error { t.Errorf("job %s", j.ID); return nil })
			if !errors.Is(err, ErrTooDeep) {
				t.Errorf("%.60s…: err %v", in, err)
			}
		}
		// After a good job, a deep one is damage at the tail of the trace.
		var got []*job.Job
		err := parseRumen(strings.NewReader(`{"jobID":"job_1_1"} {"jobID":"job_1_2","x":`+deep+`}`), "x", func(j *job.Job) error { got = append(got, j); return nil })
		if err != nil || len(got) != 1 || len(got[0].Warnings) != 1 || !strings.Contains(got[0].Warnings[0], "nested too deeply") {
			t.Errorf("err %v, jobs %d", err, len(got))
		}
	})
	t.Run("conf", func(t *testing.T) {
		conf, err := parseConfXML(strings.NewReader(`<configuration><property><name>a</name><value>1</value></property>` + nested("<x>", "</x>", 1_000_000) + `</configuration>`))
		if !errors.Is(err, ErrTooDeep) || conf["a"] != "1" {
			t.Errorf("conf %v, err %v", conf, err)
		}
	})
	t.Run("rest", func(t *testing.T) {
		srv := routes{"/api/v1/applications/x": `{"id":"x","attempts":` + deep + `}`}.server(t)
		err := Fetch(context.Background(), srv.URL+"/api/v1/applications/x", func(*job.Job) error { return nil })
		if !errors.Is(err, ErrTooDeep) {
			t.Errorf("err %v", err)
		}
	})
}

// A job conf and a REST response have size bounds with clear errors.
func TestConfAndResponseSize(t *testing.T) {
	big := strings.Repeat("v", maxConfBytes)
	conf, err := parseConfXML(strings.NewReader(`<configuration><property><name>a</name><value>1</value></property><property><name>b</name><value>` + big + `</value></property></configuration>`))
	if !errors.Is(err, ErrTooLarge) || conf["a"] != "1" || conf["b"] != "" {
		t.Errorf("conf keys %d, err %v", len(conf), err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"id":"x","name":"`))
		chunk := []byte(strings.Repeat("n", 1<<20))
		for range maxResponseBytes>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	err = Fetch(context.Background(), srv.URL+"/api/v1/applications/x", func(*job.Job) error { return nil })
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "response larger than 256 MiB") {
		t.Errorf("err %v", err)
	}
}

// Past Options.MaxJobBytes a job is refused with ErrTooLarge whatever its
// format, and nothing of it reaches the caller.
func TestJobBudget(t *testing.T) {
	dir := t.TempDir()
	mr, err := gen.WriteMRJob(filepath.Join(dir, "mr"), gen.MRJob{Maps: 2000, Reduces: 10})
	if err != nil {
		t.Fatal(err)
	}
	spark := write(t, filepath.Join(dir, "spark", "application_1_1"), sparkLog(t, gen.SparkApp{AppID: "application_1_1", Stages: 4, TasksPerStage: 2000}))
	var tasks strings.Builder
	for i := range 4000 {
		if i > 0 {
			tasks.WriteByte(',')
		}
		fmt.Fprintf(&tasks, `{"taskID":"task_1_1_m_%06d","taskStatus":"SUCCESS","attempts":[{"attemptID":"attempt_1_1_m_%06d_0","result":"SUCCESS","hdfsBytesRead":1,"fileBytesRead":2}]}`, i, i)
	}
	rumen := write(t, filepath.Join(dir, "rumen", "trace.json"), []byte(`{"jobID":"job_1_1","mapTasks":[`+tasks.String()+`]}`))
	const jobs = "/ws/v1/history/mapreduce/jobs/job_1_7"
	rt := routes{jobs: `{"job":{"id":"job_1_7","state":"SUCCEEDED"}}`, jobs + "/conf": `{"conf":{"property":[]}}`, jobs + "/counters": `{}`}
	var list, counters []string
	for i := range 40 {
		counters = append(counters, fmt.Sprintf(`{"name":"C%d","value":1}`, i))
	}
	for i := range 400 {
		id := fmt.Sprintf("task_1_7_m_%06d", i)
		list = append(list, `{"id":"`+id+`","type":"MAP","state":"SUCCEEDED"}`)
		rt[jobs+"/tasks/"+id+"/counters"] = `{"jobTaskCounters":{"taskCounterGroup":[{"counterGroupName":"g","counter":[` + strings.Join(counters, ",") + `]}]}}`
	}
	rt[jobs+"/tasks"] = `{"tasks":{"task":[` + strings.Join(list, ",") + `]}}`
	srv := rt.server(t)
	for _, src := range []string{mr, spark, rumen, srv.URL + jobs} {
		// Each input is read in full with the default budget.
		if err := Fetch(context.Background(), src, func(*job.Job) error { return nil }); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		err := Options{MaxJobBytes: 256 << 10}.Fetch(context.Background(), src, func(j *job.Job) error {
			t.Errorf("%s: job %s over the budget delivered", src, j.ID)
			return nil
		})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "passed the 256 KiB bound") {
			t.Errorf("%s: err %v", src, err)
		}
	}
}

// The budget's estimate follows the heap the model really takes, so the
// bound stated in MiB holds: within 25 % on a generated job history and
// event log.
func TestBudgetEstimate(t *testing.T) {
	var hist, events bytes.Buffer
	if err := gen.WriteJhist(&hist, gen.MRJob{Maps: 9000, Reduces: 1000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteSparkLog(&events, gen.SparkApp{Executors: 20, Stages: 5, TasksPerStage: 10000}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		parse func(*budget) (any, error)
	}{
		{"jhist", func(b *budget) (any, error) { return parseJhistBudget(bytes.NewReader(hist.Bytes()), true, b) }},
		{"spark", func(b *budget) (any, error) {
			app, _, err := parseSparkLogBudget(bytes.NewReader(events.Bytes()), b)
			return app, err
		}},
	} {
		b := newBudget(0)
		before := liveBytes()
		model, err := tc.parse(b)
		after := liveBytes()
		runtime.KeepAlive(model)
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(b.used) / float64(after-before)
		t.Logf("%s: estimated %.1f MiB, heap %.1f MiB (ratio %.2f)", tc.name, float64(b.used)/(1<<20), float64(after-before)/(1<<20), ratio)
		if ratio < 0.75 || ratio > 1.33 {
			t.Errorf("%s: estimate %d bytes for %d bytes of model", tc.name, b.used, after-before)
		}
	}
	runtime.KeepAlive(hist.Bytes())
	runtime.KeepAlive(events.Bytes())
}

// liveBytes is the heap reachable after a collection.
func liveBytes() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
