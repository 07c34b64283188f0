package workloads

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"syscall"
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
	// Where each run's wall time went, without and with tracing.
	PhasesWithout, PhasesWith []Phases
	// Traced is the last traced run (its application is reported).
	Traced Result
}

// WallRatio is the median wall time with tracing over the median without.
func (p Paired) WallRatio() float64 { return ratio(p.WallWith, p.WallWithout) }

// CPURatio is the same for CPU time.
func (p Paired) CPURatio() float64 { return ratio(p.CPUWith, p.CPUWithout) }

// PairRatios is each pair's wall time with tracing over its wall time
// without: the two runs of a pair ran back to back, so drift on the
// machine falls on both.
func (p Paired) PairRatios() []float64 {
	n := min(len(p.WallWith), len(p.WallWithout))
	out := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if p.WallWithout[i] > 0 {
			out = append(out, float64(p.WallWith[i])/float64(p.WallWithout[i]))
		}
	}
	return out
}

// Spread is the run-to-run noise of runs of the same kind: half their range
// over their median (0.05: the runs lie within ±5 % of their median or
// closer). 0 for fewer than two runs.
func Spread(v []time.Duration) float64 {
	if len(v) < 2 {
		return 0
	}
	lo, hi := v[0], v[0]
	for _, d := range v {
		lo, hi = min(lo, d), max(hi, d)
	}
	m := Median(v)
	if m == 0 {
		return 0
	}
	return float64(hi-lo) / 2 / float64(m)
}

// Pooled is the overhead of tracing estimated from many pairs' ratios
// (PairRatios of every workload together): their geometric mean, and a 95 %
// interval for it from resampling the pairs (10,000 bootstrap resamples with
// a fixed seed, so the same runs always give the same interval). A median
// per workload over a few pairs carries the runs' noise; the pooled mean of
// all pairs is the estimate that noise disturbs least. Zeroes for no ratios.
func Pooled(ratios []float64) (mean, lo, hi float64) {
	n := len(ratios)
	if n == 0 {
		return 0, 0, 0
	}
	logs := make([]float64, n)
	sum := 0.0
	for i, r := range ratios {
		logs[i] = math.Log(r)
		sum += logs[i]
	}
	const resamples = 10000
	means := make([]float64, resamples)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range means {
		s := 0.0
		for j := 0; j < n; j++ {
			s += logs[rng.IntN(n)]
		}
		means[i] = s / float64(n)
	}
	sort.Float64s(means)
	return math.Exp(sum / float64(n)), math.Exp(means[resamples*25/1000]), math.Exp(means[resamples*975/1000-1])
}

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
	// Storage is the workloads' --storage ("": each cache at its own level).
	Storage string
	Pairs   int
	// HookOptions go to the hook in the traced runs (RunConfig.HookOptions).
	HookOptions string
	// Node traces the traced runs; it is down (Down) during the others,
	// which therefore run on a node without Strata.
	Node *Node
	// PlainLogs and TracedLogs receive the event logs of each kind of run.
	PlainLogs, TracedLogs string
	// TracedFirst starts the first pair with the traced run; pairs
	// alternate from there, so drift on a shared machine falls on both.
	TracedFirst bool
	// Progress, when set, gets one line per run.
	Progress io.Writer
}

// RunPairs runs a workload pc.Pairs times without and with tracing. The
// node is brought down before an untraced run and up before a traced one
// (outside the runs' times), and every run starts on a quiet machine
// (quiesce); a traced run's CPU counts what the agent and
// the collector spent from its start until everything it caused was
// stored, and a traced run whose data the agent lost (Complete) is an
// error. It leaves the node as the last run had it.
func RunPairs(ctx context.Context, e Env, pc PairsConfig) (Paired, error) {
	p := Paired{Workload: pc.Workload}
	for i := 0; i < pc.Pairs; i++ {
		order := []bool{false, true}
		if (i%2 == 1) != pc.TracedFirst {
			order = []bool{true, false}
		}
		for _, traced := range order {
			rc := RunConfig{Workload: pc.Workload, Size: pc.Size, Storage: pc.Storage, EventLogDir: pc.PlainLogs}
			if traced {
				rc.Node, rc.EventLogDir, rc.HookOptions = pc.Node, pc.TracedLogs, pc.HookOptions
				if err := pc.Node.Up(); err != nil {
					return p, err
				}
			} else if err := pc.Node.Down(); err != nil {
				return p, fmt.Errorf("%s: %w\n%s", pc.Workload, err, pc.Node.Logs())
			}
			quiesce()
			agent0, coll0, err := pc.Node.CPUs()
			if err != nil {
				return p, err
			}
			r, err := Run(ctx, e, rc)
			if err != nil {
				return p, err
			}
			if traced {
				err := pc.Node.Drained(3 * time.Minute)
				if err == nil {
					err = pc.Node.Complete()
				}
				if err != nil {
					return p, fmt.Errorf("%s: %w\n%s", pc.Workload, err, pc.Node.Logs())
				}
			}
			agent1, coll1, err := pc.Node.CPUs()
			if err != nil {
				return p, err
			}
			agent, coll := agent1-agent0, coll1-coll0
			cpu := r.CPU + agent + coll
			if traced {
				p.WallWith, p.CPUWith, p.Traced = append(p.WallWith, r.Wall), append(p.CPUWith, cpu), r
				p.PhasesWith = append(p.PhasesWith, r.Phases)
			} else {
				p.WallWithout, p.CPUWithout = append(p.WallWithout, r.Wall), append(p.CPUWithout, cpu)
				p.PhasesWithout = append(p.PhasesWithout, r.Phases)
			}
			if pc.Progress != nil {
				kind := "plain"
				if traced {
					kind = "traced"
				}
				hook := ""
				if traced {
					hook = fmt.Sprintf("  hook: sent %d dropped %d walks %d stale %d postponed %d walk-cpu %d ms", r.Hook["sent"], r.Hook["dropped"],
						r.Hook["walks"], r.Hook["stale"], r.Hook["postponed"], r.Hook["walk-cpu-ms"])
				}
				fmt.Fprintf(pc.Progress, "  %-18s %-6s wall %5.1f s  cpu %5.1f s (agent %.2f, collector %.2f)  (%s)  %s%s\n", pc.Workload, kind,
					r.Wall.Seconds(), cpu.Seconds(), agent.Seconds(), coll.Seconds(), r.Phases, r.App, hook)
			}
		}
	}
	return p, nil
}

// quietGap is how long quiesce waits after writing back dirty pages.
const quietGap = time.Second

// quiesce writes back every dirty page (the last run's event log, the
// store and spool a node wrote, a stopping collector's checkpoint) and
// waits quietGap, so that neither the kernel's writeback nor the work it
// defers after a process exits (freeing a stopped agent's BPF maps) falls
// into the next run, traced or not.
func quiesce() {
	syscall.Sync()
	time.Sleep(quietGap)
}
