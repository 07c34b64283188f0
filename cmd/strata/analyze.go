package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "analyze", args: "[-o table|json] [-heuristics FILE] [-severity LEVEL] [-q] PATH|URL...\n       strata analyze -defaults",
		summary: "analyse job histories, event logs and history servers (Dr. Elephant heuristics)", run: runAnalyze,
		help: `PATH is a job history (.jhist), rumen trace, Spark event log or a directory of them;
URL is a JobHistory server or Spark History Server.

Every job read is printed, even when other inputs fail; a job read from a damaged input is
printed with its warnings (on stderr in the table). Each input that cannot be read (one line
per file on stderr), that holds no job, or whose job has no id makes the exit status 1; jobs all
below -severity are not a failure (stderr says how many were analysed).

examples:
  strata analyze /var/log/spark/events
  strata analyze -severity moderate http://historyserver:18080
  strata analyze -defaults > thresholds.yaml; strata analyze -heuristics thresholds.yaml DIR`})
}

// errUnreadable is returned when at least one source could not be read.
var errUnreadable = errors.New("unreadable input")

// errNoJobs is returned when a source was read but held no job.
var errNoJobs = errors.New("no jobs found")

// errNoJobID is returned when a source held a job without an id: an
// input cut off before it says whose it is.
var errNoJobID = errors.New("a job without an id (the input ends before it names its job)")

// flagged lists the heuristics at MODERATE or above: "Mapper Time=critical".
func flagged(r *stratav1.JobResult) string {
	var out []string
	for _, h := range r.GetHeuristics() {
		if h.GetSeverity() >= stratav1.Severity_SEVERITY_MODERATE {
			out = append(out, h.GetName()+"="+severityName(h.GetSeverity()))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// progress reports on stderr at most once per interval, so short runs stay
// quiet and long ones show they are alive.
type progress struct {
	w        io.Writer
	every    time.Duration
	last     time.Time
	jobs     int
	quiet    bool
	reported bool
}

func (p *progress) tick(source string) {
	p.jobs++
	if p.quiet || time.Since(p.last) < p.every {
		return
	}
	p.last = time.Now()
	p.reported = true
	fmt.Fprintf(p.w, "strata analyze: %d jobs analysed (reading %s)\n", p.jobs, source)
}

func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata analyze", flag.ContinueOnError)
	fm := outputFormat{name: "table"}
	fs.StringVar(&fm.name, "o", "table", "output `FORMAT`: table or json (one job per line)")
	fm.addNoHeaders(fs)
	cfgPath := fs.String("heuristics", "", "YAML `FILE` overriding the heuristics' default thresholds (see -defaults), as strata-collector's --heuristics")
	fs.Func("config", "deprecated: the old name of -heuristics `FILE`", func(s string) error {
		fmt.Fprintln(stderr, "strata analyze: -config is deprecated: use -heuristics FILE (the heuristics' thresholds)")
		*cfgPath = s
		return nil
	})
	printDefaults := fs.Bool("defaults", false, "print the default thresholds as the YAML an override file is written against, and exit")
	quiet := fs.Bool("q", false, "no progress messages on stderr")
	minSev := fs.String("severity", "none", "only print jobs at or above `LEVEL`: none, low, moderate, severe, critical")
	// Flags may come before, between or after the sources.
	var sources []string
	for rest := args; ; {
		if ok, err := parseFlags(fs, rest, stdout, stderr); !ok {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		sources = append(sources, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if *printDefaults {
		_, err := stdout.Write(heuristics.DefaultsYAML())
		return err
	}
	if len(sources) == 0 {
		return badUsage("analyze", "a PATH or URL to analyse is required")
	}
	if err := fm.check("analyze"); err != nil {
		return err
	}
	min, err := parseSeverity(*minSev)
	if err != nil {
		return badUsage("analyze", "-severity %q: want none, low, moderate, severe or critical", *minSev)
	}
	cfg, err := heuristics.LoadConfig(*cfgPath)
	if err != nil {
		return fmt.Errorf("load heuristics config: %w", err)
	}
	eng, err := heuristics.NewEngine(cfg)
	if err != nil {
		return fmt.Errorf("build heuristics: %w", err)
	}

	// The table starts with its first row: no jobs print no empty table.
	var out *output
	prog := &progress{w: stderr, every: 2 * time.Second, last: time.Now(), quiet: *quiet}
	var failed, empty, noID []string
	printed := 0
	for _, src := range sources {
		read := 0
		err := fetcher.Fetch(ctx, src, func(j *job.Job) error {
			read++
			if j.Source == "" {
				j.Source = src
			}
			if j.ID == "" {
				noID = append(noID, j.Source)
				fmt.Fprintf(stderr, "strata analyze: %s: %v\n", j.Source, errNoJobID)
				for _, w := range j.Warnings {
					fmt.Fprintf(stderr, "strata analyze: %s: warning: %s\n", j.Source, w)
				}
				return nil
			}
			res := eng.Analyze(j)
			res.AnalyzedUnixMs = time.Now().UnixMilli()
			prog.tick(src)
			if res.GetSeverity() < min {
				return nil
			}
			if out == nil {
				out = newOutput(stdout, fm, "JOB", "TYPE", "SEVERITY", "SCORE", "USED_GBH", "WASTED_GBH", "RUNTIME", "WAIT", "FLAGGED")
			}
			printed++
			if !fm.json() {
				for _, w := range res.GetWarnings() {
					fmt.Fprintf(stderr, "strata analyze: %s: warning: %s\n", res.GetJobId(), w)
				}
			}
			m := res.GetMetrics()
			if err := out.row(jsonform.NewJob(res), res.GetJobId(), res.GetType(), severityName(res.GetSeverity()),
				res.GetScore(), fmt.Sprintf("%.3f", m.GetUsedGbHours()), fmt.Sprintf("%.3f", m.GetWastedGbHours()),
				time.Duration(m.GetRuntimeMs())*time.Millisecond, time.Duration(m.GetWaitMs())*time.Millisecond,
				flagged(res)); err != nil {
				return fmt.Errorf("write result: %w", err)
			}
			return nil
		})
		if ctx.Err() != nil {
			flushTable(out)
			return fmt.Errorf("analyze: %w", ctx.Err())
		}
		switch {
		case err != nil:
			failed = append(failed, src)
			reportFailure(stderr, src, err)
		case read == 0:
			empty = append(empty, src)
			fmt.Fprintf(stderr, "strata analyze: %s: %v (no job history, rumen trace or Spark event log with a job in it)\n", src, errNoJobs)
		}
	}
	if err := flushTable(out); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if prog.reported || (prog.jobs > 0 && printed == 0) {
		fmt.Fprintf(stderr, "strata analyze: %d jobs analysed, %d at or above severity %s\n", prog.jobs, printed, severityName(min))
	}
	if len(failed) > 0 {
		return fmt.Errorf("analyze %s: %w (%d of %d sources)", strings.Join(failed, ", "), errUnreadable, len(failed), len(sources))
	}
	if len(empty) > 0 {
		return fmt.Errorf("analyze %s: %w", strings.Join(empty, ", "), errNoJobs)
	}
	if len(noID) > 0 {
		return fmt.Errorf("analyze %s: %w", strings.Join(noID, ", "), errNoJobID)
	}
	return nil
}

// flushTable ends the output, if any row started it.
func flushTable(out *output) error {
	if out == nil {
		return nil
	}
	return out.flush()
}

// reportFailure prints why src could not be read, one line per file when
// a directory had several unreadable files.
func reportFailure(w io.Writer, src string, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			fmt.Fprintf(w, "strata analyze: %v\n", e)
		}
		return
	}
	fmt.Fprintf(w, "strata analyze: %s: %v\n", src, err)
}
