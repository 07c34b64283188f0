// Command smtt redoes SMTT's evaluation on real Spark (`make smtt`): the
// eight workloads with and without Strata's tracing in interleaved pairs,
// one table (wall times, overhead, records, pages, RDD occupation, faults
// per RDD, page-walk share or why there is none), the chart of `strata
// report` over the traced runs, the history server's view of the same
// runs compared with their event logs and the recorded REST responses, and
// the job heuristics the collector ran on them.
//
// Usage: smtt [-spark 3.5,4] [-size small] [-storage LEVEL] [-pairs 2]
// [-workloads A,B] [-hook-options walk=off,...] [-agent-args "..."]
// [-out DIR]; bin/ is $STRATA_BIN or ./bin. Without
// -storage each workload caches at its own levels. The untraced runs run
// with the agent and the collector stopped (nothing of Strata on the node),
// the traced runs with both started again beforehand. Files written to DIR:
// smtt-<spark>.txt (the table), smtt-<spark>.json, smtt-<spark>.svg and
// .png (the chart).
//
// smtt -pool [-out DIR] FILE.json... runs nothing: it puts the runs of
// earlier tables of one kind (Spark version, size, storage level, hook
// options, agent flags) together into smtt-<version>-pooled.{txt,json}, so
// that runs made at different times answer with more pairs than one
// table holds (docs/smtt-runs keeps the project's).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workloads"
)

type config struct {
	series      []string
	size        string
	storage     string
	hookOptions string
	agentArgs   string
	pairs       int
	tables      int // tables pooled into this one (-pool); 0 for a run
	pairsMax    int // with tables: the most pairs a workload has (pairs: the fewest)
	workloads   []string
	out         string
	bin         string
	root        string
	samples     string
}

func main() {
	var c config
	var series, names string
	var pooled bool
	flag.StringVar(&series, "spark", "3.5", "Spark series to run, comma-separated (3.5, 4)")
	flag.StringVar(&c.size, "size", "small", "workload input size: small, medium, large or xlarge (1, 4, 16, 64 times the inputs)")
	flag.StringVar(&c.storage, "storage", "", "storage level of every cache the workloads set up (default: each at its own level)")
	flag.StringVar(&c.hookOptions, "hook-options", "", "more options for the hook in traced runs, comma-separated (walk=off, walk-cpu=10)")
	flag.StringVar(&c.agentArgs, "agent-args", "", "more strata-agent flags in traced runs, space-separated (\"--damon off\")")
	flag.IntVar(&c.pairs, "pairs", 2, "paired runs (one without, one with tracing, order alternating) per workload")
	flag.StringVar(&names, "workloads", strings.Join(workloads.Names, ","), "workloads to run, comma-separated")
	flag.StringVar(&c.out, "out", "bin/smtt", "directory for the table, JSON and chart")
	flag.BoolVar(&pooled, "pool", false, "run nothing: pool the tables of earlier runs (their JSON files, the arguments) into one")
	flag.Parse()
	c.series = strings.Split(series, ",")
	c.workloads = strings.Split(names, ",")
	c.bin = os.Getenv("STRATA_BIN")
	if c.bin == "" {
		c.bin = "bin"
	}
	c.root, _ = os.Getwd()
	c.samples = os.Getenv("STRATA_SAMPLES")
	if c.samples == "" {
		c.samples = filepath.Join(c.root, "..", "shared", "data")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if pooled {
		err = pool(flag.Args(), c, os.Stdout)
	} else {
		err = run(ctx, c, os.Stdout)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "smtt:", err)
		os.Exit(1)
	}
}

// row is one workload's line of the table.
type row struct {
	Workload   string    `json:"workload"`
	Without    []float64 `json:"wall_without_s"`
	With       []float64 `json:"wall_with_s"`
	Ratio      float64   `json:"wall_ratio"`      // median with / median without
	PairRatios []float64 `json:"pair_ratios"`     // each pair's with / without
	Spread     float64   `json:"untraced_spread"` // half the untraced runs' range over their median
	// Outside the workload's work (launch, boot, stop, exit) and the work
	// itself, per run, in seconds.
	OutsideWithout []float64 `json:"outside_without_s"`
	OutsideWith    []float64 `json:"outside_with_s"`
	WorkWithout    []float64 `json:"work_without_s"`
	WorkWith       []float64 `json:"work_with_s"`
	CPUWithout     []float64 `json:"cpu_without_s"`
	CPUWith        []float64 `json:"cpu_with_s"`
	CPURatio       float64   `json:"cpu_ratio"`
	App            string    `json:"app"` // the traced run reported
	Records        uint64    `json:"records"`
	Pages          uint64    `json:"pages_resolved"`
	RDDs           int       `json:"rdds"`
	OfRSS          *float64  `json:"rdd_occupation_of_rss"`
	OfNode         *float64  `json:"rdd_occupation_of_node"`
	RDDFaults      uint64    `json:"rdd_faults"`
	RDDFillFaults  uint64    `json:"rdd_fill_faults"` // faults of filling the blocks
	PageWalk       string    `json:"page_walk"`
	Severity       string    `json:"job_severity"`
	Output         any       `json:"output"` // what the workload computed
}

// seconds and durations convert the runs' times for the JSON and back.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func durations(s []float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

// split gives each run's time outside the workload's work and its work.
func split(ps []workloads.Phases) (outside, work []float64) {
	for _, p := range ps {
		outside, work = append(outside, p.Outside().Seconds()), append(work, p.Work.Seconds())
	}
	return outside, work
}

func run(ctx context.Context, c config, stdout io.Writer) error {
	if c.pairs < 1 {
		return errors.New("check flags: -pairs must be at least 1")
	}
	bin, err := filepath.Abs(c.bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	var failed []string
	for _, s := range c.series {
		start := time.Now()
		if err := runSeries(ctx, c, bin, s, stdout); err != nil {
			fmt.Fprintf(stdout, "Spark %s: %v\n", s, err)
			failed = append(failed, s)
		}
		fmt.Fprintf(stdout, "Spark %s: %.1f min\n\n", s, time.Since(start).Minutes())
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed on Spark %s", strings.Join(failed, ", "))
	}
	return nil
}

func runSeries(ctx context.Context, c config, bin, series string, stdout io.Writer) error {
	home, err := workloads.SparkHomeOf(c.root, series)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "smtt-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	e := workloads.Env{Bin: bin, SparkHome: home, Work: work}
	if err := e.Check(); err != nil {
		return err
	}
	traced, plain := filepath.Join(work, "events-traced"), filepath.Join(work, "events-untraced")
	for _, d := range []string{traced, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	n, err := workloads.StartNode(e, "node", workloads.NodeOptions{History: fmt.Sprintf("http://127.0.0.1:%d", port), AgentArgs: strings.Fields(c.agentArgs)})
	if err != nil {
		return err
	}
	defer n.Stop()
	fmt.Fprintf(stdout, "Spark %s, size %s, storage %s, %d pairs per workload\n", e.SparkVersion(), c.size, storageName(c.storage), c.pairs)
	if c.agentArgs != "" {
		fmt.Fprintf(stdout, "agent flags added: %s\n", c.agentArgs)
	}

	version, err := strataVersion(ctx, bin)
	if err != nil {
		return err
	}
	started := time.Now()
	var rows []*row
	var apps []string
	for i, w := range c.workloads {
		p, err := workloads.RunPairs(ctx, e, workloads.PairsConfig{Workload: w, Size: c.size, Storage: c.storage, Pairs: c.pairs, Node: n, HookOptions: c.hookOptions,
			PlainLogs: plain, TracedLogs: traced, TracedFirst: i%2 == 1, Progress: stdout})
		if err != nil {
			return err
		}
		rows = append(rows, &row{Workload: w, Without: seconds(p.WallWithout), With: seconds(p.WallWith), Ratio: p.WallRatio(),
			PairRatios: p.PairRatios(), Spread: workloads.Spread(p.WallWithout), CPUWithout: seconds(p.CPUWithout), CPUWith: seconds(p.CPUWith), CPURatio: p.CPURatio(),
			App: p.Traced.App, Output: p.Traced.Output})
		r := rows[len(rows)-1]
		r.OutsideWithout, r.WorkWithout = split(p.PhasesWithout)
		r.OutsideWith, r.WorkWith = split(p.PhasesWith)
		apps = append(apps, p.Traced.App)
	}
	// The collector analyses and reports what the traced runs stored.
	if err := n.Up(); err != nil {
		return err
	}

	// The history server over the traced runs' logs (and the application
	// whose REST responses the fetcher tests recorded): the collector's
	// poller analyses them through it and joins their traces.
	recorded := filepath.Join(c.samples, "sparkevents", "apache-spark", workloads.RecordedApp)
	haveRecorded := workloads.CopyFile(recorded, filepath.Join(traced, workloads.RecordedApp)) == nil
	h, err := workloads.StartHistoryServerAt(e, traced, port)
	if err != nil {
		return err
	}
	defer h.Stop()
	if err := h.WaitApps(apps, 3*time.Minute); err != nil {
		return err
	}
	var findings []workloads.Finding
	for _, app := range apps {
		log, err := workloads.EventLogOf(traced, app)
		if err != nil {
			return err
		}
		fs, err := workloads.CompareWithEventLog(ctx, h, app, log)
		if err != nil {
			return err
		}
		findings = append(findings, fs...)
	}
	if haveRecorded {
		fs, err := workloads.CompareWithRecorded(ctx, h, c.samples)
		if err != nil {
			return err
		}
		findings = append(findings, fs...)
		if fs, err = workloads.CompareWithEventLog(ctx, h, workloads.RecordedApp, recorded); err != nil {
			return err
		}
		findings = append(findings, fs...)
	}
	for _, app := range apps {
		if err := waitAnalysed(ctx, n, app, 2*time.Minute); err != nil {
			return err
		}
	}
	for _, r := range rows {
		rep, err := n.Report(ctx, r.App)
		if err != nil {
			return err
		}
		if r.Records, r.Pages, err = n.RecordCount(ctx, r.App); err != nil {
			return err
		}
		r.RDDs, r.OfRSS, r.OfNode, r.Severity = len(rep.RDDs), rep.Occupation.OfRSS, rep.Occupation.OfNode, rep.Severity
		for _, x := range rep.RDDs {
			r.RDDFaults += x.Faults.Read + x.Faults.Write + x.Faults.Exec + x.Faults.Unclassified
			if f := x.FillFaults; f != nil {
				r.RDDFillFaults += f.Read + f.Write + f.Exec + f.Unclassified
			}
		}
		r.PageWalk = pageWalk(rep)
	}

	base := filepath.Join(c.out, "smtt-"+series)
	var text strings.Builder
	writeTable(&text, e.SparkVersion(), c, rows)
	if len(findings) == 0 {
		fmt.Fprintf(&text, "\nHistory server (Spark %s) vs event logs%s: no difference in %d applications\n", e.SparkVersion(),
			map[bool]string{true: " and recorded REST responses", false: ""}[haveRecorded], len(apps)+map[bool]int{true: 1}[haveRecorded])
	} else {
		fmt.Fprintf(&text, "\nHistory server (Spark %s) findings:\n", e.SparkVersion())
		for _, f := range findings {
			fmt.Fprintf(&text, "  %s\n", f)
		}
	}
	io.WriteString(stdout, "\n"+text.String())
	if err := os.WriteFile(base+".txt", []byte(text.String()), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(table{Spark: e.SparkVersion(), Size: c.size, Storage: storageName(c.storage), HookOptions: c.hookOptions, AgentArgs: c.agentArgs, Pairs: c.pairs,
		Strata: version, Started: started.UTC().Format(time.RFC3339), Rows: rows, Findings: findings}, "", "  ")
	if err := os.WriteFile(base+".json", js, 0o644); err != nil {
		return err
	}
	for _, ext := range []string{".svg", ".png"} {
		args := []string{"report", "--chart", base + ext, "--title", "SMTT's eight workloads on Spark " + e.SparkVersion() + " (Strata)"}
		for _, a := range apps {
			args = append(args, "--app", a)
		}
		if _, err := n.Strata(ctx, args...); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s.{txt,json,svg,png}\n", base)
	if len(findings) > 0 {
		return fmt.Errorf("%d differences between the history server and the other reads", len(findings))
	}
	return nil
}

// strataVersion is the version bin's binaries were built at: the second
// word of `strata version` ("strata VERSION GOVERSION").
func strataVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "strata"), "version").Output()
	if err != nil {
		return "", fmt.Errorf("strata version: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return "", fmt.Errorf("strata version: unexpected output %q", out)
	}
	return f[1], nil
}

// The targets for the wall overhead of tracing.
const (
	targetMedian = 1.02 // median across the workloads
	targetWorst  = 1.05 // every workload
)

// writeTable writes the evaluation's table.
func writeTable(w io.Writer, version string, c config, rows []*row) {
	hook := ""
	if c.hookOptions != "" {
		hook = ", hook options " + c.hookOptions
	}
	runs := fmt.Sprint(c.pairs)
	if c.pairsMax > c.pairs {
		runs += fmt.Sprintf("–%d", c.pairsMax)
	}
	if c.tables > 0 {
		runs += fmt.Sprintf(" paired runs from %d tables", c.tables)
	} else {
		runs += " paired runs"
	}
	fmt.Fprintf(w, "SMTT's evaluation on Spark %s (local[2], size %s, storage %s%s, %s, medians)\n\n", version, c.size,
		storageName(c.storage), hook, runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tWALL WITHOUT\tWALL WITH\tOVERHEAD\tNOISE\tPAIRS (95%)\tFIXED\tWORK\tCPU OVERHEAD\tRECORDS\tPAGES RESOLVED\tRDD OCC (RSS / NODE)\tFAULTS/RDD\tFILL FAULTS/RDD\tPAGE-WALK SHARE\tJOB")
	var walls, cpus, pairs, works, fixed []float64
	var above []string
	for _, r := range rows {
		perRDD, fillPerRDD := "-", "-"
		if r.RDDs > 0 {
			perRDD = fmt.Sprintf("%.0f", float64(r.RDDFaults)/float64(r.RDDs))
			fillPerRDD = fmt.Sprintf("%.0f", float64(r.RDDFillFaults)/float64(r.RDDs))
		}
		mean, lo, hi := workloads.Pooled(r.PairRatios)
		if lo > targetWorst {
			above = append(above, r.Workload)
		}
		fix := median(r.OutsideWith) - median(r.OutsideWithout)
		wr := ratios(r.WorkWith, r.WorkWithout)
		work, _, _ := workloads.Pooled(wr)
		fmt.Fprintf(tw, "%s\t%.1f s\t%.1f s\t%.3f×\t±%.1f%%\t%.3f× (%.2f–%.2f)\t%+.2f s\t%.3f×\t%.3f×\t%d\t%d\t%s / %s\t%s\t%s\t%s\t%s\n", r.Workload,
			median(r.Without), median(r.With), r.Ratio, 100*r.Spread, mean, lo, hi, fix, work, r.CPURatio, r.Records, r.Pages,
			pct(r.OfRSS), pct(r.OfNode), perRDD, fillPerRDD, r.PageWalk, orDash(r.Severity))
		walls, cpus, pairs = append(walls, r.Ratio), append(cpus, r.CPURatio), append(pairs, r.PairRatios...)
		works, fixed = append(works, wr...), append(fixed, fix)
	}
	tw.Flush()
	worst := func(v []float64) float64 {
		m := 0.0
		for _, x := range v {
			m = max(m, x)
		}
		return m
	}
	fmt.Fprintf(w, "\nwall overhead: median %.3f× across workloads (target ≤ %.2f×), worst %.3f× (target ≤ %.2f×)\n",
		median(walls), targetMedian, worst(walls), targetWorst)
	fmt.Fprintf(w, "CPU overhead (JVM + agent + collector): median %.3f×, worst %.3f×\n", median(cpus), worst(cpus))
	mean, lo, hi := workloads.Pooled(pairs)
	fmt.Fprintf(w, "all %d pairs pooled: wall overhead %.3f× (geometric mean of each pair's ratio; 95%% interval %.3f×–%.3f×)\n",
		len(pairs), mean, lo, hi)
	if len(above) == 0 {
		above = []string{"none"}
	}
	fmt.Fprintf(w, "workloads whose pairs' 95%% interval lies wholly above %.2f×: %s\n", targetWorst, strings.Join(above, ", "))
	wm, wlo, whi := workloads.Pooled(works)
	fmt.Fprintf(w, "what a traced run pays: %+.2f s outside the work (median across workloads) and %.3f× on the work itself (all pairs pooled, 95%% interval %.3f×–%.3f×)\n",
		median(fixed), wm, wlo, whi)
	fmt.Fprintln(w, "NOISE: the untraced runs' spread, half their range over their median")
	fmt.Fprintln(w, "PAIRS: the geometric mean of the workload's pair ratios, with a 95% bootstrap interval")
	fmt.Fprintln(w, "FIXED: median time outside the work (launch, JVM start, SparkSession stop, exit) with tracing minus without")
	fmt.Fprintln(w, "WORK: the geometric mean of the pairs' ratios of the work alone (main to the workload's end)")
}

// ratios is each pair's with / without (pairs with a zero left out).
func ratios(with, without []float64) []float64 {
	var out []float64
	for i := 0; i < min(len(with), len(without)); i++ {
		if with[i] > 0 && without[i] > 0 {
			out = append(out, with[i]/without[i])
		}
	}
	return out
}

// storageName names the -storage flag's value for the table.
func storageName(level string) string {
	if level == "" {
		return "each workload's own"
	}
	return level
}

// pageWalk is the measured share, or the reason there is none.
func pageWalk(r workloads.Report) string {
	for _, p := range r.PageWalk {
		if p.WalkPct != nil {
			return fmt.Sprintf("%.2f%%", *p.WalkPct)
		}
	}
	for _, p := range r.PageWalk {
		if p.PMUStatus != "" {
			return p.PMUStatus
		}
	}
	return "unavailable: no workload counters"
}

// waitAnalysed waits until the collector stored its analysis of app.
func waitAnalysed(ctx context.Context, n *workloads.Node, app string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := n.Strata(ctx, "job", app); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the collector did not analyse %s: %w", app, err)
		}
		time.Sleep(time.Second)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func pct(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
