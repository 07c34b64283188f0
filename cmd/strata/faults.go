package main

import (
	"context"
	"fmt"
	"io"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "faults", summary: "page faults per RDD block of an app", run: runFaults})
}

// faultRow is one line of `strata faults -o json`.
type faultRow struct {
	RDD        int32  `json:"rdd"`
	Partition  int32  `json:"partition"`
	BlockID    string `json:"block_id"`
	ExecutorID string `json:"executor_id"`
	PID        uint32 `json:"pid"`
	Read       uint64 `json:"read"`
	Write      uint64 `json:"write"`
	Exec       uint64 `json:"exec"`
	Major      uint64 `json:"major"`
	// Unclassified faults were seen by the perf-event fallback hook, which
	// cannot tell reads from writes (kernels without page_fault_user).
	Unclassified uint64 `json:"unclassified"`
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
	out := newOutput(stdout, c.output, "RDD", "PART", "BLOCK", "EXECUTOR", "PID", "READ", "WRITE", "EXEC", "MAJOR", "UNCLASSIFIED")
	for _, r := range resp.GetRows() {
		f := r.GetFaults()
		row := faultRow{RDD: r.GetRddId(), Partition: r.GetPartition(), BlockID: r.GetBlockId(), ExecutorID: r.GetExecutorId(), PID: r.GetPid(),
			Read: f.GetRead(), Write: f.GetWrite(), Exec: f.GetExec(), Major: f.GetMajor(), Unclassified: f.GetUnclassified()}
		if err := out.row(row, row.RDD, row.Partition, row.BlockID, row.ExecutorID, row.PID, row.Read, row.Write, row.Exec, row.Major, row.Unclassified); err != nil {
			return fmt.Errorf("write faults: %w", err)
		}
	}
	return out.flush()
}
