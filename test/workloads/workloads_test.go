package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/stratatrace/strata/test/testenv"
)

// smokeSeries is the Spark series of the benchmark ($STRATA_SMOKE_SPARK,
// default 3.5); make smtt runs every series.
func smokeSeries() string {
	if s := os.Getenv("STRATA_SMOKE_SPARK"); s != "" {
		return s
	}
	return "3.5"
}

// sparkSeries are the Spark series the smoke runs on: both the hook
// supports, or only $STRATA_SMOKE_SPARK when set. A series not installed
// skips with the reason.
func sparkSeries() []string {
	if s := os.Getenv("STRATA_SMOKE_SPARK"); s != "" {
		return []string{s}
	}
	return []string{"3.5", "4"}
}

func testEnv(t testing.TB, series string) Env {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireJava(t)
	e := Env{Bin: filepath.Dir(testenv.Built(t, "strata")), SparkHome: testenv.SparkHome(t, series), Work: t.TempDir()}
	testenv.Built(t, filepath.Join("workloads", filepath.Base(e.Jar())))
	if err := e.Check(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	return e
}

// blockSizes reads the memory size Spark's event log gives each cached
// block (spark.eventLog.logBlockUpdates), per RDD: the largest update of
// each block, of the serialized ones (deserialized block sizes are Spark's
// estimates of object graphs, which the hook does not walk).
func blockSizes(t *testing.T, eventLog string) map[int]int64 {
	t.Helper()
	r := openEventLog(t, eventLog)
	type update struct {
		Event string `json:"Event"`
		Info  struct {
			BlockID string `json:"Block ID"`
			Level   struct {
				Memory       bool `json:"Use Memory"`
				Deserialized bool `json:"Deserialized"`
			} `json:"Storage Level"`
			MemorySize int64 `json:"Memory Size"`
		} `json:"Block Updated Info"`
	}
	peak := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"SparkListenerBlockUpdated"`) {
			continue
		}
		var u update
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatalf("event log line %q: %v", sc.Text(), err)
		}
		if strings.HasPrefix(u.Info.BlockID, "rdd_") && u.Info.Level.Memory && !u.Info.Level.Deserialized {
			peak[u.Info.BlockID] = max(peak[u.Info.BlockID], u.Info.MemorySize)
		}
	}
	out := map[int]int64{}
	for id, n := range peak {
		var rdd, part int
		if _, err := fmt.Sscanf(id, "rdd_%d_%d", &rdd, &part); err == nil {
			out[rdd] += n
		}
	}
	return out
}

// eventLogOf is EventLogOf, failing the test when there is not one log.
func eventLogOf(t *testing.T, dir, app string) string {
	t.Helper()
	p, err := EventLogOf(dir, app)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openEventLog reads a plain or zstd (Spark 4's default) event log file, or the parts of a
// rolling log directory in order, as one stream.
func openEventLog(t *testing.T, path string) io.Reader {
	t.Helper()
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		parts, _ := filepath.Glob(filepath.Join(path, "events_*"))
		sort.Slice(parts, func(i, j int) bool { return partNumber(parts[i]) < partNumber(parts[j]) })
		files = parts
	}
	var readers []io.Reader
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".zstd") || strings.HasSuffix(f, ".zst") {
			d, err := zstd.NewReader(nil)
			if err != nil {
				t.Fatal(err)
			}
			if b, err = d.DecodeAll(b, nil); err != nil {
				t.Fatalf("decompress %s: %v", f, err)
			}
			d.Close()
		}
		readers = append(readers, bytes.NewReader(b), strings.NewReader("\n"))
	}
	return io.MultiReader(readers...)
}

// partNumber is n of a rolling log part events_<n>_<app>[.codec].
func partNumber(path string) int {
	var n int
	fmt.Sscanf(filepath.Base(path), "events_%d_", &n)
	return n
}

// TestReportSmoke runs one workload on real Spark under the hook, with the
// real agent and collector, and checks what `strata report` says of it
// against Spark's own event log; then a real Spark History Server serves
// that log, the collector's history poller analyses the application
// through it and joins its traces, and what the fetcher reads from the
// live server must equal what it reads from the event log and from the
// REST responses its tests recorded. It runs on each Spark series (about
// 15 s each: one small workload, one node, one history server).
func TestReportSmoke(t *testing.T) {
	for _, series := range sparkSeries() {
		t.Run("spark-"+series, func(t *testing.T) { reportSmoke(t, series) })
	}
}

func reportSmoke(t *testing.T, series string) {
	e := testEnv(t, series)
	ctx := context.Background()
	logDir := filepath.Join(e.Work, "events")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	shsURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	n, err := StartNode(e, "node", NodeOptions{History: shsURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.Logs())
		}
		n.Stop()
	})

	// Serialized blocks: byte ranges the hook reports whole, whose sizes the
	// event log gives exactly.
	r, err := Run(ctx, e, RunConfig{Workload: "LogisticRegression", Storage: "MEMORY_AND_DISK_SER", Node: n, EventLogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on Spark %s: app %s, %.1f s, hook %v", r.Workload, r.Spark, r.App, r.Wall.Seconds(), r.Hook)
	if r.Hook["sent"] == 0 || r.Hook["errors"] != 0 {
		t.Errorf("hook counters %v: want frames sent and no error", r.Hook)
	}
	if err := n.Drained(2 * time.Minute); err != nil {
		t.Fatal(err)
	}

	// The cached training set: its blocks' bytes are Spark's memory sizes
	// exactly (serialized blocks are byte ranges the hook reports whole).
	rep := report(ctx, t, n, r.App)
	sizes := blockSizes(t, eventLogOf(t, logDir, r.App))
	if len(sizes) == 0 {
		t.Fatalf("the event log lists no serialized cached block")
	}
	var present uint64
	for rdd, want := range sizes {
		var got *RDDReport
		for i := range rep.RDDs {
			if int(rep.RDDs[i].RDD) == rdd {
				got = &rep.RDDs[i]
			}
		}
		if got == nil {
			t.Errorf("RDD %d (Spark: %d bytes cached) not in the report: %+v", rdd, want, rep.RDDs)
			continue
		}
		if int64(got.Bytes) != want || got.Pages*4096 < got.Bytes || got.Present == 0 || got.Writes == 0 || got.Reads == 0 {
			t.Errorf("RDD %d = %+v; Spark cached %d bytes", rdd, *got, want)
		}
		present += got.Present * 4096
	}
	// Occupation: the executor (the driver, in local mode) sampled its
	// resident memory; its RDD peak is resident, hence below its peak RSS,
	// and at least what the blocks held at the end (none was evicted).
	if len(rep.Executors) != 1 {
		t.Fatalf("occupation rows %+v", rep.Executors)
	}
	x := rep.Executors[0]
	if x.ExecutorID != "driver" || x.RSSSamples == 0 || x.PeakRSSBytes <= x.PeakRDDBytes || x.PeakRDDBytes < present ||
		x.OfRSS == nil || *x.OfRSS <= 0 || *x.OfRSS >= 1 || x.OfNode == nil || *x.OfNode <= 0 || x.MemTotalBytes == 0 {
		t.Errorf("occupation %+v (present at the end %d bytes)", x, present)
	}
	// No hardware PMU here: the walk share is unavailable, never a number,
	// and the fault figures stand beside it.
	if len(rep.PageWalk) == 0 {
		t.Errorf("no workload counters for the executor")
	}
	for _, p := range rep.PageWalk {
		if p.WalkPct != nil || !strings.HasPrefix(p.PMUStatus, "unavailable") || p.MinorFaults == 0 {
			t.Errorf("page walk %+v: want unavailable on this VM, with fault counts", p)
		}
	}

	// GraphX at its own levels (MEMORY_ONLY edge and vertex partitions):
	// the hook fails on none of GraphX's RDDs (EdgeRDDImpl and VertexRDDImpl
	// override getStorageLevel to ask an RDD that is null in a task), walks
	// their objects, and the report says which RDDs were walked.
	g, err := Run(ctx, e, RunConfig{Workload: "PageRank", Node: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on Spark %s: app %s, %.1f s, hook %v", g.Workload, g.Spark, g.App, g.Wall.Seconds(), g.Hook)
	if g.Hook["errors"] != 0 || g.Hook["walk-errors"] != 0 || g.Hook["walks"] == 0 {
		t.Errorf("hook counters %v: want walks and no error", g.Hook)
	}
	if err := n.Drained(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	walked := 0
	for _, rr := range report(ctx, t, n, g.App).RDDs {
		if rr.ObjectGraph && rr.ResolvedBytes > 0 && strings.HasPrefix(rr.Resolved, "walked") {
			walked++
		}
	}
	if walked == 0 {
		t.Errorf("PageRank: no RDD of objects walked in strata report")
	}

	// The history server over the same log (and the application whose REST
	// responses the fetcher tests recorded, when the samples are here).
	samples := os.Getenv("STRATA_SAMPLES")
	if samples == "" {
		samples = filepath.Join(testenv.RepoRoot(), "..", "shared", "data")
	}
	recorded := filepath.Join(samples, "sparkevents", "apache-spark", RecordedApp)
	haveRecorded := CopyFile(recorded, filepath.Join(logDir, RecordedApp)) == nil
	h, err := StartHistoryServerAt(e, logDir, port)
	if err != nil {
		t.Fatal(err)
	}
	h.StopAtCleanup(t)
	ids := []string{r.App}
	if haveRecorded {
		ids = append(ids, RecordedApp)
	}
	if err := h.WaitApps(ids, 90*time.Second); err != nil {
		t.Fatal(err)
	}

	t.Run("poller joins traces", func(t *testing.T) {
		var job struct {
			Name       string `json:"name"`
			Heuristics []struct {
				Name string `json:"name"`
			} `json:"heuristics"`
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			out, err := n.Strata(ctx, "job", r.App, "-o", "json")
			if err == nil && json.Unmarshal(out, &job) == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector did not analyse %s from the history server: %v", r.App, err)
			}
			time.Sleep(time.Second)
		}
		names := map[string]bool{}
		for _, h := range job.Heuristics {
			names[h.Name] = true
		}
		// One NUMA node here and a few MiB cached: the NUMA balance,
		// remote-fault and THP heuristics have nothing to judge; the cached
		// pages (swap) and the fault overhead do.
		if job.Name != "LogisticRegression" || !names["Spark Configuration"] || !names["Swapped Cached Blocks"] ||
			!names["Fault and Page-Walk Overhead"] {
			t.Errorf("job %+v: want the Spark heuristics and the cross-layer ones", job)
		}
		if rep := report(ctx, t, n, r.App); rep.Name != "LogisticRegression" || rep.Severity == "" {
			t.Errorf("report after the analysis: name %q severity %q", rep.Name, rep.Severity)
		}
	})

	t.Run("live REST equals the event log", func(t *testing.T) {
		fs, err := CompareWithEventLog(ctx, h, r.App, eventLogOf(t, logDir, r.App))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			t.Errorf("finding: %s", f)
		}
	})

	t.Run("live REST equals the recorded responses and the event log", func(t *testing.T) {
		if !haveRecorded {
			t.Skipf("skipping: sample event log %s not found (set STRATA_SAMPLES)", recorded)
		}
		fs, err := CompareWithRecorded(ctx, h, samples)
		if err != nil {
			t.Fatal(err)
		}
		more, err := CompareWithEventLog(ctx, h, RecordedApp, recorded)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(fs, more...) {
			t.Errorf("finding: %s", f)
		}
	})
}

// report is n.Report, failing the test on error.
func report(ctx context.Context, t *testing.T, n *Node, app string) Report {
	t.Helper()
	r, err := n.Report(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
