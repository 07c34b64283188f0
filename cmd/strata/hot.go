package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "hot", summary: "an app's pages ranked by sampled page faults", run: runHot})
}

// hotRow is one line of `strata hot -o json`.
type hotRow struct {
	RDD       int32    `json:"rdd"`
	Partition int32    `json:"partition"`
	BlockID   string   `json:"block_id"`
	PID       uint32   `json:"pid"`
	VAddr     string   `json:"vaddr"`
	Samples   uint64   `json:"samples"`
	Reads     uint64   `json:"reads"`
	Writes    uint64   `json:"writes"`
	CrossNode uint64   `json:"cross_node"`
	PFN       uint64   `json:"pfn"`
	NumaNode  int32    `json:"numa_node"`
	Flags     []string `json:"flags"`
}

func runHot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata hot", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	app := fs.String("app", "", "Spark application id (required)")
	var rdd optInt32
	fs.Var(&rdd, "rdd", "only this RDD id")
	limit := fs.Uint("limit", 20, "the hottest N pages (0 = all)")
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := cf.check(); err != nil {
		return err
	}
	if *app == "" {
		return errors.New("hot: --app is required")
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := q.Hot(ctx, &stratav1.HotRequest{AppId: *app, RddId: rdd.v, Limit: uint32(*limit)})
	if err != nil {
		return rpcError("hot", err)
	}
	if cf.output != "json" {
		fmt.Fprintf(stdout, "# %s\n", resp.GetMethod())
	}
	out := newOutput(stdout, cf.output, "SAMPLES", "R", "W", "REMOTE", "RDD", "PART", "BLOCK", "PID", "VADDR", "PFN", "NODE", "FLAGS")
	for _, p := range resp.GetPages() {
		row := hotRow{RDD: p.GetBlock().GetRddId(), Partition: p.GetBlock().GetPartition(), BlockID: p.GetBlock().GetBlockId(),
			PID: p.GetPid(), VAddr: hex(p.GetVaddr()), Samples: p.GetSamples(), Reads: p.GetReads(), Writes: p.GetWrites(),
			CrossNode: p.GetCrossNode(), PFN: p.GetPfn(), NumaNode: p.GetNumaNode(), Flags: stratav1.KPageFlagNames(p.GetKpageflags())}
		if err := out.row(row, row.Samples, row.Reads, row.Writes, row.CrossNode, row.RDD, row.Partition, row.BlockID, row.PID,
			row.VAddr, row.PFN, row.NumaNode, joinFlags(row.Flags)); err != nil {
			return errors.Join(fmt.Errorf("write hot pages: %w", err), out.flush())
		}
	}
	return out.flush()
}
