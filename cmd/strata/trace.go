package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "trace", args: "--app ID [--rdd ID] [--partition N] [--at TIME] [--limit N] [flags]",
		summary: "list the physical pages of an app's blocks, per record", run: runTrace,
		help: `One line per page of each record of the application's blocks: when and how the block was
accessed, the Spark block, the process and virtual address, and the physical frame, NUMA node,
state and kernel page flags it was resolved to. With --at, only the pages the blocks live at that
moment held then (which moment is printed to stderr).

examples:
  strata trace --app application_1700000000000_0001 --rdd 7 --limit 100
  strata trace --app application_1700000000000_0001 --at peak -o json | jq .pfn`})
}

// optInt32 is an int32 flag that remembers whether it was set.
type optInt32 struct{ v *int32 }

func (o *optInt32) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.Itoa(int(*o.v))
}

func (o *optInt32) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return errors.New("not a 32-bit integer")
	}
	v := int32(n)
	o.v = &v
	return nil
}

func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata trace", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	app := fs.String("app", "", appUsage)
	var rdd, part optInt32
	fs.Var(&rdd, "rdd", rddUsage)
	fs.Var(&part, "partition", "only partition `N`")
	limit := fs.Uint("limit", 0, "stop after `N` pages (0 = all)")
	var at momentFlag
	fs.Var(&at, "at", momentUsage+"; without it, every record's pages")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	if *app == "" {
		return badUsage("trace", "--app is required")
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	stream, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: *app, RddId: rdd.v, Partition: part.v, Limit: uint32(*limit), At: at.at()})
	if err != nil {
		return appError("trace", *app, err)
	}
	if at.set {
		md, err := stream.Header()
		if err != nil {
			return appError("trace", *app, err)
		}
		at.say(stderr, "trace", headerWords(md))
	}
	out := newOutput(stdout, cf.output, "TIME", "ACCESS", "RDD", "PART", "BLOCK", "HOLDS", "PID", "VADDR", "PFN", "PADDR", "NODE", "STATE",
		"FLAGS")
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.flushRows()
			return appError("trace", *app, err)
		}
		tp := jsonform.NewPage(p)
		if err := out.row(tp, tp.Time, tp.Access, tp.RDD, tp.Partition, tp.BlockID, query.HoldsWords(p.GetCoverage()), tp.PID, tp.VAddr,
			tp.PFN, tp.PAddr, tp.NumaNode, pageState(tp), joinFlags(tp.Flags)); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	return out.flush()
}

// pageState is the table's STATE cell: present/swapped/absent, +thp.
func pageState(p jsonform.Page) string {
	s := "absent"
	switch {
	case p.Present:
		s = "present"
	case p.Swapped:
		s = "swapped"
	}
	if p.THP {
		s += "+thp"
	}
	return s
}

func joinFlags(f []string) string {
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}
