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
	register(command{name: "trace", summary: "list the physical pages of an app's blocks, per record", run: runTrace})
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
	app := fs.String("app", "", "Spark application id (required)")
	var rdd, part optInt32
	fs.Var(&rdd, "rdd", "only this RDD id")
	fs.Var(&part, "partition", "only this partition")
	limit := fs.Uint("limit", 0, "stop after this many pages (0 = all)")
	var at momentFlag
	fs.Var(&at, "at", momentUsage+"; without it, every record's pages")
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := cf.check(); err != nil {
		return err
	}
	if *app == "" {
		return errors.New("trace: --app is required")
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	stream, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: *app, RddId: rdd.v, Partition: part.v, Limit: uint32(*limit), At: at.at()})
	if err != nil {
		return rpcError("trace", err)
	}
	if at.set {
		md, err := stream.Header()
		if err != nil {
			return rpcError("trace", err)
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
			out.flush()
			return rpcError("trace", err)
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
