package main

import (
	"context"
	"fmt"
	"io"

	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "faults", summary: "page faults per RDD block of an app", run: runFaults})
}

func runFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := appCommand("faults", args, stderr)
	if c == nil {
		return err
	}
	defer c.cc.Close()
	resp, err := c.q.Faults(ctx, &stratav1.FaultsRequest{AppId: c.app})
	if err != nil {
		return rpcError("faults", err)
	}
	// FILL-*: the faults the putting thread took while Spark filled the
	// block ("-" where no put of it was measured); -o json has all five
	// of its counters.
	out := newOutput(stdout, c.output, "RDD", "PART", "BLOCK", "EXECUTOR", "PID", "READ", "WRITE", "EXEC", "MAJOR", "UNCLASSIFIED",
		"FILL-READ", "FILL-WRITE", "FILL-MAJOR")
	for _, r := range resp.GetRows() {
		row := jsonform.NewFaults(r)
		fr, fw, fm := any("-"), any("-"), any("-")
		if f := row.Fill; f != nil {
			fr, fw, fm = f.Read, f.Write, f.Major
		}
		if err := out.row(row, row.RDD, row.Partition, row.BlockID, row.ExecutorID, row.PID, row.Read, row.Write, row.Exec, row.Major, row.Unclassified,
			fr, fw, fm); err != nil {
			return fmt.Errorf("write faults: %w", err)
		}
	}
	return out.flush()
}
