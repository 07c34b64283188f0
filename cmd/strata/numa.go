package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "numa", args: "--app ID [--at TIME] [flags]", summary: "pages of an app per NUMA node per RDD", run: runNuma,
		help: `The distinct resident pages of each RDD's blocks on each NUMA node (unknown: the agent could
not tell), of the blocks live now or, with --at, of those live at that moment.

example:
  strata numa --app application_1700000000000_0001 --at +30s`})
}

// The help of the flags the per-app commands share.
const (
	appUsage = "Spark application `ID` (required; strata apps lists those the collector has)"
	rddUsage = "only RDD `ID`"
)

// appClient is a per-app command's parsed flags and connection.
type appClient struct {
	*clientFlags
	app string
	q   stratav1.QueryServiceClient
	cc  *grpc.ClientConn
}

// appCommand parses the flags the per-app commands share (--collector,
// --app, -o), and those extra adds, and dials. It returns nil and nil
// after -h.
func appCommand(name string, args []string, stdout, stderr io.Writer, extra ...func(*flag.FlagSet)) (*appClient, error) {
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	c := &appClient{clientFlags: addClientFlags(fs, true)}
	c.output.addNoHeaders(fs)
	fs.StringVar(&c.app, "app", "", appUsage)
	for _, add := range extra {
		add(fs)
	}
	if ok, err := parseClientFlags(fs, c.clientFlags, args, stdout, stderr); !ok {
		return nil, err
	}
	if c.app == "" {
		return nil, badUsage(name, "--app is required")
	}
	var err error
	if c.cc, c.q, err = c.dial(); err != nil {
		return nil, err
	}
	return c, nil
}

func runNuma(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var at momentFlag
	c, err := appCommand("numa", args, stdout, stderr, func(fs *flag.FlagSet) { fs.Var(&at, "at", momentUsage+"; without it, now") })
	if c == nil {
		return err
	}
	defer c.cc.Close()
	resp, err := c.q.Numa(ctx, &stratav1.NumaRequest{AppId: c.app, At: at.at()})
	if err != nil {
		return appError("numa", c.app, err)
	}
	at.say(stderr, "numa", resp.GetMoment())
	out := newOutput(stdout, c.output, "RDD", "NODE", "PAGES", "BYTES")
	for _, r := range resp.GetRows() {
		row := jsonform.NewNuma(r)
		node := fmt.Sprint(row.NumaNode)
		if row.NumaNode < 0 {
			node = "unknown"
		}
		if err := out.row(row, row.RDD, node, row.Pages, row.Bytes); err != nil {
			return errors.Join(fmt.Errorf("write numa: %w", err), out.flush())
		}
	}
	return out.flush()
}
