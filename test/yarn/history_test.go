package yarn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/test/workloads"
)

// checkSparkHistory serves the event logs the client-mode runs wrote with
// a real Spark History Server and reads every application through it
// with the collector's history poller: each is a job whose id is its YARN
// application id; what the fetcher reads from the server (the model and
// every heuristic's result) equals what it reads from the event log file;
// and the Spark heuristics that need YARN's values (Spark Configuration's
// executor count, memory, cores and memory overhead; the job metrics,
// computed from executor count and memory) hold the ones the jobs ran
// with.
func checkSparkHistory(t *testing.T, home, events string, apps []string) {
	h, err := workloads.StartHistoryServer(workloads.Env{SparkHome: home, Work: t.TempDir()}, events)
	if err != nil {
		t.Fatal(err)
	}
	h.StopAtCleanup(t)
	if err := h.WaitApps(apps, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	eng, err := heuristics.NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	fromServer := poll(t, eng, h.URL)
	for _, app := range apps {
		log, err := workloads.EventLogOf(events, app)
		if err != nil {
			t.Fatal(err)
		}
		findings, err := workloads.CompareWithEventLog(context.Background(), h, app, log)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("history server and event log differ: %s", f)
		}
		r := fromServer[app]
		if r == nil {
			t.Fatalf("%s: not analysed from the history server (analysed: %v)", app, keys(fromServer))
		}
		if r.GetJobId() != app || !strings.HasPrefix(r.GetJobId(), "application_") || r.GetType() != "spark" {
			t.Errorf("%s: analysed as job %q of type %q", app, r.GetJobId(), r.GetType())
		}
		conf := heuristic(r, "Spark Configuration")
		want := map[string]string{
			"spark.executor.instances": "2", "spark.executor.memory": "512 MB", "spark.executor.cores": "1",
			"spark.driver.memory": "512 MB", "spark.yarn.executor.memoryOverhead": "384 MB",
		}
		for _, d := range conf.GetDetails() {
			if w, ok := want[d.GetName()]; ok {
				if d.GetValue() != w {
					t.Errorf("%s: Spark Configuration says %s = %q, want %q", app, d.GetName(), d.GetValue(), w)
				}
				delete(want, d.GetName())
			}
		}
		if len(want) > 0 {
			t.Errorf("%s: Spark Configuration lacks %v", app, want)
		}
		// Used = executors × executor memory × the application's duration.
		m := r.GetMetrics()
		if m.GetUsedGbHours() <= 0 || m.GetRuntimeMs() <= 0 {
			t.Errorf("%s: metrics %+v: want the memory the two executors held", app, m)
		} else if gbh := 2 * 0.5 * float64(m.GetRuntimeMs()) / 3.6e6; m.GetUsedGbHours() < gbh*0.9 || m.GetUsedGbHours() > gbh*1.1 {
			t.Errorf("%s: %.6f GB·h used over %d ms, want 2 × 0.5 GB over that time: %.6f", app, m.GetUsedGbHours(), m.GetRuntimeMs(), gbh)
		}
		t.Logf("%s: from the history server, %d heuristics (severity %s) equal to its event log's; %.6f GB·h over %d ms",
			app, len(r.GetHeuristics()), r.GetSeverity(), m.GetUsedGbHours(), m.GetRuntimeMs())
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
