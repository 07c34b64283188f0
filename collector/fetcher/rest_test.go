package fetcher

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/testenv"
)

// routes serves files (or literal JSON bodies) by request path; anything
// else is a 404.
type routes map[string]string

func (rt routes) server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path
		if r.URL.RawQuery != "" {
			if _, ok := rt[key+"?"+r.URL.RawQuery]; ok {
				key += "?" + r.URL.RawQuery
			}
		}
		body, ok := rt[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(body, "@") {
			b, err := os.ReadFile(body[1:])
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Write(b)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The JobHistory server fetcher against the documentation's example
// responses; the reduce task, which the documentation does not show, is
// served in the same shapes.
func TestJobHistoryServerREST(t *testing.T) {
	data := testenv.Samples(t)
	doc := func(name string) string {
		return "@" + filepath.Join(data, "mrhistory/jhs-rest-doc", "jhs_history_mapreduce_"+name+".json")
	}
	const jobs = "/ws/v1/history/mapreduce/jobs"
	const id = "job_1326381300833_2_2"
	const j = jobs + "/" + id
	rt := routes{
		"/ws/v1/history/info": "@" + filepath.Join(data, "mrhistory/jhs-rest-doc/jhs_history_info.json"),
		jobs:                  `{"jobs":{"job":[{"id":"` + id + `","state":"SUCCEEDED"},{"id":"job_1326381300833_9_9","state":"RUNNING"}]}}`,
		j:                     doc("jobs_" + id),
		j + "/conf":           doc("jobs_" + id + "_conf"),
		j + "/counters":       doc("jobs_" + id + "_counters"),
		j + "/tasks":          doc("jobs_" + id + "_tasks"),
		j + "/tasks/task_1326381300833_2_2_m_0/counters": doc("jobs_" + id + "_tasks_task_1326381300833_2_2_m_0_counters"),
		j + "/tasks/task_1326381300833_2_2_m_0/attempts": doc("jobs_" + id + "_tasks_task_1326381300833_2_2_m_0_attempts"),
		j + "/tasks/task_1326381300833_2_2_r_0/counters": `{"jobTaskCounters":{"id":"task_1326381300833_2_2_r_0","taskCounterGroup":[{"counterGroupName":"org.apache.hadoop.mapreduce.TaskCounter","counter":[{"name":"REDUCE_SHUFFLE_BYTES","value":2235},{"name":"GC_TIME_MILLIS","value":31}]}]}}`,
		j + "/tasks/task_1326381300833_2_2_r_0/attempts": `{"taskAttempts":{"taskAttempt":[{"id":"attempt_1326381300833_2_2_r_0_0","type":"REDUCE","state":"SUCCEEDED","startTime":1326381450680,"finishTime":1326381582106,"elapsedShuffleTime":2592,"elapsedMergeTime":47,"shuffleFinishTime":1326381453272,"mergeFinishTime":1326381453319,"diagnostics":""}]}}`,
	}
	srv := rt.server(t)
	for _, src := range []string{srv.URL, srv.URL + jobs, srv.URL + j} {
		t.Run(strings.TrimPrefix(src, srv.URL), func(t *testing.T) {
			got := fetchOne(t, src)
			if got.ID != id || got.AppID != "application_1326381300833_2_2" || !got.Succeeded() || got.Name != "Sleep job" || got.User != "user1" {
				t.Errorf("job %+v", got)
			}
			if got.SubmitMs != 1326381446500 || got.Conf["mapreduce.cluster.temp.dir"] != "/home/hadoop/tmp" {
				t.Errorf("submit %d conf %v", got.SubmitMs, got.Conf)
			}
			if len(got.MapTasks) != 1 || len(got.ReduceTasks) != 1 {
				t.Fatalf("maps %d reduces %d", len(got.MapTasks), len(got.ReduceTasks))
			}
			if got.Counters.Get(job.FileBytesRead) != 2483 && !got.Counters.Has(job.FileBytesRead) {
				t.Errorf("job counters %v", got.Counters)
			}
			m := got.MapTasks[0]
			if m.Counters.Get(job.FileBytesRead) != 2363 || m.Analyzed != "attempt_1326381300833_2_2_m_0_0" {
				t.Errorf("map %+v", m)
			}
			if tv, ok := m.Times(); !ok || tv.TotalMs != 1326381453318-1326381450680 {
				t.Errorf("map times %+v", tv)
			}
			r := got.ReduceTasks[0]
			if tv, ok := r.Times(); !ok || tv.ShuffleMs != 2592 || tv.SortMs != 47 || r.Counters.Get(job.ReduceShuffleBytes) != 2235 {
				t.Errorf("reduce times %+v counters %v", tv, r.Counters)
			}
		})
	}
}

// The Spark History Server fetcher against the responses the history server
// test suite recorded for local-1422981780767.
func TestSparkHistoryServerREST(t *testing.T) {
	data := testenv.Samples(t)
	exp := func(name string) string {
		return "@" + filepath.Join(data, "sparkevents/shs-rest-expectations", name+"_expectation.json")
	}
	const app = "/api/v1/applications/local-1422981780767"
	rt := routes{
		"/api/v1/applications?status=completed": `[{"id":"local-1422981780767","name":"Spark shell","attempts":[]}]`,
		"/api/v1/applications":                  `[]`,
		app:                                     exp("one_app_json"),
		app + "/jobs":                           exp("job_list_json"),
		app + "/stages":                         exp("stage_list_json"),
		app + "/executors":                      exp("executor_list_json"),
		app + "/environment":                    exp("app_environment"),
	}
	srv := rt.server(t)
	for _, src := range []string{srv.URL, srv.URL + "/api/v1/applications", srv.URL + app} {
		t.Run(strings.TrimPrefix(src, srv.URL), func(t *testing.T) {
			j := fetchOne(t, src)
			if j.ID != "local-1422981780767" || j.Type != job.Spark || j.User != "irashid" || !j.Succeeded() {
				t.Errorf("app %s %s %s %s", j.ID, j.Type, j.User, j.Status)
			}
			a := j.Spark.LastAttempt()
			if a == nil || a.DurationMs() != 9011 || a.StartMs != 1422981779720 {
				t.Errorf("attempt %+v", a)
			}
			sp := j.Spark
			if len(sp.Jobs) != 3 || len(sp.Stages) != 4 || len(sp.Executors) != 1 {
				t.Fatalf("jobs %d stages %d executors %d", len(sp.Jobs), len(sp.Stages), len(sp.Executors))
			}
			if sp.Jobs[1].Status != job.Failed || sp.Jobs[1].NumCompletedTasks != 15 || sp.Jobs[1].NumFailedTasks != 1 {
				t.Errorf("job 1 %+v", sp.Jobs[1])
			}
			st := sp.Stages[1]
			if st.ID != 2 || st.Status != job.Failed || st.NumCompleteTasks != 7 || st.NumFailedTasks != 1 || st.SubmissionMs == 0 {
				t.Errorf("stage 2 %+v", st)
			}
			e := sp.Executors[0]
			if e.ID != job.DriverID || e.TotalInputBytes != 28000288 || e.TotalShuffleWriteBytes != 13180 || e.CompletedTasks != 31 {
				t.Errorf("driver %+v", e)
			}
			if j.Conf["spark.app.id"] == "" || sp.SystemProperties["java.vendor"] == "" {
				t.Errorf("environment not read: %v %v", j.Conf, sp.SystemProperties)
			}
		})
	}
}

func TestRESTErrors(t *testing.T) {
	srv := routes{"/api/v1/applications/x": `{"id":"x","attempts":[]}`}.server(t)
	err := Fetch(context.Background(), srv.URL+"/api/v1/applications/missing", func(*job.Job) error { return nil })
	if !errors.Is(err, ErrHTTP) {
		t.Errorf("missing app: %v, want ErrHTTP", err)
	}
	err = Fetch(context.Background(), srv.URL+"/nothing", func(*job.Job) error { return nil })
	if !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown server: %v, want ErrUnknownFormat", err)
	}
}

// A history server that cannot be reached is ErrUnreachable with the
// network's reason, whether the URL names a kind of server or is probed;
// never ErrUnknownFormat.
func TestUnreachableServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	closed := srv.URL
	srv.Close()
	for _, u := range []string{"http://127.0.0.1:1/", closed, closed + "/api/v1/applications", closed + "/ws/v1/history/mapreduce/jobs"} {
		err := Fetch(context.Background(), u, func(*job.Job) error { return nil })
		if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v, want ErrUnreachable saying the connection was refused", u, err)
		}
	}
	// A server that answers, but as neither kind, is still an unknown one.
	err := Fetch(context.Background(), routes{}.server(t).URL, func(*job.Job) error { return nil })
	if !errors.Is(err, ErrUnknownFormat) || errors.Is(err, ErrUnreachable) {
		t.Errorf("a server of another kind: %v, want ErrUnknownFormat", err)
	}
}

// Executors come driver first, then by number, whatever order the server
// lists them in: the order a model from the event log has.
func TestSparkHistoryServerExecutorOrder(t *testing.T) {
	const app = "/api/v1/applications/application_1_1"
	srv := routes{
		app:                   `{"id":"application_1_1","attempts":[{"startTime":"2026-11-27T08:00:00.000GMT","completed":true}]}`,
		app + "/jobs":         `[]`,
		app + "/stages":       `[]`,
		app + "/allexecutors": `[{"id":"10"},{"id":"2"},{"id":"driver"},{"id":"1"}]`,
		app + "/environment":  `{"sparkProperties":[],"systemProperties":[]}`,
	}.server(t)
	var ids []string
	for _, e := range fetchOne(t, srv.URL+app).Spark.Executors {
		ids = append(ids, e.ID)
	}
	if got := strings.Join(ids, " "); got != "driver 1 2 10" {
		t.Errorf("executors %s, want driver 1 2 10", got)
	}
}

// Skip keeps known jobs from being fetched in detail.
func TestRESTSkip(t *testing.T) {
	var hits []string
	rt := routes{
		"/ws/v1/history/mapreduce/jobs": `{"jobs":{"job":[{"id":"job_1_1","state":"SUCCEEDED"}]}}`,
		"/api/v1/applications":          `[{"id":"app-1","attempts":[]}]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.URL.Path)
		if body, ok := rt[r.URL.Path]; ok {
			w.Write([]byte(body))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	var asked []string
	o := Options{Skip: func(_ context.Context, id string) (bool, error) { asked = append(asked, id); return true, nil }}
	for _, src := range []string{srv.URL + "/ws/v1/history/mapreduce/jobs", srv.URL + "/api/v1/applications"} {
		if err := o.Fetch(context.Background(), src, func(j *job.Job) error {
			t.Errorf("skipped job %s delivered", j.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(asked, " ") != "job_1_1 app-1" || len(hits) != 2 {
		t.Errorf("asked %v, requests %v", asked, hits)
	}
}

// A failed job's diagnostics become the stack trace of the attempt of the
// task the diagnostics name.
func TestJobHistoryServerFailedJob(t *testing.T) {
	const j = "/ws/v1/history/mapreduce/jobs/job_1_7"
	srv := routes{
		j:                                       `{"job":{"id":"job_1_7","state":"FAILED","diagnostics":"Task failed task_1_7_m_000001\nJob failed as tasks failed. failedMaps:1 failedReduces:0"}}`,
		j + "/conf":                             `{"conf":{"property":[]}}`,
		j + "/counters":                         `{"jobCounters":{"counterGroup":[]}}`,
		j + "/tasks":                            `{"tasks":{"task":[{"id":"task_1_7_m_000000","type":"MAP","state":"SUCCEEDED","successfulAttempt":"attempt_1_7_m_000000_0"},{"id":"task_1_7_m_000001","type":"MAP","state":"FAILED"}]}}`,
		j + "/tasks/task_1_7_m_000000/attempts": `{"taskAttempts":{"taskAttempt":[{"id":"attempt_1_7_m_000000_0","state":"SUCCEEDED","startTime":1,"finishTime":5}]}}`,
		j + "/tasks/task_1_7_m_000001/attempts": `{"taskAttempts":{"taskAttempt":[{"id":"attempt_1_7_m_000001_1","state":"FAILED","startTime":9,"finishTime":20,"diagnostics":"second"},{"id":"attempt_1_7_m_000001_0","state":"FAILED","startTime":1,"finishTime":8,"diagnostics":"java.lang.OutOfMemoryError: Java heap space"}]}}`,
	}.server(t)
	got := fetchOne(t, srv.URL+j)
	if got.Status != job.Failed || got.Diagnostics != "java.lang.OutOfMemoryError: Java heap space" {
		t.Errorf("status %s diagnostics %q", got.Status, got.Diagnostics)
	}
	if f := got.MapTasks[1]; f.Analyzed != "attempt_1_7_m_000001_0" || f.Counters != nil {
		t.Errorf("failed task %+v", f)
	}
}
