package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "jobs", args: "[--severity LEVEL] [--limit N] [flags]", summary: "list analysed jobs, optionally at or above a severity",
		run: runJobs, help: `The jobs the collector analysed from the job histories it polls (its --history), newest first:
severity and score of the worst heuristic, type, user, application and finish time.

example:
  strata jobs --severity moderate --limit 20`})
	register(command{name: "job", args: "[flags] JOB_ID", summary: "show one analysed job with its heuristics", run: runJob,
		help: `One analysed job: who ran it, when, the resources it used and wasted, and each heuristic's
severity with its details. Flags may also follow the id.

example:
  strata job application_1700000000000_0001 -o json`})
}

// parseSeverity accepts NONE, low, Severe, SEVERITY_CRITICAL, ...
func parseSeverity(s string) (stratav1.Severity, error) { return query.ParseSeverity(s) }

// severityName is "none" … "critical", as the JSON says it.
func severityName(s stratav1.Severity) string { return jsonform.Severity(s) }

func msTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata jobs", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	sev := fs.String("severity", "none", "only jobs at or above `LEVEL`: none, low, moderate, severe, critical")
	limit := fs.Uint("limit", 0, "at most `N` jobs, newest first (0 = all)")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	min, err := parseSeverity(*sev)
	if err != nil {
		return badUsage("jobs", "--severity %q: want none, low, moderate, severe or critical", *sev)
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := q.Jobs(ctx, &stratav1.JobsRequest{MinSeverity: min, Limit: uint32(*limit)})
	if err != nil {
		return rpcError("jobs", err)
	}
	out := newOutput(stdout, cf.output, "JOB", "SEVERITY", "SCORE", "TYPE", "USER", "APP", "FINISHED", "NAME")
	for _, j := range resp.GetJobs() {
		r := jsonform.NewJob(j)
		if err := out.row(r, r.JobID, r.Severity, r.Score, r.Type, r.User, r.AppID, msTime(j.GetFinishUnixMs()), r.Name); err != nil {
			return fmt.Errorf("write jobs: %w", err)
		}
	}
	return out.flush()
}

func runJob(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata job", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	// Flags may also follow the id: strata job ID --collector ADDR.
	rest := fs.Args()
	if len(rest) > 1 {
		if ok, err := parseFlags(fs, rest[1:], stdout, stderr); !ok {
			return err
		}
		rest = append(rest[:1], fs.Args()...)
	}
	switch {
	case len(rest) == 0:
		return badUsage("job", "JOB_ID is required")
	case len(rest) > 1:
		return badUsage("job", "one JOB_ID, not %q", rest)
	}
	if err := cf.check(); err != nil {
		return err
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	j, err := q.Job(ctx, &stratav1.JobRequest{JobId: rest[0]})
	if err != nil {
		return rpcError("job", err)
	}
	if cf.output.json() {
		return newOutput(stdout, jsonRows()).row(jsonform.NewJob(j))
	}
	return writeJob(stdout, j)
}

// writeDetail prints "  name: value" and, below it, the long text indented
// four spaces, line by line, as Dr. Elephant shows a stack trace under its
// line. A multi-line value (a list of failed jobs) continues indented too.
func writeDetail(b *strings.Builder, d *stratav1.HeuristicDetail) {
	fmt.Fprintf(b, "  %s: %s\n", d.GetName(), strings.ReplaceAll(d.GetValue(), "\n", "\n    "))
	if text := strings.TrimRight(d.GetDetails(), "\n"); text != "" {
		for _, line := range strings.Split(text, "\n") {
			fmt.Fprintf(b, "    %s\n", line)
		}
	}
}

// writeJob prints one job for people: identity, metrics, then each
// heuristic with its details.
func writeJob(w io.Writer, j *stratav1.JobResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "job       %s (%s)\n", j.GetJobId(), j.GetType())
	fmt.Fprintf(&b, "name      %s\n", j.GetName())
	fmt.Fprintf(&b, "user      %s  queue %s\n", j.GetUser(), j.GetQueue())
	fmt.Fprintf(&b, "app       %s\n", j.GetAppId())
	fmt.Fprintf(&b, "ran       %s .. %s\n", msTime(j.GetStartUnixMs()), msTime(j.GetFinishUnixMs()))
	fmt.Fprintf(&b, "severity  %s (score %d)\n", severityName(j.GetSeverity()), j.GetScore())
	if m := j.GetMetrics(); m != nil {
		fmt.Fprintf(&b, "resources used %.2f GB-h, wasted %.2f GB-h, runtime %s, wait %s\n", m.GetUsedGbHours(), m.GetWastedGbHours(),
			time.Duration(m.GetRuntimeMs())*time.Millisecond, time.Duration(m.GetWaitMs())*time.Millisecond)
	}
	fmt.Fprintf(&b, "source    %s\n", j.GetSource())
	for _, warn := range j.GetWarnings() {
		fmt.Fprintf(&b, "warning   %s\n", warn)
	}
	for _, h := range j.GetHeuristics() {
		fmt.Fprintf(&b, "\n%s: %s (score %d)\n", h.GetName(), severityName(h.GetSeverity()), h.GetScore())
		for _, d := range h.GetDetails() {
			writeDetail(&b, d)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write job: %w", err)
	}
	return nil
}
