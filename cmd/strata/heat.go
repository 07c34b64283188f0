package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// coldForUsage is the help of --cold-for, as heat and report take it.
const coldForUsage = "count pages as cold once DAMON has seen them unaccessed for `DURATION`"

func init() {
	register(command{name: "heat", args: "--app ID [--rdd ID] [--cold-for DURATION] [flags]",
		summary: "DAMON access heat of an app's RDDs: accesses per second per GiB, share cold", run: runHeat,
		help: `Per RDD, DAMON's access heat over its blocks' latest samples: accesses per second per GiB and the
share of bytes cold for at least --cold-for (docs/damon.md). RDDs without samples are left out;
an application without any says so on stderr.`})
}

func runHeat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var rdd optInt32
	coldFor := query.DefaultColdFor
	c, err := appCommand("heat", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(&rdd, "rdd", rddUsage)
		fs.DurationVar(&coldFor, "cold-for", coldFor, coldForUsage)
	})
	if c == nil {
		return err
	}
	defer c.cc.Close()
	if coldFor < 0 {
		return badUsage("heat", "--cold-for %v: want 0 or more", coldFor)
	}
	secs := coldFor.Seconds()
	resp, err := c.q.Heat(ctx, &stratav1.HeatRequest{AppId: c.app, RddId: rdd.v, ColdForSeconds: &secs})
	if err != nil {
		return appError("heat", c.app, err)
	}
	h := jsonform.NewHeat(c.app, query.HeatFromProto(resp))
	if c.output.json() {
		enc := jsonform.NewEncoder(stdout)
		return enc.Encode(h)
	}
	out := newOutput(stdout, c.output, "RDD", "BLOCKS", "SAMPLES", "HEAT")
	for _, r := range h.RDDs {
		if err := out.row(r, r.RDD, len(r.Blocks), r.Latest.Samples, r.Says); err != nil {
			return errors.Join(fmt.Errorf("write heat: %w", err), out.flush())
		}
	}
	if len(h.RDDs) == 0 {
		fmt.Fprintf(stderr, "strata heat: %s for %s\n", jsonform.NoHeat, c.app)
	}
	return out.flush()
}
