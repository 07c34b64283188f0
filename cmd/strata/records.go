package main

import (
	"cmp"
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
	register(command{name: "records", args: "--app ID [--rdd ID] [--partition N] [--block BLOCK] [--access KINDS] [--limit N] [flags]",
		summary: "list an app's records without pages: each block's life", run: runRecords,
		help: `One line per record of the application's blocks, oldest first: its time and access (alloc,
read, write, free, fault, move), the Spark block and buffer, the task, the process and virtual
range, how many pages it resolved and what of the block's data they hold.

example:
  strata records --app application_1700000000000_0001 --block rdd_7_3 --access alloc,free`})
}

// columnCell is the records table's COLUMN cell: a cached batch's column
// buffer's index and name ("*" for every column), "-" for other buffers.
func columnCell(b *stratav1.SparkBlock) string {
	if !b.GetCachedBatch() {
		return "-"
	}
	col := "*"
	if b.Column != nil {
		col = fmt.Sprint(b.GetColumn())
	}
	if b.GetColumnName() != "" {
		col += " " + b.GetColumnName()
	}
	return col
}

func runRecords(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata records", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	app := fs.String("app", "", appUsage)
	var rdd, part optInt32
	fs.Var(&rdd, "rdd", rddUsage)
	fs.Var(&part, "partition", "only partition `N`")
	block := fs.String("block", "", "only Spark block `BLOCK` (e.g. rdd_7_3)")
	access := fs.String("access", "", "only these access `KINDS`, comma-separated (alloc,read,write,free,fault,move)")
	limit := fs.Uint("limit", 0, "stop after `N` records (0 = all)")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	if *app == "" {
		return badUsage("records", "--app is required")
	}
	kinds, err := query.ParseAccess(*access)
	if err != nil {
		return badUsage("records", "%v", err)
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	stream, err := q.Records(ctx, &stratav1.RecordsRequest{AppId: *app, RddId: rdd.v, Partition: part.v, BlockId: *block,
		Access: kinds, Limit: uint32(*limit)})
	if err != nil {
		return appError("records", *app, err)
	}
	out := newOutput(stdout, cf.output, "TIME", "ACCESS", "RDD", "PART", "BLOCK", "CHUNK", "COLUMN", "KIND", "TASK", "PID", "VADDR", "LENGTH",
		"PAGES", "RESOLVED", "BYTES", "SHARED", "WHY")
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.flushRows()
			return appError("records", *app, err)
		}
		l := jsonform.NewRecord(r)
		chunk, kind, task := "-", "-", "-"
		if h := l.Hook; h != nil {
			chunk, kind = fmt.Sprintf("%d/%d", h.Chunk, h.Chunks), h.Kind
			if h.TaskAttemptID >= 0 {
				task = fmt.Sprintf("%d.%d/%d", h.StageID, h.StageAttempt, h.TaskAttemptID)
			}
		}
		why := cmp.Or(l.FreeReason, l.ResolveError, r.GetCoverage().GetDetail(), "-")
		covBytes, shared := "-", "-"
		if c := r.GetCoverage(); c != nil {
			covBytes = fmt.Sprint(c.GetBytes())
			if c.GetSharedBytes() > 0 || c.GetSharedObjects() > 0 {
				shared = fmt.Sprint(c.GetSharedBytes())
			}
		}
		if err := out.row(l, l.Time, l.Access, l.RDD, l.Partition, l.BlockID, chunk, columnCell(r.GetBlock()), kind, task, l.PID,
			l.VAddr, l.Length, l.Pages, query.ResolutionWord(r.GetCoverage().GetResolution()), covBytes, shared, why); err != nil {
			return fmt.Errorf("write records: %w", err)
		}
	}
	return out.flush()
}
