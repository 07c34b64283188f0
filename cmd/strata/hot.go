package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "hot", args: "--app ID [--rdd ID] [--limit N] [--by faults|heat] [flags]",
		summary: "an app's pages ranked by sampled page faults, or its blocks by DAMON access heat", run: runHot,
		help: "The application's pages ranked by the page faults the agent sampled in them (the first line says how hotness is measured),\n" +
			"or with --by heat its blocks ranked by their latest DAMON access heat."})
}

func runHot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata hot", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	app := fs.String("app", "", appUsage)
	var rdd optInt32
	fs.Var(&rdd, "rdd", rddUsage)
	limit := fs.Uint("limit", 20, "the hottest `N` pages or blocks (0 = all)")
	by := fs.String("by", "faults", "rank pages by sampled page faults, or blocks by their latest DAMON access heat: `faults|heat`")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	if *app == "" {
		return badUsage("hot", "--app is required")
	}
	if *by != "faults" && *by != "heat" {
		return badUsage("hot", "--by %q: want faults or heat", *by)
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	if *by == "heat" {
		return hotByHeat(ctx, q, *app, rdd.v, *limit, cf.output, stdout, stderr)
	}
	resp, err := q.Hot(ctx, &stratav1.HotRequest{AppId: *app, RddId: rdd.v, Limit: uint32(*limit)})
	if err != nil {
		return appError("hot", *app, err)
	}
	cf.output.comment(stdout, "# "+resp.GetMethod())
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

// heatMethod heads `strata hot --by heat`'s table.
const heatMethod = "# blocks by DAMON access heat, latest sample each: accesses per second per GiB (docs/damon.md); " +
	"partial samples (a shared kdamond's scheme sees only the regions it matched) and samples without a rate are not ranked"

// heatRank orders blocks hottest first: ranked blocks (a rate, not
// partial) by accesses per second per GiB, most first, then the others;
// ties by node, executor and block.
func heatRank(a, b jsonform.HeatBlock) int {
	ra, rb := heatRanked(a), heatRanked(b)
	switch {
	case ra && !rb:
		return -1
	case rb && !ra:
		return 1
	case ra && rb && *a.AccessesPerSecGiB != *b.AccessesPerSecGiB:
		return cmp.Compare(*b.AccessesPerSecGiB, *a.AccessesPerSecGiB)
	}
	return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.ExecutorID, b.ExecutorID), strings.Compare(a.BlockID, b.BlockID),
		cmp.Compare(a.PID, b.PID))
}

// heatRanked tells whether a block's latest sample can rank it: it has a
// rate and sees all its monitored pages.
func heatRanked(b jsonform.HeatBlock) bool { return b.AccessesPerSecGiB != nil && !b.Partial }

// hotByHeat writes an app's blocks ranked by their latest DAMON heat
// sample: as jsonform.HeatBlock lines with -o json, else a table.
func hotByHeat(ctx context.Context, q stratav1.QueryServiceClient, app string, rdd *int32, limit uint, f outputFormat,
	stdout, stderr io.Writer) error {
	resp, err := q.Heat(ctx, &stratav1.HeatRequest{AppId: app, RddId: rdd})
	if err != nil {
		return rpcError("hot", err)
	}
	h := jsonform.NewHeat(app, query.HeatFromProto(resp))
	type ranked struct {
		rdd int32
		jsonform.HeatBlock
	}
	var blocks []ranked
	for _, r := range h.RDDs {
		for _, b := range r.Blocks {
			blocks = append(blocks, ranked{r.RDD, b})
		}
	}
	slices.SortStableFunc(blocks, func(a, b ranked) int { return heatRank(a.HeatBlock, b.HeatBlock) })
	if limit > 0 && uint(len(blocks)) > limit {
		blocks = blocks[:limit]
	}
	if len(blocks) == 0 {
		fmt.Fprintf(stderr, "strata hot: %s for %s\n", jsonform.NoHeat, app)
	}
	f.comment(stdout, heatMethod)
	out := newOutput(stdout, f, "ACC/S/GIB", "ACCESS RATE", "COLD MiB", "COLD AGE S", "RDD", "PART", "BLOCK", "EXECUTOR", "PID",
		"NODE", "SAMPLED", "SOURCE")
	for _, b := range blocks {
		aps := "unknown (no rate)"
		switch {
		case b.Partial:
			aps = "partial"
		case b.AccessesPerSecGiB != nil:
			aps = fmt.Sprintf("%.3g", *b.AccessesPerSecGiB)
		}
		rate := "-"
		if b.AccessRate != nil {
			rate = fmt.Sprintf("%.3f", *b.AccessRate)
		}
		age := "-"
		if b.ColdAgeSeconds != nil {
			age = fmt.Sprintf("%.0f", *b.ColdAgeSeconds)
		}
		if err := out.row(b.HeatBlock, aps, rate, mib(b.ColdBytes), age, b.rdd, b.Partition, b.BlockID, b.ExecutorID, b.PID, b.Node,
			b.Time, b.Source); err != nil {
			return errors.Join(fmt.Errorf("write hot blocks: %w", err), out.flush())
		}
	}
	return out.flush()
}
