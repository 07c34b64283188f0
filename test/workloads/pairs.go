package workloads

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"
)

// Paired is one workload run with and without tracing, in interleaved
// pairs.
type Paired struct {
	Workload string
	// Wall and CPU of each run, without and with tracing. The CPU of a
	// traced run includes what the agent and collector spent on it, from
	// its start until everything it caused was stored.
	WallWithout, WallWith []time.Duration
	CPUWithout, CPUWith   []time.Duration
	// Traced is the last traced run (its application is reported).
	Traced Result
}

// WallRatio is the median wall time with tracing over the median without.
func (p Paired) WallRatio() float64 { return ratio(p.WallWith, p.WallWithout) }

// CPURatio is the same for CPU time.
func (p Paired) CPURatio() float64 { return ratio(p.CPUWith, p.CPUWithout) }

func ratio(with, without []time.Duration) float64 {
	w, wo := Median(with), Median(without)
	if wo == 0 {
		return 0
	}
	return float64(w) / float64(wo)
}

// Median of durations; 0 for none.
func Median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// PairsConfig configures RunPairs.
type PairsConfig struct {
	Workload, Size string
	Pairs          int
	// Node traces the traced runs; it stays up (idle) during the others.
	Node *Node
	// PlainLogs and TracedLogs receive the event logs of each kind of run.
	PlainLogs, TracedLogs string
	// TracedFirst starts the first pair with the traced run; pairs
	// alternate from there, so drift on a shared machine falls on both.
	TracedFirst bool
	// Progress, when set, gets one line per run.
	Progress io.Writer
}

// RunPairs runs a workload pc.Pairs times without and with tracing.
func RunPairs(ctx context.Context, e Env, pc PairsConfig) (Paired, error) {
	p := Paired{Workload: pc.Workload}
	for i := 0; i < pc.Pairs; i++ {
		order := []bool{false, true}
		if (i%2 == 1) != pc.TracedFirst {
			order = []bool{true, false}
		}
		for _, traced := range order {
			rc := RunConfig{Workload: pc.Workload, Size: pc.Size, EventLogDir: pc.PlainLogs}
			if traced {
				rc.Node, rc.EventLogDir = pc.Node, pc.TracedLogs
			}
			before, err := pc.Node.CPU()
			if err != nil {
				return p, err
			}
			r, err := Run(ctx, e, rc)
			if err != nil {
				return p, err
			}
			if traced {
				if err := pc.Node.Drained(3 * time.Minute); err != nil {
					return p, fmt.Errorf("%s: %w\n%s", pc.Workload, err, pc.Node.Logs())
				}
			}
			after, err := pc.Node.CPU()
			if err != nil {
				return p, err
			}
			cpu := r.CPU + after - before
			if traced {
				p.WallWith, p.CPUWith, p.Traced = append(p.WallWith, r.Wall), append(p.CPUWith, cpu), r
			} else {
				p.WallWithout, p.CPUWithout = append(p.WallWithout, r.Wall), append(p.CPUWithout, cpu)
			}
			if pc.Progress != nil {
				kind := "plain"
				if traced {
					kind = "traced"
				}
				fmt.Fprintf(pc.Progress, "  %-18s %-6s wall %5.1f s  cpu %5.1f s  (Spark %.1f s)  %s\n", pc.Workload, kind,
					r.Wall.Seconds(), cpu.Seconds(), float64(r.SparkMs)/1000, r.App)
			}
		}
	}
	return p, nil
}
