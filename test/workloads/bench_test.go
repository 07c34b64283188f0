package workloads

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTracingOverhead runs each of the eight workloads on real Spark
// ($STRATA_SMOKE_SPARK, default 3.5) at size $STRATA_SMTT_SIZE (default
// medium, four times make smtt's) without and with tracing (hook, agent,
// probes, collector), one interleaved pair per iteration, and reports the
// wall-time and CPU-time ratios of the pair (targets: wall ≤ 1.05× per
// workload; make smtt prints the median across them). CPU time counts the
// JVM and what the agent and collector spent on the run.
func BenchmarkTracingOverhead(b *testing.B) {
	e := testEnv(b, smokeSeries())
	size := os.Getenv("STRATA_SMTT_SIZE")
	if size == "" {
		size = "medium"
	}
	n, err := StartNode(e, "node", NodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Stop()
	plain, traced := filepath.Join(e.Work, "plain"), filepath.Join(e.Work, "traced")
	for _, d := range []string{plain, traced} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i, w := range Names {
		b.Run(w, func(b *testing.B) {
			for it := 0; it < b.N; it++ {
				p, err := RunPairs(context.Background(), e, PairsConfig{Workload: w, Size: size, Pairs: 1, Node: n,
					PlainLogs: plain, TracedLogs: traced, TracedFirst: (i+it)%2 == 1})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(p.WallRatio(), "x-wall")
				b.ReportMetric(p.CPURatio(), "x-cpu")
				b.ReportMetric(Median(p.WallWithout).Seconds(), "s-wall-untraced")
				b.Logf("%s (%s): wall %.1f s → %.1f s (%.3f×), cpu %.1f s → %.1f s (%.3f×)", w, size,
					Median(p.WallWithout).Seconds(), Median(p.WallWith).Seconds(), p.WallRatio(),
					Median(p.CPUWithout).Seconds(), Median(p.CPUWith).Seconds(), p.CPURatio())
			}
		})
	}
}
