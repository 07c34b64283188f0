package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/gen"
)

// A real collector polling a history directory that holds a job history
// nested five million brackets deep (one such file used to kill the
// collector with a stack overflow at every poll, so at every restart) and a
// corrupt event log: it stays up, serves the good jobs, reports each bad
// file once however many polls pass, and analyses jobs added later.
func TestCollectorSurvivesHostileHistory(t *testing.T) {
	bin := bins(t)
	hist := t.TempDir()
	if _, err := gen.WriteMRJob(hist, gen.MRJob{JobID: "job_1700000000000_0001", Maps: 4, Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(hist, "job_1700000000000_0002-1-u-deep-2-1-1-SUCCEEDED-default-1.jhist")
	line := `{"type":"JOB_SUBMITTED","event":{"x":{"jobid":"job_1700000000000_0002","other":` +
		strings.Repeat("[", 5_000_000) + strings.Repeat("]", 5_000_000) + `}}}`
	if err := os.WriteFile(deep, []byte("Avro-Json\n{}\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hist, "application_1700000000000_0003.lz4"), []byte("LZ4Block garbage"), 0o644); err != nil {
		t.Fatal(err)
	}

	p := startProc(t, "collector", nil, filepath.Join(bin, "strata-collector"), "--listen", "127.0.0.1:0",
		"--store-dir", filepath.Join(t.TempDir(), "store"), "--history", hist, "--history-interval", "200ms", "--insecure")
	var addr string
	waitFor(t, "collector address", 60*time.Second, func() bool {
		for _, l := range strings.Split(p.out.String(), "\n") {
			if a, ok := strings.CutPrefix(l, "listening "); ok {
				addr = a
				return true
			}
		}
		return false
	})
	jobs := func() string { return runCLI(t, bin, "jobs", "--collector", addr, "-o", "json") }
	waitFor(t, "the good job", 60*time.Second, func() bool { return strings.Contains(jobs(), "job_1700000000000_0001") })
	time.Sleep(2 * time.Second) // ten more polls
	select {
	case err := <-p.done:
		t.Fatalf("collector exited: %v\n%s", err, p.out.String())
	default:
	}
	log := p.out.String()
	deepLines := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, filepath.Base(deep)) {
			deepLines++
		}
	}
	if strings.Contains(log, "fatal error") || strings.Count(log, "skipped until it changes") != 2 ||
		deepLines != 1 || !strings.Contains(log, "nested too deeply") {
		t.Errorf("want each bad file reported once, the deep one as too deeply nested:\n%.3000s", log)
	}

	// It keeps serving: a job written now is analysed.
	if _, err := gen.WriteMRJob(hist, gen.MRJob{JobID: "job_1700000000000_0004", Maps: 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job added later", 30*time.Second, func() bool { return strings.Contains(jobs(), "job_1700000000000_0004") })
	p.stop(t)
}
