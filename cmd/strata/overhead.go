package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "overhead", summary: "fault rates and page-walk share per workload of an app", run: runOverhead})
}

// overheadRow is one line of `strata overhead -o json`. The walk fields are
// absent unless the PMU measured them; pmu_status then says why.
type overheadRow struct {
	ExecutorID      string     `json:"executor_id"`
	PID             uint32     `json:"pid"`
	Seconds         float64    `json:"seconds"`
	MinorFaults     uint64     `json:"minor_faults"`
	MajorFaults     uint64     `json:"major_faults"`
	FaultRatePerSec float64    `json:"fault_rate_per_sec"`
	RDDFaults       faultCount `json:"rdd_faults"`
	WalkPct         *float64   `json:"walk_pct,omitempty"`
	WalkPctRead     *float64   `json:"walk_pct_read,omitempty"`
	WalkPctWrite    *float64   `json:"walk_pct_write,omitempty"`
	WalkPctRDD      *float64   `json:"walk_pct_rdd,omitempty"`
	PMUStatus       string     `json:"pmu_status"`
}

type faultCount struct {
	Read  uint64 `json:"read"`
	Write uint64 `json:"write"`
	Exec  uint64 `json:"exec"`
	Major uint64 `json:"major"`
}

func runOverhead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := appCommand("overhead", args, stderr)
	if c == nil {
		return err
	}
	defer c.cc.Close()
	resp, err := c.q.Overhead(ctx, &stratav1.OverheadRequest{AppId: c.app})
	if err != nil {
		return rpcError("overhead", err)
	}
	out := newOutput(stdout, c.output, "EXECUTOR", "PID", "SECONDS", "MINOR", "MAJOR", "FAULTS/S", "RDD FAULTS R/W/X/MAJ", "PAGE WALK")
	for _, r := range resp.GetRows() {
		w, f := r.GetCounters(), r.GetRddFaults()
		row := overheadRow{
			ExecutorID: w.GetExecutorId(), PID: w.GetPid(),
			Seconds:     float64(w.GetEndUnixNano()-w.GetStartUnixNano()) / 1e9,
			MinorFaults: w.GetMinorFaults(), MajorFaults: w.GetMajorFaults(), FaultRatePerSec: r.GetFaultRatePerSec(),
			RDDFaults: faultCount{f.GetRead(), f.GetWrite(), f.GetExec(), f.GetMajor()},
			WalkPct:   r.WalkPct, WalkPctRead: r.WalkPctRead, WalkPctWrite: r.WalkPctWrite, WalkPctRDD: r.WalkPctRdd,
			PMUStatus: w.GetPmuStatus(),
		}
		rf := fmt.Sprintf("%d/%d/%d/%d", f.GetRead(), f.GetWrite(), f.GetExec(), f.GetMajor())
		if err := out.row(row, row.ExecutorID, row.PID, fmt.Sprintf("%.1f", row.Seconds), row.MinorFaults, row.MajorFaults,
			fmt.Sprintf("%.1f", row.FaultRatePerSec), rf, walkCell(row)); err != nil {
			return fmt.Errorf("write overhead: %w", err)
		}
	}
	return out.flush()
}

// walkCell shows the measured walk share, split when the parts were
// measured, or the PMU status that says why there is no number.
func walkCell(r overheadRow) string {
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
