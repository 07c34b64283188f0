package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "overhead", args: "--app ID [flags]", summary: "fault rates and page-walk share per workload of an app", run: runOverhead,
		help: `One line per process of the application: its measured seconds, minor and major faults and their
rate, the faults inside its RDD blocks, and the share of its cycles spent walking page tables when
the PMU measured it (otherwise why not).`})
}

func runOverhead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := appCommand("overhead", args, stdout, stderr)
	if c == nil {
		return err
	}
	defer c.cc.Close()
	resp, err := c.q.Overhead(ctx, &stratav1.OverheadRequest{AppId: c.app})
	if err != nil {
		return appError("overhead", c.app, err)
	}
	out := newOutput(stdout, c.output, "EXECUTOR", "PID", "SECONDS", "MINOR", "MAJOR", "FAULTS/S", "RDD FAULTS R/W/X/MAJ", "PAGE WALK")
	for _, r := range resp.GetRows() {
		row := jsonform.NewOverhead(r)
		f := row.RDDFaults
		rf := fmt.Sprintf("%d/%d/%d/%d", f.Read, f.Write, f.Exec, f.Major)
		cell := walkCell(walkShares{row.WalkPct, row.WalkPctRead, row.WalkPctWrite, row.WalkPctRDD, row.PMUStatus})
		if err := out.row(row, row.ExecutorID, row.PID, fmt.Sprintf("%.1f", row.Seconds), row.MinorFaults, row.MajorFaults,
			fmt.Sprintf("%.1f", row.FaultRatePerSec), rf, cell); err != nil {
			return fmt.Errorf("write overhead: %w", err)
		}
	}
	return out.flush()
}

// walkShares are one process's page-walk shares of cycles (percent; nil
// unmeasured) and the PMU status that says why they are absent.
type walkShares struct {
	WalkPct, WalkPctRead, WalkPctWrite, WalkPctRDD *float64
	PMUStatus                                      string
}

// walkCell shows the measured walk share, split when the parts were
// measured, or the PMU status that says why there is no number.
func walkCell(r walkShares) string {
	if r.WalkPct == nil {
		switch {
		case r.PMUStatus == "":
			return "unavailable: not reported"
		case strings.HasPrefix(r.PMUStatus, "unavailable"):
			return r.PMUStatus
		default:
			return "not measured (pmu " + r.PMUStatus + ")"
		}
	}
	s := fmt.Sprintf("%.2f%%", *r.WalkPct)
	sep := " ("
	for _, part := range []struct {
		name string
		v    *float64
	}{{"read", r.WalkPctRead}, {"write", r.WalkPctWrite}, {"rdd", r.WalkPctRDD}} {
		if part.v != nil {
			s += fmt.Sprintf("%s%s %.2f%%", sep, part.name, *part.v)
			sep = ", "
		}
	}
	if sep == ", " {
		s += ")"
	}
	return s
}
