package spark

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/testenv"
)

// benchResult is StrataBench's output line.
type benchResult struct {
	GetNs       float64 `json:"get_ns"`
	PutRemoveNs float64 `json:"put_remove_ns"`
}

// BenchmarkHook measures the hook inside a real Spark executor (local[1],
// Spark's own MemoryStore called in a loop by StrataBench): the cost added
// to an instrumented call with nothing to report (getBytes of a block not
// stored; target 150 ns), and to a reported operation (putBytes + remove of
// a 4 KiB block: a REGISTER and a FREE written to the agent's socket, so the
// cost per reported operation is half of it; target 5 us). The baseline is
// the same program without the hook, run in the same benchmark.
func BenchmarkHook(b *testing.B) {
	testenv.RequireJava(b)
	home := testenv.SparkHome(b, "3.5")
	v := strings.TrimPrefix(filepath.Base(home), "spark-")
	jar := testenv.Built(b, filepath.Join("sparkjob", "sparkjob-"+v+".jar"))
	var frames atomic.Uint64
	srv, err := hooksrv.Listen(hooksrv.Config{Path: filepath.Join(b.TempDir(), "hook.sock")},
		hooksrv.HandlerFunc(func(context.Context, hooksrv.Event) { frames.Add(1) }),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)
	defer srv.Close()
	strata := testenv.Built(b, "strata")
	hjar := testenv.Built(b, "jvmhook/strata-hook.jar")
	out, err := exec.Command(strata, "hook-opts", "--dir", filepath.Dir(hjar), "--socket", srv.Path()).Output()
	if err != nil {
		b.Fatalf("hook-opts: %v", err)
	}
	run := func(opts string) benchResult {
		cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), "--master", "local[1]",
			"--driver-memory", "1g", "--conf", "spark.driver.extraJavaOptions="+opts,
			"--class", "org.stratatrace.sparkjob.StrataBench", jar, "400000")
		cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("StrataBench: %v", err)
		}
		var r benchResult
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "{") {
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					b.Fatalf("bench output %q: %v", l, err)
				}
			}
		}
		return r
	}
	median := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	for i := 0; i < b.N; i++ {
		// Interleaved pairs, medians: other work shares the machine.
		var bg, hg, bp, hp []float64
		for pair := 0; pair < 3; pair++ {
			base := run("-XX:+UseParallelGC")
			hook := run(strings.TrimSpace(string(out)) + " -XX:+UseParallelGC")
			bg, hg = append(bg, base.GetNs), append(hg, hook.GetNs)
			bp, hp = append(bp, base.PutRemoveNs), append(hp, hook.PutRemoveNs)
		}
		baseGet, hookGet, basePut, hookPut := median(bg), median(hg), median(bp), median(hp)
		getAdded := hookGet - baseGet
		perOp := (hookPut - basePut) / 2
		b.ReportMetric(getAdded, "ns-added/unreported-call")
		b.ReportMetric(perOp, "ns-added/reported-op")
		b.ReportMetric(hookGet/baseGet, "x-unreported-call")
		b.ReportMetric(hookPut/basePut, "x-put-remove")
		b.Logf("getBytes (nothing to report): %.1f ns with the hook, %.1f without (%.2fx, +%.1f ns; target +150 ns)",
			hookGet, baseGet, hookGet/baseGet, getAdded)
		b.Logf("putBytes+remove (REGISTER+FREE sent): %.0f ns with the hook, %.0f without (%.2fx, +%.0f ns per reported operation; target 5000 ns); %d events received",
			hookPut, basePut, hookPut/basePut, perOp, frames.Load())
	}
}
