package history

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/gen"
)

// engine is the heuristics engine with default thresholds as an Analyzer
// (the collector's adds the application's traces).
func engine(t *testing.T) Analyzer {
	t.Helper()
	eng, err := heuristics.NewEngine(heuristics.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return AnalyzerFunc(func(_ context.Context, j *job.Job) (*stratav1.JobResult, error) { return eng.Analyze(j), nil })
}

type memSink struct {
	mu   sync.Mutex
	jobs map[string]*stratav1.JobResult
	puts int
}

func (m *memSink) HasJob(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.jobs[id]
	return ok, nil
}

func (m *memSink) PutJob(_ context.Context, r *stratav1.JobResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jobs == nil {
		m.jobs = map[string]*stratav1.JobResult{}
	}
	m.jobs[r.JobId] = r
	m.puts++
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestPoller(t *testing.T) {
	dir := t.TempDir()
	for i, spec := range []gen.MRJob{
		{JobID: "job_1700000000000_0001", Maps: 20, Reduces: 2},
		{JobID: "job_1700000000000_0002", Maps: 30, Reduces: 3, Skew: 5},
		{JobID: "job_1700000000000_0003", Maps: 5, Failed: true},
		{JobID: "job_1700000000000_0004", Maps: 5, Failed: true}, // killed below? no: kept failed
	} {
		spec.Seed = uint64(i)
		if _, err := gen.WriteMRJob(dir, spec); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "application_1700000000000_0009"))
	if err != nil {
		t.Fatal(err)
	}
	gen.WriteSparkLog(f, gen.SparkApp{AppID: "application_1700000000000_0009", TasksPerStage: 20})
	f.Close()
	// A job history cut short for good: it never gets its completion event.
	cut, err := gen.WriteMRJob(filepath.Join(dir, "cut"), gen.MRJob{JobID: "job_1700000000000_0005", Maps: 50})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cut)
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a history"), 0o644)
	// A running Spark application: never analysed while .inprogress.
	var running bytes.Buffer
	gen.WriteSparkLog(&running, gen.SparkApp{AppID: "application_1700000000000_0010", TasksPerStage: 5, OmitEnd: true})
	os.WriteFile(filepath.Join(dir, "application_1700000000000_0010.inprogress"), running.Bytes(), 0o644)

	eng := engine(t)
	sink := &memSink{}
	now := time.UnixMilli(1800000000000)
	cfg := Config{Sources: []string{dir}, SettleRounds: 3, Logger: quiet(), Now: func() time.Time { return now }}
	p, err := New(cfg, eng, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	poll := func(want Stats) {
		t.Helper()
		got, err := p.Poll(ctx)
		if err != nil || got != want {
			t.Fatalf("poll: %+v %v, want %+v", got, err, want)
		}
	}
	poll(Stats{Units: 8, Analyzed: 5, Deferred: 2})
	poll(Stats{Units: 2, Skipped: 6, Deferred: 2})
	poll(Stats{Units: 2, Skipped: 6, Analyzed: 1, Deferred: 1}) // settled: analysed as it stands
	poll(Stats{Units: 1, Skipped: 7, Deferred: 1})
	// The application ends: its log is renamed and analysed.
	os.Remove(filepath.Join(dir, "application_1700000000000_0010.inprogress"))
	running.WriteString(`{"Event":"SparkListenerApplicationEnd","Timestamp":1700000999000}` + "\n")
	os.WriteFile(filepath.Join(dir, "application_1700000000000_0010"), running.Bytes(), 0o644)
	poll(Stats{Units: 1, Skipped: 7, Analyzed: 1})

	r := sink.jobs["job_1700000000000_0005"]
	if r == nil || len(r.Warnings) == 0 || !strings.Contains(strings.Join(r.Warnings, " "), "truncated") {
		t.Fatalf("truncated job result %+v", r)
	}
	if r.AnalyzedUnixMs != now.UnixMilli() || r.Source != cut {
		t.Errorf("analysed %d source %s", r.AnalyzedUnixMs, r.Source)
	}
	if s := sink.jobs["application_1700000000000_0009"]; s == nil || s.Type != "spark" || len(s.Heuristics) == 0 {
		t.Errorf("spark result %+v", s)
	}
	if f := sink.jobs["job_1700000000000_0003"]; f == nil || f.Severity < stratav1.Severity_SEVERITY_MODERATE {
		t.Errorf("failed job result %+v", f)
	}

	// A new history is picked up; a restarted poller asks the sink.
	if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0006", Maps: 3}); err != nil {
		t.Fatal(err)
	}
	poll(Stats{Units: 1, Skipped: 8, Analyzed: 1})
	p2, _ := New(cfg, eng, sink)
	if st, err := p2.Poll(ctx); err != nil || st.Known != 8 || st.Analyzed != 0 {
		t.Errorf("restarted poll: %+v %v", st, err)
	}
	if sink.puts != 8 {
		t.Errorf("%d puts, want 8 (each job once)", sink.puts)
	}
}

// Run polls at every interval until its context ends and then returns
// nil; a job is stored once however many polls see it.
func TestRunStopsWithContext(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.WriteMRJob(dir, gen.MRJob{Maps: 2}); err != nil {
		t.Fatal(err)
	}
	eng := engine(t)
	sink := &memSink{}
	// The context ends after the fifth poll, however long each took.
	const stopAfter = 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	polls := 0
	onPoll := func(Stats, error, time.Duration) {
		if polls++; polls == stopAfter {
			cancel()
		}
	}
	p, err := New(Config{Sources: []string{dir, filepath.Join(dir, "absent")}, Interval: 10 * time.Millisecond, Logger: quiet(), OnPoll: onPoll}, eng, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if polls != stopAfter {
		t.Errorf("Run went on for %d polls, want it to stop after poll %d, when its context ended", polls, stopAfter)
	}
	if sink.puts != 1 {
		t.Errorf("%d puts in %d polls, want 1", sink.puts, polls)
	}
	if _, err := New(Config{}, eng, sink); err != ErrNoSources {
		t.Errorf("no sources: %v", err)
	}
}

// A history-server source: jobs the sink has are not downloaded again.
func TestPollerRESTSource(t *testing.T) {
	var taskRequests int
	mux := http.NewServeMux()
	const jobs = "/ws/v1/history/mapreduce/jobs"
	mux.HandleFunc(jobs, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jobs":{"job":[{"id":"job_1_1","state":"SUCCEEDED"},{"id":"job_1_2","state":"RUNNING"}]}}`)
	})
	mux.HandleFunc(jobs+"/job_1_1", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"job":{"id":"job_1_1","state":"SUCCEEDED","submitTime":1000,"startTime":2000,"finishTime":9000,"name":"n","user":"u"}}`)
	})
	mux.HandleFunc(jobs+"/job_1_1/tasks", func(w http.ResponseWriter, r *http.Request) {
		taskRequests++
		io.WriteString(w, `{"tasks":{"task":[]}}`)
	})
	mux.HandleFunc(jobs+"/job_1_1/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	eng := engine(t)
	sink := &memSink{}
	p, err := New(Config{Sources: []string{srv.URL + jobs}, Logger: quiet()}, eng, sink)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if sink.puts != 1 || taskRequests != 1 || sink.jobs["job_1_1"] == nil {
		t.Errorf("puts %d, task requests %d", sink.puts, taskRequests)
	}
}

// An analysis that fails (the collector could not read the job's traces)
// stores nothing and stops the poll; the next poll analyses the job.
func TestPollerAnalyzerError(t *testing.T) {
	dir := t.TempDir()
	if _, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0001", Maps: 2}); err != nil {
		t.Fatal(err)
	}
	eng := engine(t)
	fail := true
	a := AnalyzerFunc(func(ctx context.Context, j *job.Job) (*stratav1.JobResult, error) {
		if fail {
			return nil, errors.New("read traces: store busy")
		}
		return eng.Analyze(ctx, j)
	})
	sink := &memSink{}
	p, err := New(Config{Sources: []string{dir}, Logger: quiet()}, a, sink)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "store busy") || sink.puts != 0 {
		t.Fatalf("failing analysis: err %v, %d puts; want the error and nothing stored", err, sink.puts)
	}
	fail = false
	if st, err := p.Poll(context.Background()); err != nil || st.Analyzed != 1 || sink.puts != 1 {
		t.Fatalf("next poll: %+v, %v, %d puts; want the job analysed", st, err, sink.puts)
	}
}

// MaxJobBytes reaches the fetcher: a job whose model would pass it is
// reported and skipped; with the default the same job is analysed.
func TestPollerMaxJobBytes(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "application_1700000000000_0011"))
	if err != nil {
		t.Fatal(err)
	}
	gen.WriteSparkLog(f, gen.SparkApp{AppID: "application_1700000000000_0011", TasksPerStage: 200})
	f.Close()
	for _, tc := range []struct {
		max  int64
		want Stats
	}{
		{64 << 10, Stats{Units: 1, Errors: 1}},
		{0, Stats{Units: 1, Analyzed: 1}},
	} {
		sink := &memSink{}
		p, err := New(Config{Sources: []string{dir}, Logger: quiet(), MaxJobBytes: tc.max}, engine(t), sink)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.Poll(context.Background()); err != nil || got != tc.want {
			t.Fatalf("max %d: poll %+v %v, want %+v", tc.max, got, err, tc.want)
		}
	}
}
