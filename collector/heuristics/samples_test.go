package heuristics_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// Expected severities on the sample files (STRATA_SAMPLES), derived by
// hand from the rules of docs/heuristics.md and cross-checked against the
// samples' INDEX.md. The samples
// are not the project's: the test skips when they are absent.

type sampleWant struct {
	file  string // relative to the samples directory
	jobID string
	// only, when set, lists every heuristic the job may report.
	only []string
	// sev maps heuristic name to expected severity (and score when >= 0).
	sev    map[string]heuristics.Severity
	score  map[string]int64
	jobSev heuristics.Severity
	check  func(t *testing.T, j *job.Job, r *stratav1.JobResult)
	anySev bool // do not check the job severity
}

func TestSampleSeverities(t *testing.T) {
	dir := testenv.Samples(t)
	eng, err := heuristics.NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	N, L, M := heuristics.None, heuristics.Low, heuristics.Moderate
	hist := "drelephant/history/done/2018/05/17/000000/"
	hs := "mrhistory/hadoop-hs-test/"
	mrNames := eng.Heuristics(job.MapReduce)
	allNone := func(names []string) map[string]heuristics.Severity {
		m := map[string]heuristics.Severity{}
		for _, n := range names {
			if n != "Exception" && n != "Distributed Cache Limit" {
				m[n] = N
			}
		}
		return m
	}
	wasteIsUse := func(t *testing.T, _ *job.Job, r *stratav1.JobResult) {
		if m := r.GetMetrics(); m.GetUsedGbHours() <= 0 || m.GetWastedGbHours() != m.GetUsedGbHours() {
			t.Errorf("zero memory counters: used %v wasted %v, want wasted = used > 0", m.GetUsedGbHours(), m.GetWastedGbHours())
		}
	}
	failedOnly := []string{"Exception"}
	tests := []sampleWant{
		{file: hist + "job_1526555215992_0001-1526555642677-user-QuasiMonteCarlo-1526555658299-1-1-SUCCEEDED-default-1526555648931.jhist",
			jobID: "job_1526555215992_0001", sev: allNone(mrNames), jobSev: N, check: wasteIsUse},
		{file: hs + "job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist",
			jobID: "job_1329348432655_0001", sev: allNone(mrNames), jobSev: N},
		{file: hs + "job_1393307629410_0001-1393307687476-user-Sleep+job-1393307723835-0-0-FAILED-default-1393307693920.jhist",
			jobID: "job_1393307629410_0001", only: failedOnly, sev: map[string]heuristics.Severity{"Exception": M}, jobSev: M},
		{file: hs + "job_2.4.0-FAILED.jhist", jobID: "job_1400204860297_0001", only: failedOnly,
			sev: map[string]heuristics.Severity{"Exception": M}, jobSev: M},
		{file: hs + "job_0.23.9-FAILED.jhist", jobID: "job_1399356417814_19732", only: failedOnly,
			sev: map[string]heuristics.Severity{"Exception": M}, jobSev: M},
		{file: "mrhistory/rumen/sls-2jobs2min-rumen-jh.json", jobID: "job_1369942127770_1205",
			sev: map[string]heuristics.Severity{"Mapper Time": L}, score: map[string]int64{"Mapper Time": 0}, jobSev: L},
		{file: "mrhistory/rumen/sls-2jobs2min-rumen-jh.json", jobID: "job_1369942127770_1206",
			sev: map[string]heuristics.Severity{"Mapper Time": L}, jobSev: L},
		{file: "mrhistory/rumen/zombie-input-trace.json", jobID: "job_200904211745_0004",
			sev: map[string]heuristics.Severity{"Mapper Time": M}, score: map[string]int64{"Mapper Time": 262}, jobSev: M},
		{file: "drelephant/spark_event_logs/event_log_1", jobID: "application_1457600942802_0093",
			sev: map[string]heuristics.Severity{"Spark Configuration": M}, jobSev: M,
			check: func(t *testing.T, _ *job.Job, r *stratav1.JobResult) {
				// 900 executors × 1 GiB × 55 273 ms = 50 939 596 MB·s (Dr. Elephant ignores that
				// dynamic allocation never started them).
				if got := r.GetMetrics().GetUsedGbHours(); math.Abs(got-50939596.0/1024/3600) > 1e-9 {
					t.Errorf("used %v GB·h, want 13.818", got)
				}
			}},
		{file: "sparkevents/apache-spark/application_1506645932520_24630151", jobID: "application_1506645932520_24630151",
			sev: map[string]heuristics.Severity{"Spark Configuration": N}, anySev: true},
		{file: "sparkevents/apache-spark/application_1628109047826_1317105", jobID: "application_1628109047826_1317105",
			sev: map[string]heuristics.Severity{"Spark Configuration": N}, anySev: true},
		{file: "sparkevents/apache-spark/application_1516285256255_0012", jobID: "application_1516285256255_0012",
			sev: map[string]heuristics.Severity{"Spark Configuration": M}, anySev: true},
		{file: "sparkevents/apache-spark/application_1553914137147_0018", jobID: "application_1553914137147_0018",
			sev: map[string]heuristics.Severity{"Spark Configuration": M}, anySev: true},
		{file: "sparkevents/sparklens/local-1532512550423", jobID: "local-1532512550423",
			sev: map[string]heuristics.Severity{"Spark Configuration": M}, anySev: true},
		// Job 1 of 3 failed (0.333 ⇒ MODERATE); 1 of 4 stages failed (0.25 ⇒ LOW), its
		// task failure rate 1/8 ⇒ LOW.
		{file: "sparkevents/apache-spark/local-1422981780767", jobID: "local-1422981780767",
			sev: map[string]heuristics.Severity{"Spark Job Metrics": M, "Spark Stage Metrics": L}, anySev: true},
		// GC ratio 344 / 10 693 ≈ 0.032: NONE, with the "too little GC" advice.
		{file: "sparkevents/apache-spark/app-20161116163331-0000", jobID: "app-20161116163331-0000",
			sev: map[string]heuristics.Severity{"Executor GC": N}, anySev: true,
			check: func(t *testing.T, _ *job.Job, r *stratav1.JobResult) {
				for _, h := range r.GetHeuristics() {
					if h.GetName() != "Executor GC" {
						continue
					}
					for _, d := range h.GetDetails() {
						if d.GetName() == "Gc ratio low" {
							return
						}
					}
					t.Errorf("Executor GC lacks the low-ratio advice: %v", h.GetDetails())
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.jobID, func(t *testing.T) {
			var found *job.Job
			err := fetcher.Fetch(context.Background(), filepath.Join(dir, tc.file), func(j *job.Job) error {
				if j.ID == tc.jobID {
					found = j
				}
				return nil
			})
			if err != nil {
				t.Fatalf("fetch %s: %v", tc.file, err)
			}
			if found == nil {
				t.Fatalf("%s: no job %s", tc.file, tc.jobID)
			}
			r := eng.Analyze(found)
			got := map[string]*stratav1.HeuristicResult{}
			for _, h := range r.GetHeuristics() {
				got[h.GetName()] = h
			}
			if tc.only != nil && len(got) != len(tc.only) {
				t.Errorf("heuristics %v, want only %v", keys(got), tc.only)
			}
			for name, want := range tc.sev {
				h := got[name]
				if h == nil {
					t.Errorf("%s: no result", name)
					continue
				}
				if h.GetSeverity() != want.Proto() {
					t.Errorf("%s = %v, want %v (details %v)", name, h.GetSeverity(), want, h.GetDetails())
				}
				if s, ok := tc.score[name]; ok && h.GetScore() != s {
					t.Errorf("%s score %d, want %d", name, h.GetScore(), s)
				}
			}
			if !tc.anySev && r.GetSeverity() != tc.jobSev.Proto() {
				t.Errorf("job severity %v, want %v", r.GetSeverity(), tc.jobSev)
			}
			if tc.check != nil {
				tc.check(t, found, r)
			}
		})
	}
}

func keys(m map[string]*stratav1.HeuristicResult) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

var update = flag.Bool("update", false, "rewrite testdata/samples.golden")

// TestSamplesGolden pins the analysis of every sample job: one line per job
// with severity, score, metrics and every heuristic's severity and score.
// After an intended change (here or in the fetcher) run
// go test ./collector/heuristics -run SamplesGolden -update and review the
// diff.
func TestSamplesGolden(t *testing.T) {
	dir := testenv.Samples(t)
	eng, err := heuristics.NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, sub := range []string{"drelephant", "mrhistory", "sparkevents/apache-spark", "sparkevents/sparklens"} {
		err := fetcher.Fetch(context.Background(), filepath.Join(dir, sub), func(j *job.Job) error {
			r := eng.Analyze(j)
			rel, _ := filepath.Rel(dir, j.Source)
			m := r.GetMetrics()
			var b strings.Builder
			fmt.Fprintf(&b, "%s %s %s %d used=%.6f wasted=%.6f runtime=%d wait=%d |", filepath.ToSlash(rel), r.GetJobId(),
				heuristics.Severity(r.GetSeverity()), r.GetScore(), m.GetUsedGbHours(), m.GetWastedGbHours(), m.GetRuntimeMs(), m.GetWaitMs())
			for _, h := range r.GetHeuristics() {
				fmt.Fprintf(&b, " %s=%s/%d", strings.ReplaceAll(h.GetName(), " ", "_"), heuristics.Severity(h.GetSeverity()), h.GetScore())
			}
			lines = append(lines, b.String())
			return nil
		})
		if err != nil {
			lines = append(lines, "# "+sub+": "+strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
		}
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "samples.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("sample analysis differs from %s at line %d:\n got: %s\nwant: %s\n(run with -update after checking the change)", golden, i+1, g, w)
			}
		}
	}
}
