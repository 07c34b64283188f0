package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/query"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "records", summary: "list an app's records without pages: each block's life", run: runRecords})
}

// recordLine is one line of `strata records -o json`.
type recordLine struct {
	Time        string `json:"time"`
	Access      string `json:"access"`
	RDD         int32  `json:"rdd"`
	Partition   int32  `json:"partition"`
	BlockID     string `json:"block_id"`
	HookBlockID uint64 `json:"hook_block_id"`
	ExecutorID  string `json:"executor_id"`
	Node        string `json:"node"`
	PID         uint32 `json:"pid"`
	TID         uint32 `json:"tid"`
	Mode        string `json:"mode,omitempty"`
	Location    string `json:"location,omitempty"`
	*hookBlock
	VAddr        string                `json:"vaddr"`
	Length       uint64                `json:"length"`
	Pages        uint64                `json:"pages"`
	FreeReason   string                `json:"free_reason,omitempty"`
	FaultKind    string                `json:"fault_kind,omitempty"`
	Faults       *stratav1.FaultCounts `json:"faults,omitempty"`
	ResolveError string                `json:"resolve_error,omitempty"`
	// Coverage: what of the block's data the record's pages hold.
	Coverage *coverageLine `json:"coverage,omitempty"`
}

func newRecordLine(r *stratav1.RecordRow) recordLine {
	b := r.GetBlock()
	l := recordLine{
		Time:   time.Unix(0, r.GetTimeUnixNano()).UTC().Format(time.RFC3339Nano),
		Access: enumName(r.GetAccess().String(), "ACCESS_KIND_"),
		RDD:    b.GetRddId(), Partition: b.GetPartition(), BlockID: b.GetBlockId(), HookBlockID: b.GetHookBlockId(),
		ExecutorID: b.GetExecutorId(), Node: r.GetNodeName(), PID: r.GetPid(), TID: r.GetTid(),
		hookBlock: newHookBlock(b),
		VAddr:     hex(r.GetVaddr()), Length: r.GetLength(), Pages: r.GetPages(),
		Faults: r.GetFaults(), ResolveError: r.GetResolveError(), Coverage: newCoverageLine(r.GetCoverage()),
	}
	if b.GetMode() != stratav1.MemoryMode_MEMORY_MODE_UNSPECIFIED {
		l.Mode = enumName(b.GetMode().String(), "MEMORY_MODE_")
	}
	if b.GetLocation() != stratav1.MemoryLocation_MEMORY_LOCATION_UNSPECIFIED {
		l.Location = enumName(b.GetLocation().String(), "MEMORY_LOCATION_")
	}
	if r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_UNSPECIFIED {
		l.FreeReason = enumName(r.GetFreeReason().String(), "FREE_REASON_")
	}
	if r.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_UNSPECIFIED {
		l.FaultKind = enumName(r.GetFaultKind().String(), "FAULT_KIND_")
	}
	return l
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

// parseAccess reads a comma-separated list of access kinds (alloc, read,
// write, free, fault, move).
func parseAccess(s string) ([]stratav1.AccessKind, error) {
	if s == "" {
		return nil, nil
	}
	var out []stratav1.AccessKind
	for _, name := range strings.Split(s, ",") {
		v, ok := stratav1.AccessKind_value["ACCESS_KIND_"+strings.ToUpper(strings.TrimSpace(name))]
		if !ok || v == 0 {
			return nil, fmt.Errorf("access %q: want alloc, read, write, free, fault or move", name)
		}
		out = append(out, stratav1.AccessKind(v))
	}
	return out, nil
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
	kinds, err := parseAccess(*access)
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
		l := newRecordLine(r)
		chunk, kind, task := "-", "-", "-"
		if h := l.hookBlock; h != nil {
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
