package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "faults", args: "--app ID [flags]", summary: "page faults per RDD block of an app", run: runFaults,
		help: `The kernel's page-fault counters of each RDD block in each process: read, write, exec and major
faults, and those the perf-event fallback saw without telling reads from writes (unclassified).`})
}

func runFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := appCommand("faults", args, stdout, stderr)
	if c == nil {
		return err
	}
	defer c.cc.Close()
	resp, err := c.q.Faults(ctx, &stratav1.FaultsRequest{AppId: c.app})
	if err != nil {
		return appError("faults", c.app, err)
	}
	// FILL-*, when a put of any block was measured: the faults the putting
	// thread took while Spark filled the block, "-" where no put of it was
	// measured; -o json has all five of its counters.
	header := []string{"RDD", "PART", "BLOCK", "EXECUTOR", "PID", "READ", "WRITE", "EXEC", "MAJOR", "UNCLASSIFIED"}
	fills := slices.ContainsFunc(resp.GetRows(), func(r *stratav1.FaultRow) bool { return r.GetFill() != nil })
	if fills {
		header = append(header, "FILL-READ", "FILL-WRITE", "FILL-MAJOR")
	}
	out := newOutput(stdout, c.output, header...)
	for _, r := range resp.GetRows() {
		row := jsonform.NewFaults(r)
		cells := []any{row.RDD, row.Partition, row.BlockID, row.ExecutorID, row.PID, row.Read, row.Write, row.Exec, row.Major, row.Unclassified}
		if f := row.Fill; f != nil {
			cells = append(cells, f.Read, f.Write, f.Major)
		} else if fills {
			cells = append(cells, "-", "-", "-")
		}
		if err := out.row(row, cells...); err != nil {
			return fmt.Errorf("write faults: %w", err)
		}
	}
	return out.flush()
}
