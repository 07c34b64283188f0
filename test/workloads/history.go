package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// HistoryServer is a Spark History Server started with the installed
// distribution's sbin/start-history-server.sh (in the foreground:
// SPARK_NO_DAEMONIZE), on a loopback port, over one event-log directory.
type HistoryServer struct {
	URL  string // http://127.0.0.1:PORT
	proc *testenv.Proc
}

// StartHistoryServer starts the history server over logDir, rescanning it
// every second, and waits until its REST API answers.
func StartHistoryServer(e Env, logDir string) (*HistoryServer, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	return StartHistoryServerAt(e, logDir, port)
}

// StartHistoryServerAt is StartHistoryServer on a given port (a collector
// may have been told the URL before the server was up).
func StartHistoryServerAt(e Env, logDir string, port int) (*HistoryServer, error) {
	dir := filepath.Join(e.Work, fmt.Sprintf("shs-%d", port))
	for _, d := range []string{filepath.Join(dir, "logs"), filepath.Join(dir, "pid")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create history server dir: %w", err)
		}
	}
	opts := strings.Join([]string{
		"-Dspark.history.fs.logDirectory=file://" + logDir,
		fmt.Sprintf("-Dspark.history.ui.port=%d", port),
		"-Dspark.history.fs.update.interval=1s",
		"-Dspark.history.fs.cleaner.enabled=false",
	}, " ")
	env := []string{"SPARK_HOME=" + e.SparkHome, "SPARK_NO_DAEMONIZE=true", "SPARK_LOCAL_IP=127.0.0.1",
		"SPARK_LOG_DIR=" + filepath.Join(dir, "logs"), "SPARK_PID_DIR=" + filepath.Join(dir, "pid"),
		"SPARK_HISTORY_OPTS=" + opts}
	p, err := testenv.StartProc("spark-history-server", env, filepath.Join(e.SparkHome, "sbin", "start-history-server.sh"))
	if err != nil {
		return nil, err
	}
	h := &HistoryServer{URL: fmt.Sprintf("http://127.0.0.1:%d", port), proc: p}
	if err := testenv.WaitFor("the history server's REST API", 90*time.Second, p, func() bool {
		var apps []json.RawMessage
		return getJSON(h.URL+"/api/v1/applications", &apps) == nil
	}); err != nil {
		p.Stop()
		return nil, err
	}
	return h, nil
}

// Stop ends the history server.
func (h *HistoryServer) Stop() {
	if h != nil {
		h.proc.Stop()
	}
}

// Output is the server's last log lines.
func (h *HistoryServer) Output() string { return h.proc.Output(4000) }

// StopAtCleanup stops the server when t ends, logging its last lines first
// if t failed.
func (h *HistoryServer) StopAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("--- history server:\n" + h.Output())
		}
		h.Stop()
	})
}

// WaitApps waits until the server lists every id as completed.
func (h *HistoryServer) WaitApps(ids []string, timeout time.Duration) error {
	return testenv.WaitFor("the history server to list "+strings.Join(ids, ", "), timeout, h.proc, func() bool {
		var apps []struct {
			ID       string `json:"id"`
			Attempts []struct {
				Completed bool `json:"completed"`
			} `json:"attempts"`
		}
		if getJSON(h.URL+"/api/v1/applications?status=completed", &apps) != nil {
			return false
		}
		done := map[string]bool{}
		for _, a := range apps {
			done[a.ID] = len(a.Attempts) > 0 && a.Attempts[len(a.Attempts)-1].Completed
		}
		for _, id := range ids {
			if !done[id] {
				return false
			}
		}
		return true
	})
}

func getJSON(url string, v any) error {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Finding is one difference between two reads of one application: the
// field (a path into job.Job, or a heuristic's result) and both values.
type Finding struct {
	App   string `json:"app"`
	Field string `json:"field"`
	Live  string `json:"live"`  // from the live history server
	Other string `json:"other"` // from the event log, or the recorded responses
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s: live %s, other %s", f.App, f.Field, f.Live, f.Other)
}

// fetchOne reads the one application source names with the collector's
// fetcher.
func fetchOne(ctx context.Context, source string) (*job.Job, error) {
	var got []*job.Job
	if err := fetcher.Fetch(ctx, source, func(j *job.Job) error { got = append(got, j); return nil }); err != nil {
		return nil, err
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("fetch %s: %d applications, want 1", source, len(got))
	}
	return got[0], nil
}

// restOnly are the parts of the model a history server's REST API does
// not carry, so the fetcher cannot fill them from it: per-task details
// (the fetcher asks for no task lists; no heuristic reads them), and
// what names the source. Every other field must be equal.
var restOnly = []string{"Source", "Warnings", "Spark.Stages[*].Tasks"}

// CompareWithEventLog reads application id from the live history server's
// REST API and from its event log file, both with the collector's fetcher,
// and returns every difference between the two models and between the
// Dr. Elephant heuristics' results over them.
func CompareWithEventLog(ctx context.Context, h *HistoryServer, id, eventLog string) ([]Finding, error) {
	live, err := fetchOne(ctx, h.URL+"/api/v1/applications/"+id)
	if err != nil {
		return nil, fmt.Errorf("fetch %s from the history server: %w", id, err)
	}
	file, err := fetchOne(ctx, eventLog)
	if err != nil {
		return nil, fmt.Errorf("fetch %s from its event log: %w", id, err)
	}
	return compareJobs(id, live, file, restOnly)
}

// RecordedApp is the application Spark's HistoryServerSuite recorded the
// REST responses of (in the samples: sparkevents/shs-rest-expectations,
// its event log in sparkevents/apache-spark).
const RecordedApp = "local-1422981780767"

// recordedEnvIgnored: the recorded environment response belongs to
// another application (app-20161116163331-0000; HistoryServerSuite records
// none for this one), so Spark and system properties cannot agree.
var recordedEnvIgnored = []string{"Conf", "Spark.SystemProperties"}

// CompareWithRecorded serves the recorded REST responses of RecordedApp
// (the ones collector/fetcher's tests use) the way a history server would,
// reads RecordedApp from them and from the live server with the fetcher,
// and returns the differences; samples is the sample-data directory. The
// live server must have RecordedApp's event log in its directory.
func CompareWithRecorded(ctx context.Context, h *HistoryServer, samples string) ([]Finding, error) {
	exp := filepath.Join(samples, "sparkevents", "shs-rest-expectations")
	app := "/api/v1/applications/" + RecordedApp
	files := map[string]string{
		app:                  "one_app_json_expectation.json",
		app + "/jobs":        "job_list_json_expectation.json",
		app + "/stages":      "stage_list_json_expectation.json",
		app + "/executors":   "executor_list_json_expectation.json",
		app + "/environment": "app_environment_expectation.json",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join(exp, name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	defer srv.Close()
	recorded, err := fetchOne(ctx, srv.URL+app)
	if err != nil {
		return nil, fmt.Errorf("fetch the recorded responses: %w", err)
	}
	live, err := fetchOne(ctx, h.URL+app)
	if err != nil {
		return nil, fmt.Errorf("fetch %s from the history server: %w", RecordedApp, err)
	}
	return compareJobs(RecordedApp, live, recorded, append([]string{"Source", "Warnings"}, recordedEnvIgnored...))
}

// compareJobs diffs two models of one application field by field (paths
// in ignore, with [*] for any index, are skipped) and the heuristics'
// results over them (severity, score and every detail's value).
func compareJobs(id string, live, other *job.Job, ignore []string) ([]Finding, error) {
	var out []Finding
	d := differ{ignore: ignore, add: func(path, a, b string) {
		out = append(out, Finding{App: id, Field: path, Live: a, Other: b})
	}}
	d.walk("", reflect.ValueOf(*live), reflect.ValueOf(*other))
	eng, err := heuristics.NewEngine(nil)
	if err != nil {
		return nil, err
	}
	lr, or := eng.Analyze(live), eng.Analyze(other)
	if lr.GetSeverity() != or.GetSeverity() {
		out = append(out, Finding{App: id, Field: "severity", Live: lr.GetSeverity().String(), Other: or.GetSeverity().String()})
	}
	results := map[string][2]string{}
	for i, rs := range [][]string{render(lr.GetHeuristics()), render(or.GetHeuristics())} {
		for _, line := range rs {
			name, v, _ := strings.Cut(line, "\x00")
			r := results[name]
			r[i] = v
			results[name] = r
		}
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if r := results[n]; r[0] != r[1] {
			out = append(out, Finding{App: id, Field: "heuristic " + n, Live: r[0], Other: r[1]})
		}
	}
	return out, nil
}

// render lists each heuristic's severity and score, and each of its
// details, as "name\x00value" lines.
func render(hs []*stratav1.HeuristicResult) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.GetName()+"\x00"+fmt.Sprintf("%s score %d", h.GetSeverity(), h.GetScore()))
		for _, d := range h.GetDetails() {
			out = append(out, h.GetName()+" / "+d.GetName()+"\x00"+d.GetValue())
		}
	}
	return out
}

// differ walks two values of one type and reports where they differ.
type differ struct {
	ignore []string
	add    func(path, a, b string)
}

// ignored reports whether path matches an ignore pattern ([*] = any index).
func (d differ) ignored(path string) bool {
	for _, p := range d.ignore {
		if matchPath(p, path) {
			return true
		}
	}
	return false
}

func matchPath(pattern, path string) bool {
	for {
		i := strings.Index(pattern, "[*]")
		if i < 0 {
			return pattern == path
		}
		if !strings.HasPrefix(path, pattern[:i+1]) {
			return false
		}
		j := strings.Index(path[i:], "]")
		if j < 0 {
			return false
		}
		pattern, path = pattern[i+3:], path[i+j+1:]
	}
}

func (d differ) walk(path string, a, b reflect.Value) {
	if d.ignored(path) {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				d.add(path, nilness(a), nilness(b))
			}
			return
		}
		d.walk(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			name := a.Type().Field(i).Name
			d.walk(strings.TrimPrefix(path+"."+name, "."), a.Field(i), b.Field(i))
		}
	case reflect.Slice:
		if a.Len() != b.Len() {
			d.add(path+".len", fmt.Sprint(a.Len()), fmt.Sprint(b.Len()))
		}
		for i := 0; i < min(a.Len(), b.Len()); i++ {
			d.walk(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range append(a.MapKeys(), b.MapKeys()...) {
			keys[fmt.Sprint(k.Interface())] = k
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			av, bv := a.MapIndex(keys[k]), b.MapIndex(keys[k])
			p := fmt.Sprintf("%s[%s]", path, k)
			switch {
			case !av.IsValid() || !bv.IsValid():
				if !d.ignored(p) {
					d.add(p, present(av), present(bv))
				}
			default:
				d.walk(p, av, bv)
			}
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			d.add(path, fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		}
	}
}

func nilness(v reflect.Value) string {
	if v.IsNil() {
		return "absent"
	}
	return fmt.Sprintf("%+v", v.Elem().Interface())
}

func present(v reflect.Value) string {
	if !v.IsValid() {
		return "absent"
	}
	return fmt.Sprint(v.Interface())
}

// EventLogOf finds the event log Spark wrote for app in dir: a file
// (Spark 3.5's default) or a rolling log directory eventlog_v2_<app>
// (Spark 4's).
func EventLogOf(dir, app string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, app+"*"))
	rolling, _ := filepath.Glob(filepath.Join(dir, "eventlog_v2_"+app))
	matches = append(matches, rolling...)
	if len(matches) != 1 {
		return "", fmt.Errorf("find the event log of %s in %s: %d candidates %v", app, dir, len(matches), matches)
	}
	return matches[0], nil
}

// CopyFile copies a file (a sample event log into a history server's
// directory).
func CopyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
