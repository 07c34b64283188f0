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

func init() {
	register(command{name: "heat", summary: "DAMON access heat of an app's RDDs: accesses per second per GiB, share cold", run: runHeat})
}

func runHeat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var rdd optInt32
	coldFor := query.DefaultColdFor
	c, err := appCommand("heat", args, stderr, func(fs *flag.FlagSet) {
		fs.Var(&rdd, "rdd", "only this RDD")
		fs.DurationVar(&coldFor, "cold-for", coldFor, "count pages as cold once DAMON has seen them unaccessed for this long")
	})
	if c == nil {
		return err
	}
	defer c.cc.Close()
	if coldFor < 0 {
		return fmt.Errorf("heat: --cold-for %v: want 0 or more", coldFor)
	}
	secs := coldFor.Seconds()
	resp, err := c.q.Heat(ctx, &stratav1.HeatRequest{AppId: c.app, RddId: rdd.v, ColdForSeconds: &secs})
	if err != nil {
		return rpcError("heat", err)
	}
	h := jsonform.NewHeat(c.app, query.HeatFromProto(resp))
	if c.output == "json" {
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
