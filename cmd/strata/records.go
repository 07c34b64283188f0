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
	register(command{name: "records", summary: "list an app's records without pages: each block's life", run: runRecords})
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
	app := fs.String("app", "", "Spark application id (required)")
	var rdd, part optInt32
	fs.Var(&rdd, "rdd", "only this RDD id")
	fs.Var(&part, "partition", "only this partition")
	block := fs.String("block", "", "only this Spark block (e.g. rdd_7_3)")
	access := fs.String("access", "", "only these access kinds, comma-separated (alloc,read,write,free,fault,move)")
	limit := fs.Uint("limit", 0, "stop after this many records (0 = all)")
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := cf.check(); err != nil {
		return err
	}
	if *app == "" {
		return errors.New("records: --app is required")
	}
	kinds, err := query.ParseAccess(*access)
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	cc, q, err := cf.dial()
	if err != nil {
		return err
	}
	defer cc.Close()
	stream, err := q.Records(ctx, &stratav1.RecordsRequest{AppId: *app, RddId: rdd.v, Partition: part.v, BlockId: *block,
		Access: kinds, Limit: uint32(*limit)})
	if err != nil {
		return rpcError("records", err)
	}
	out := newOutput(stdout, cf.output, "TIME", "ACCESS", "RDD", "PART", "BLOCK", "CHUNK", "COLUMN", "KIND", "TASK", "PID", "VADDR", "LENGTH",
		"PAGES", "RESOLVED", "BYTES", "SHARED", "WHY")
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.flush()
			return rpcError("records", err)
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
