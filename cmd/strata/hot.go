package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "hot", args: "--app ID [--rdd ID] [--limit N] [flags]", summary: "an app's pages ranked by sampled page faults", run: runHot,
		help: "The application's pages ranked by the page faults the agent sampled in them; the first line says how hotness is measured."})
}

func runHot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata hot", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	app := fs.String("app", "", appUsage)
	var rdd optInt32
	fs.Var(&rdd, "rdd", rddUsage)
	limit := fs.Uint("limit", 20, "the hottest `N` pages (0 = all)")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	if *app == "" {
		return badUsage("hot", "--app is required")
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := q.Hot(ctx, &stratav1.HotRequest{AppId: *app, RddId: rdd.v, Limit: uint32(*limit)})
	if err != nil {
		return appError("hot", *app, err)
	}
	if cf.output != "json" {
		fmt.Fprintf(stdout, "# %s\n", resp.GetMethod())
	}
	out := newOutput(stdout, cf.output, "SAMPLES", "R", "W", "REMOTE", "RDD", "PART", "BLOCK", "PID", "VADDR", "PFN", "NODE", "FLAGS")
	for _, p := range resp.GetPages() {
		row := jsonform.NewHot(p)
		if err := out.row(row, row.Samples, row.Reads, row.Writes, row.CrossNode, row.RDD, row.Partition, row.BlockID, row.PID,
			row.VAddr, row.PFN, row.NumaNode, joinFlags(row.Flags)); err != nil {
			return errors.Join(fmt.Errorf("write hot pages: %w", err), out.flush())
		}
	}
	return out.flush()
}
