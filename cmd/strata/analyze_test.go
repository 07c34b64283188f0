package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/testenv"
)

// writeTrace writes a small rumen trace: n mappers of one minute reading
// 1 MiB each, plus one 2-minute reducer.
func writeTrace(t *testing.T, dir string, n int) string {
	t.Helper()
	var maps []string
	for i := range n {
		maps = append(maps, fmt.Sprintf(`{"taskID":"task_1_0001_m_%06d","taskType":"MAP","taskStatus":"SUCCESS",
 "startTime":1000,"finishTime":61000,"attempts":[{"attemptID":"attempt_1_0001_m_%06d_0","result":"SUCCESS",
 "startTime":1000,"finishTime":61000,"hdfsBytesRead":1048576,"spilledRecords":10,"mapOutputRecords":10}]}`, i, i))
	}
	doc := `{"jobID":"job_1_0001","user":"alice","jobName":"synthetic","queue":"default","submitTime":500,
 "launchTime":900,"finishTime":200000,"outcome":"SUCCESS","jobMapMB":1024,"jobReduceMB":1024,
 "mapTasks":[` + strings.Join(maps, ",") + `],
 "reduceTasks":[{"taskID":"task_1_0001_r_000000","taskType":"REDUCE","taskStatus":"SUCCESS","startTime":61000,
 "finishTime":181000,"attempts":[{"attemptID":"attempt_1_0001_r_000000_0","result":"SUCCESS","startTime":61000,
 "shuffleFinished":71000,"sortFinished":81000,"finishTime":181000,"reduceShuffleBytes":3145728}]}]}`
	path := filepath.Join(dir, "trace.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func analyze(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"analyze"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestAnalyzeJSON(t *testing.T) {
	path := writeTrace(t, t.TempDir(), 3)
	out, _, err := analyze(t, "-q", "-o", "json", path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 per job:\n%s", len(lines), out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"job_id", "type", "metrics", "heuristics", "severity", "score"} {
		if _, ok := got[k]; !ok {
			t.Errorf("missing key %q in %s", k, lines[0])
		}
	}
	if got["job_id"] != "job_1_0001" || got["type"] != "mapreduce" || got["severity"] != "none" {
		t.Errorf("identity: %v %v %v", got["job_id"], got["type"], got["severity"])
	}
	m := got["metrics"].(map[string]any)
	for _, k := range []string{"used_gb_hours", "wasted_gb_hours", "runtime_ms", "wait_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics lack %q: %v", k, m)
		}
	}
	if m["runtime_ms"].(float64) != 199500 {
		t.Errorf("runtime_ms = %v, want 199500", m["runtime_ms"])
	}
	hs := got["heuristics"].([]any)
	if len(hs) != 11 {
		t.Fatalf("%d heuristics, want 11", len(hs))
	}
	h0 := hs[0].(map[string]any)
	for _, k := range []string{"name", "severity", "score", "details"} {
		if _, ok := h0[k]; !ok {
			t.Errorf("heuristic lacks %q: %v", k, h0)
		}
	}
}

// A detail's long text is in the JSON: a failed job's stack trace is the
// details of its "Error: Stacktrace" line, as in Dr. Elephant.
func TestAnalyzeJSONLongText(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0003", Maps: 3, Failed: true}); err != nil {
		t.Fatal(err)
	}
	out, _, err := analyze(t, "-q", "-o", "json", dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := jsonLines[jsonform.Job](t, out)
	if len(rows) != 1 || len(rows[0].Heuristics) != 1 || rows[0].Heuristics[0].Name != "Exception" {
		t.Fatalf("failed job: %+v", rows)
	}
	d := rows[0].Heuristics[0].Details
	if len(d) != 1 || d[0].Name != "Error" || d[0].Value != "Stacktrace" || !strings.Contains(d[0].Details, "java.lang.OutOfMemoryError") {
		t.Fatalf("Exception details %+v, want Error: Stacktrace with the diagnostics as details", d)
	}
}

func TestAnalyzeTableAndFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, 2)
	out, _, err := analyze(t, path, "-q", "-o", "table")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "JOB") || !strings.Contains(out, "job_1_0001") {
		t.Fatalf("table:\n%s", out)
	}
	// A directory works like its files; -severity filters.
	out, _, err = analyze(t, "-q", "-severity", "critical", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "job_1_0001") {
		t.Fatalf("-severity critical kept a NONE job:\n%s", out)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	good := writeTrace(t, t.TempDir(), 1)
	missing := filepath.Join(t.TempDir(), "missing.jhist")
	out, stderr, err := analyze(t, "-q", "-o", "json", good, missing)
	if !errors.Is(err, errUnreadable) {
		t.Fatalf("err = %v, want errUnreadable", err)
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(stderr, missing) {
		t.Fatalf("message does not name the input: %v / %s", err, stderr)
	}
	if !strings.Contains(out, "job_1_0001") {
		t.Fatalf("readable input not analysed:\n%s", out)
	}
	junk := filepath.Join(t.TempDir(), "junk.txt")
	os.WriteFile(junk, []byte("hello\n"), 0o644)
	if _, _, err := analyze(t, "-q", junk); !errors.Is(err, errUnreadable) {
		t.Fatalf("unknown format: err = %v", err)
	}
	if _, _, err := analyze(t); !errors.Is(err, errUsage) {
		t.Fatalf("no sources: err = %v, want usage", err)
	}
	if _, _, err := analyze(t, "-o", "yaml", good); err == nil {
		t.Fatal("-o yaml accepted")
	}
	cfg := filepath.Join(t.TempDir(), "h.yaml")
	os.WriteFile(cfg, []byte("mapper_gc:\n  nonsense: 1\n"), 0o644)
	if _, _, err := analyze(t, "-config", cfg, good); err == nil {
		t.Fatal("bad config accepted")
	}
	// -defaults prints a document that is itself a valid override file.
	defaults, _, err := analyze(t, "-defaults")
	if err != nil || !strings.Contains(defaults, "mapper_gc:") || !strings.Contains(defaults, "docs/heuristics.md") {
		t.Fatalf("-defaults: %v\n%s", err, defaults)
	}
	os.WriteFile(cfg, []byte(defaults), 0o644)
	if _, _, err := analyze(t, "-q", "-config", cfg, good); err != nil {
		t.Fatalf("the printed defaults as -config: %v", err)
	}
}

func TestAnalyzeSamples(t *testing.T) {
	dir := testenv.Samples(t)
	out, _, err := analyze(t, "-q", "-o", "json", filepath.Join(dir, "drelephant", "history"),
		filepath.Join(dir, "sparkevents", "apache-spark", "application_1506645932520_24630151"))
	if err != nil {
		t.Fatal(err)
	}
	sev := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r jsonform.Job
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		sev[r.JobID] = r.Severity
	}
	want := map[string]string{
		"job_1526555215992_0001":             "none",
		"job_1526555215992_0002":             "none",
		"job_1526555215992_0004":             "none",
		"application_1506645932520_24630151": "none",
	}
	for id, s := range want {
		if sev[id] != s {
			t.Errorf("%s: severity %q, want %q (all: %v)", id, sev[id], s, sev)
		}
	}
}

// writeDeepJhist writes a job history whose one event line nests five
// million brackets: before the fetcher's depth limit, reading it overflowed
// the goroutine stack, a fatal error that killed `strata analyze`.
func writeDeepJhist(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "job_1_0009-1-u-deep-2-1-1-SUCCEEDED-default-1.jhist")
	line := `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1_0009","other":` +
		strings.Repeat("[", 5_000_000) + strings.Repeat("]", 5_000_000) + `}}}`
	if err := os.WriteFile(path, []byte("Avro-Json\n{}\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostileDir holds a good rumen trace, the deep job history and a corrupt
// lz4 event log.
func hostileDir(t *testing.T) (dir, deep, corrupt string) {
	t.Helper()
	dir = t.TempDir()
	writeTrace(t, dir, 2)
	deep = writeDeepJhist(t, dir)
	corrupt = filepath.Join(dir, "application_1_0003.lz4")
	if err := os.WriteFile(corrupt, []byte("LZ4Block garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, deep, corrupt
}

// Files that cannot be read are named on stderr, one line each with the
// reason, and the others are analysed; the exit status says some failed.
func TestAnalyzeUnreadableFiles(t *testing.T) {
	dir, deep, corrupt := hostileDir(t)
	out, stderr, err := analyze(t, "-q", "-o", "json", dir)
	if !errors.Is(err, errUnreadable) {
		t.Fatalf("err = %v, want errUnreadable", err)
	}
	if !strings.Contains(out, "job_1_0001") {
		t.Errorf("the readable trace was not analysed:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr has %d lines, want one per bad file:\n%s", len(lines), stderr)
	}
	for _, want := range []struct{ path, why string }{{deep, "nested too deeply"}, {corrupt, "corrupt"}} {
		if !strings.Contains(stderr, want.path) || !strings.Contains(stderr, want.why) {
			t.Errorf("stderr does not name %s with %q:\n%s", want.path, want.why, stderr)
		}
	}
}

// An input with no job says so and fails; jobs all filtered out by
// -severity are not a failure, and stderr says how many were analysed.
func TestAnalyzeNoJobs(t *testing.T) {
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("not a history\n"), 0o644)
	for _, format := range []string{"table", "json"} {
		out, stderr, err := analyze(t, "-q", "-o", format, empty)
		if !errors.Is(err, errNoJobs) || out != "" || !strings.Contains(stderr, empty+": no jobs found") {
			t.Errorf("-o %s: err %v, stdout %q, stderr %q", format, err, out, stderr)
		}
	}
	// One empty input among good ones still fails, and is named.
	good := writeTrace(t, t.TempDir(), 1)
	out, stderr, err := analyze(t, "-q", good, empty)
	if !errors.Is(err, errNoJobs) || !strings.Contains(out, "job_1_0001") || !strings.Contains(stderr, empty) {
		t.Errorf("err %v, stdout %q, stderr %q", err, out, stderr)
	}
	out, stderr, err = analyze(t, "-q", "-severity", "critical", good)
	if err != nil || out != "" || !strings.Contains(stderr, "1 jobs analysed, 0 at or above severity critical") {
		t.Errorf("filtered: err %v, stdout %q, stderr %q", err, out, stderr)
	}
}

// strataBinary returns the real strata binary: $STRATA_BIN/strata (make
// test builds it), else one built into a temporary directory.
func strataBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("STRATA_BIN"); dir != "" {
		return filepath.Join(dir, "strata")
	}
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// The real binary on the hostile directory and on an empty one: it stays
// alive to the end, prints the good job, names each bad file and exits 1;
// an empty input exits 1 with a message and no table.
func TestAnalyzeBinaryHostileInputs(t *testing.T) {
	bin := strataBinary(t)
	dir, deep, _ := hostileDir(t)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"analyze", "-q"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	out, stderr, code := run(dir)
	if code != 1 || !strings.Contains(out, "job_1_0001") || !strings.Contains(stderr, deep) || strings.Contains(stderr, "fatal error") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%.2000s", code, out, stderr)
	}
	out, stderr, code = run(t.TempDir())
	if code != 1 || out != "" || !strings.Contains(stderr, "no jobs found") {
		t.Errorf("empty input: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// A history server that refuses the connection is reported as such, not
// as an input of an unknown format.
func TestAnalyzeRefusedConnection(t *testing.T) {
	out, stderr, code := call("analyze", "-q", "http://127.0.0.1:1/")
	if code != 1 || out != "" || !strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "unknown input format") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// A truncated Spark event log: the job it holds is printed and its
// warnings go to stderr beside the table; a log cut before it names its
// application is the fetcher's error (exit 1), not a job with an empty id.
func TestAnalyzeTruncatedLog(t *testing.T) {
	dir := t.TempDir()
	var full bytes.Buffer
	if err := gen.WriteSparkLog(&full, gen.SparkApp{AppID: "application_1700000000000_0007", Stages: 2, TasksPerStage: 4, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut")
	os.WriteFile(cut, full.Bytes()[:full.Len()/2], 0o644)
	out, stderr, code := call("analyze", "-q", cut)
	if code != 0 || !strings.Contains(out, "application_1700000000000_0007") ||
		!strings.Contains(stderr, "application_1700000000000_0007: warning: ") {
		t.Errorf("cut log: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	first, _, _ := bytes.Cut(full.Bytes(), []byte("\n"))
	head := filepath.Join(dir, "head")
	os.WriteFile(head, append(first, '\n'), 0o644)
	for _, format := range []string{"table", "json"} {
		out, stderr, code := call("analyze", "-q", "-o", format, head)
		if code != 1 || out != "" || !strings.Contains(stderr, "no job in input: no SparkListenerApplicationStart event") {
			t.Errorf("log without its application, -o %s: exit %d, stdout %q, stderr %q", format, code, out, stderr)
		}
	}
}

// -heuristics names the thresholds file; -config, its old name, still
// reads it and warns.
func TestAnalyzeHeuristicsFlag(t *testing.T) {
	good := writeTrace(t, t.TempDir(), 1)
	cfg := filepath.Join(t.TempDir(), "h.yaml")
	os.WriteFile(cfg, []byte("mapper_gc:\n  nonsense: 1\n"), 0o644)
	if _, _, code := call("analyze", "-q", "-heuristics", cfg, good); code != 1 {
		t.Errorf("a bad -heuristics file: exit %d, want 1", code)
	}
	_, stderr, code := call("analyze", "-q", "-config", cfg, good)
	if code != 1 || !strings.Contains(stderr, "-config is deprecated: use -heuristics") {
		t.Errorf("-config: exit %d, stderr %q", code, stderr)
	}
}
