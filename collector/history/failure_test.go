package history

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/testenv"
)

// Files that cannot be read — one whose single event line nests five
// million brackets (it overflowed the stack: a fatal error on every restart
// of a collector polling it) and a corrupt compressed event log — are
// reported once and skipped until they change, while the good job beside
// them is analysed; a changed file is read again.
func TestPollerSkipsUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	good, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0001", Maps: 4, Reduces: 1})
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(dir, "job_1700000000000_0002-1-u-deep-2-1-1-SUCCEEDED-default-1.jhist")
	line := `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1700000000000_0002","other":` +
		strings.Repeat("[", 5_000_000) + strings.Repeat("]", 5_000_000) + `}}}`
	if err := os.WriteFile(deep, []byte("Avro-Json\n{}\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "application_1700000000000_0003.lz4")
	if err := os.WriteFile(corrupt, []byte("LZ4Block\x20garbage garbage garbage"), 0o644); err != nil {
		t.Fatal(err)
	}

	eng := engine(t)
	var logs testenv.Output
	reads := map[string]int{}
	var mu sync.Mutex
	cfg := Config{
		Sources: []string{dir},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
		Fetch: func(ctx context.Context, src string, fn func(*job.Job) error) error {
			mu.Lock()
			reads[filepath.Base(src)]++
			mu.Unlock()
			return fetcher.Fetch(ctx, src, fn)
		},
	}
	sink := &memSink{}
	p, err := New(cfg, eng, sink)
	if err != nil {
		t.Fatal(err)
	}
	poll := func(want Stats) {
		t.Helper()
		got, err := p.Poll(context.Background())
		if err != nil || got != want {
			t.Fatalf("poll: %+v %v, want %+v", got, err, want)
		}
	}
	poll(Stats{Units: 3, Analyzed: 1, Errors: 2})
	for range 3 {
		poll(Stats{Skipped: 1, Failed: 2})
	}
	if sink.jobs["job_1700000000000_0001"] == nil {
		t.Fatalf("good job not stored: %v", sink.jobs)
	}
	if n := strings.Count(logs.String(), "skipped until it changes"); n != 2 {
		t.Errorf("%d failure log lines, want one per file:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "nested too deeply") {
		t.Errorf("the deep file's reason is not logged:\n%s", logs.String())
	}
	if reads[filepath.Base(deep)] != 1 || reads[filepath.Base(corrupt)] != 1 || reads[filepath.Base(good)] != 1 {
		t.Errorf("reads %v: each file once", reads)
	}

	// The deep file is replaced by a readable history: it is read again.
	var b bytes.Buffer
	if err := gen.WriteJhist(&b, gen.MRJob{JobID: "job_1700000000000_0002", Maps: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deep, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(Stats{Units: 1, Skipped: 1, Failed: 1, Analyzed: 1})
	if sink.jobs["job_1700000000000_0002"] == nil {
		t.Error("the repaired history was not analysed")
	}
}

// A file that cannot be opened (permissions, a racing rename) is tried
// again at every poll, but counted and logged once while it fails the same
// way; once readable it is analysed.
func TestPollerRetriesUnopenable(t *testing.T) {
	dir := t.TempDir()
	path, err := gen.WriteMRJob(dir, gen.MRJob{JobID: "job_1700000000000_0001", Maps: 2})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine(t)
	var logs testenv.Output
	reads, denied := 0, true
	cfg := Config{
		Sources: []string{dir},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
		Fetch: func(ctx context.Context, src string, fn func(*job.Job) error) error {
			reads++
			if denied {
				return fmt.Errorf("open history file: %w", &fs.PathError{Op: "open", Path: src, Err: fs.ErrPermission})
			}
			return fetcher.Fetch(ctx, src, fn)
		},
	}
	sink := &memSink{}
	p, _ := New(cfg, eng, sink)
	for i, want := range []Stats{{Units: 1, Errors: 1}, {Units: 1}, {Units: 1}} {
		if got, err := p.Poll(context.Background()); err != nil || got != want {
			t.Fatalf("poll %d: %+v %v, want %+v", i, got, err, want)
		}
	}
	if reads != 3 || strings.Count(logs.String(), "retrying at every poll") != 1 {
		t.Errorf("%d reads, log:\n%s", reads, logs.String())
	}
	denied = false
	if got, err := p.Poll(context.Background()); err != nil || got != (Stats{Units: 1, Analyzed: 1}) {
		t.Fatalf("readable again: %+v %v", got, err)
	}
	if sink.jobs["job_1700000000000_0001"] == nil {
		t.Errorf("%s not analysed", path)
	}
}
