package yarn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/history"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/sparkjob"
)

// The skewed input: ten small files and one large, a mapper each (every
// file is smaller than an HDFS block). Mapper Skew's data part then splits
// the mappers into group A, the ten small ones, and group B, the large one
// (docs/heuristics.md#statistics: the split point settles between them).
// Its severity is the lowest of three (docs/heuristics.md#mapper-skew):
//   - deviation |avg A − avg B| / avg A ≈ 3000: CRITICAL (limits 2, 4, 8, 16);
//   - group B's average, 12 MiB against 1/8, 1/4, 1/2, 1 of a 64 MiB block
//     (8, 16, 32, 64 MiB): LOW;
//   - group A's 10 tasks against 10, 50, 100, 200: LOW.
//
// Data skew is LOW, and time skew LOW at most (11 tasks, below 50), so
// Mapper Skew is LOW; its score is 0, as for every LOW result
// (docs/heuristics.md#severity-and-score). The balanced input's three
// mappers are fewer than 10: NONE.
const (
	skewSmallFiles = 10
	skewSmall      = 4 << 10
	skewLarge      = 12 << 20
	evenFiles      = 3
	evenSize       = 256 << 10
)

// teraRows is the size of the sort job's input: 100-byte rows that
// teragen writes in two files (two mappers), 2 MB in all.
const teraRows = 20000

// TestMapReduceHistories runs the examples jar's jobs on the cluster:
// wordcount on balanced and on skewed input in HDFS, wordcount on the
// balanced input again with its history written in Avro binary, and a
// sort (teragen, then terasort over its output); and analyses every job as
// the collector's history poller reads it from the JobHistoryServer's done
// directory and from its REST API.
func TestMapReduceHistories(t *testing.T) {
	c := requireCluster(t)
	began := time.Now()
	in := t.TempDir()
	for i := range evenFiles {
		writeWords(t, filepath.Join(in, "even", fmt.Sprintf("part-%02d", i)), evenSize)
	}
	for i := range skewSmallFiles {
		writeWords(t, filepath.Join(in, "skew", fmt.Sprintf("small-%02d", i)), skewSmall)
	}
	writeWords(t, filepath.Join(in, "skew", "large"), skewLarge)
	base := fmt.Sprintf("/strata-%d", time.Now().UnixNano())
	c.client(t, "org.apache.hadoop.fs.FsShell", "-put", in, base)

	// Every job at once (the sort's two one after the other): the cluster
	// has room for them, and their JVMs' start-up overlaps.
	var even, skewed, binary, teragen, terasort string
	var errs [4]error
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); even, errs[0] = example(c, "wordcount", base+"/even", base+"/out-even") }()
	go func() { defer wg.Done(); skewed, errs[1] = example(c, "wordcount", base+"/skew", base+"/out-skew") }()
	go func() {
		defer wg.Done()
		binary, errs[2] = example(c, "wordcount", "-D", "mapreduce.jobhistory.jhist.format=binary", base+"/even", base+"/out-even-binary")
	}()
	go func() {
		defer wg.Done()
		if teragen, errs[3] = example(c, "teragen", "-D", "mapreduce.job.maps=2", fmt.Sprint(teraRows), base+"/tera-in"); errs[3] == nil {
			terasort, errs[3] = example(c, "terasort", base+"/tera-in", base+"/tera-out")
		}
	}()
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	jobs := []string{even, skewed, binary, teragen, terasort}
	t.Logf("jobs %s (balanced), %s (skewed), %s (balanced, binary history), %s and %s (teragen, terasort) done after %v",
		even, skewed, binary, teragen, terasort, time.Since(began).Round(time.Millisecond))

	// The JobHistoryServer moves a finished job's files to its done
	// directory within its move interval (a second here).
	done := t.TempDir()
	if err := copyHistories(c, done, 60*time.Second, jobs...); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("STRATA_YARN_KEEP_HISTORIES"); keep != "" {
		// collector/fetcher/testdata/binary is the binary job's.
		if err := os.CopyFS(keep, os.DirFS(done)); err != nil {
			t.Fatal(err)
		}
		t.Logf("histories copied to %s", keep)
	}
	for _, id := range jobs {
		want := jhistJSON
		if id == binary {
			want = jhistBinary
		}
		if got := historyForm(t, done, id); got != want {
			t.Errorf("job %s: history written as %q, want %q", id, got, want)
		}
	}

	eng, err := heuristics.NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	fromFiles := poll(t, eng, done)
	fromServer := poll(t, eng, c.JHSWeb+"/ws/v1/history/mapreduce/jobs")
	for _, id := range jobs {
		f, s := fromFiles[id], fromServer[id]
		if f == nil || s == nil {
			t.Fatalf("job %s: read from the done directory: %v, from the JobHistoryServer: %v", id, f != nil, s != nil)
		}
		if len(f.Heuristics) == 0 {
			t.Errorf("job %s: no heuristic result", id)
		}
		sameHeuristics(t, id, f, s)
	}

	checkSkew(t, "balanced", fromServer[even], stratav1.Severity_SEVERITY_NONE, 0, evenFiles)
	checkSkew(t, "balanced, binary history", fromServer[binary], stratav1.Severity_SEVERITY_NONE, 0, evenFiles)
	checkSkew(t, "skewed", fromServer[skewed], stratav1.Severity_SEVERITY_LOW, 0, skewSmallFiles+1)
	for _, d := range heuristic(fromServer[skewed], "Mapper Skew").GetDetails() {
		t.Logf("skewed job, Mapper Skew: %s = %s", d.GetName(), d.GetValue())
	}
	// The same job on the same input, its history in the other form: the
	// same heuristics at the same severities.
	if a, b := severities(fromFiles[even]), severities(fromFiles[binary]); a != b {
		t.Errorf("balanced wordcount, JSON history %s: %s\nbinary history %s: %s", even, a, binary, b)
	}
	// The sort: two mappers (teragen's files), one reducer, every record
	// read and written once.
	sorted := fromServer[terasort]
	if n := detailOf(heuristic(sorted, "Mapper Skew"), "Data skew (Number of tasks)"); n != "2" {
		t.Errorf("terasort: Mapper Skew over %q mappers, want 2", n)
	}
	if heuristic(sorted, "Shuffle & Sort") == nil || heuristic(sorted, "Reducer Time") == nil {
		t.Errorf("terasort: no reducer heuristics in %s", severities(sorted))
	}
}

// example runs one of the examples jar's programs (args after its name)
// and returns its job id.
func example(c *yarnCluster, args ...string) (string, error) {
	log, err := c.run("org.apache.hadoop.examples.ExampleDriver", args...)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`Job (job_\d+_\d+) completed successfully`).FindStringSubmatch(log)
	if m == nil {
		return "", fmt.Errorf("%s: no successful job in its output:\n%s", strings.Join(args, " "), sparkjob.Tail(log, 4000))
	}
	return m[1], nil
}

// The first line of a job history in either form.
const (
	jhistJSON   = "Avro-Json"
	jhistBinary = "Avro-Binary"
)

// historyForm is the first line of job id's history in dir.
func historyForm(t *testing.T, dir, id string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, id+"-*.jhist"))
	if len(m) != 1 {
		t.Fatalf("job %s: histories %v in %s", id, m, dir)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return string(first)
}

// severities lists a result's heuristics with their severities.
func severities(r *stratav1.JobResult) string {
	var out []string
	for _, h := range r.GetHeuristics() {
		out = append(out, h.GetName()+"="+strings.TrimPrefix(h.GetSeverity().String(), "SEVERITY_"))
	}
	return strings.Join(out, ", ")
}

// detailOf is the value of a result's detail, "" when it has none.
func detailOf(h *stratav1.HeuristicResult, name string) string {
	for _, d := range h.GetDetails() {
		if d.GetName() == name {
			return d.GetValue()
		}
	}
	return ""
}

// writeWords writes size bytes of lines of words to path.
func writeWords(t *testing.T, path string, size int) {
	t.Helper()
	words := strings.Fields("strata page block heap rdd yarn spark mapper reducer skew shuffle spill node agent hook trace")
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		b.WriteString(words[(i*7+i/len(words))%len(words)])
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	data := b.Bytes()[:size]
	data[size-1] = '\n'
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyHistories waits until the JobHistoryServer's done directory in
// HDFS holds the .jhist file and the _conf.xml of every job, and copies
// them through WebHDFS into dst (the fetcher reads local files).
func copyHistories(c *yarnCluster, dst string, timeout time.Duration, jobs ...string) error {
	u, err := url.Parse(c.HistoryDone)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		files, err := c.listHDFS(u.Path)
		if err != nil {
			return err
		}
		var want []string
		var missing []string
		for _, id := range jobs {
			jhist, conf := "", ""
			for _, f := range files {
				switch name := path.Base(f); {
				case strings.HasPrefix(name, id+"-") && strings.HasSuffix(name, ".jhist"):
					jhist = f
				case name == id+"_conf.xml":
					conf = f
				}
			}
			if jhist == "" || conf == "" {
				missing = append(missing, id)
			}
			want = append(want, jhist, conf)
		}
		if len(missing) == 0 {
			for _, f := range want {
				if err := c.getHDFS(f, filepath.Join(dst, path.Base(f))); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v, the done directory %s lacks the histories of %v", timeout, c.HistoryDone, missing)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// listHDFS lists the files under dir, recursively (WebHDFS LISTSTATUS).
func (c *yarnCluster) listHDFS(dir string) ([]string, error) {
	var st struct {
		FileStatuses struct {
			FileStatus []struct {
				PathSuffix string `json:"pathSuffix"`
				Type       string `json:"type"`
			} `json:"FileStatus"`
		} `json:"FileStatuses"`
	}
	if err := getJSON(c.HDFSWeb+"/webhdfs/v1"+dir+"?op=LISTSTATUS", &st); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range st.FileStatuses.FileStatus {
		p := path.Join(dir, f.PathSuffix)
		if f.Type != "DIRECTORY" {
			out = append(out, p)
			continue
		}
		sub, err := c.listHDFS(p)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// getHDFS copies one HDFS file to dst (WebHDFS OPEN, redirected to the
// DataNode).
func (c *yarnCluster) getHDFS(file, dst string) error {
	resp, err := http.Get(c.HDFSWeb + "/webhdfs/v1" + file + "?op=OPEN")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read %s from HDFS: %s", file, resp.Status)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return fmt.Errorf("read %s from HDFS: %w", file, err)
	}
	return out.Close()
}

// results is a history.Sink that keeps every result by job id.
type results map[string]*stratav1.JobResult

func (r results) HasJob(_ context.Context, id string) (bool, error) { return r[id] != nil, nil }

func (r results) PutJob(_ context.Context, res *stratav1.JobResult) error {
	r[res.JobId] = res
	return nil
}

// poll runs one poll of the collector's history poller over source with
// the heuristics engine and returns what it stored.
func poll(t *testing.T, eng *heuristics.Engine, source string) results {
	t.Helper()
	out := results{}
	analyze := history.AnalyzerFunc(func(_ context.Context, j *job.Job) (*stratav1.JobResult, error) {
		return eng.Analyze(j), nil
	})
	p, err := history.New(history.Config{Sources: []string{source}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, analyze, out)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Poll(context.Background())
	if err != nil || st.Errors > 0 {
		t.Fatalf("poll %s: %v (%+v)", source, err, st)
	}
	t.Logf("poll of %s: %+v", source, st)
	return out
}

// sameHeuristics fails the test unless both analyses of a job hold the
// same heuristic results, in the same order.
func sameHeuristics(t *testing.T, id string, files, server *stratav1.JobResult) {
	t.Helper()
	n := max(len(files.Heuristics), len(server.Heuristics))
	for i := range n {
		var f, s *stratav1.HeuristicResult
		if i < len(files.Heuristics) {
			f = files.Heuristics[i]
		}
		if i < len(server.Heuristics) {
			s = server.Heuristics[i]
		}
		if !proto.Equal(f, s) {
			t.Errorf("job %s, heuristic %d: from the .jhist file\n%s\nfrom the JobHistoryServer\n%s",
				id, i, prototext.Format(f), prototext.Format(s))
		}
	}
	t.Logf("job %s: %d heuristic results, the same from the .jhist file and the JobHistoryServer (severity %s, score %d)",
		id, len(files.Heuristics), files.Severity, files.Score)
}

func heuristic(r *stratav1.JobResult, name string) *stratav1.HeuristicResult {
	for _, h := range r.GetHeuristics() {
		if h.GetName() == name {
			return h
		}
	}
	return nil
}

// checkSkew checks Mapper Skew's severity and score and its task count.
func checkSkew(t *testing.T, what string, r *stratav1.JobResult, sev stratav1.Severity, score int64, maps int) {
	t.Helper()
	h := heuristic(r, "Mapper Skew")
	if h == nil {
		t.Fatalf("%s job: no Mapper Skew result", what)
	}
	tasks := ""
	for _, d := range h.GetDetails() {
		if d.GetName() == "Data skew (Number of tasks)" {
			tasks = d.GetValue()
		}
	}
	if h.GetSeverity() != sev || h.GetScore() != score || tasks != fmt.Sprint(maps) {
		t.Errorf("%s job: Mapper Skew %s, score %d, %s mappers; want %s, score %d, %d mappers\n%s",
			what, h.GetSeverity(), h.GetScore(), tasks, sev, score, maps, prototext.Format(h))
	}
}
