package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/query"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "trace", summary: "list the physical pages of an app's blocks, per record", run: runTrace})
}

// tracePage is one line of `strata trace -o json`.
type tracePage struct {
	Time       string   `json:"time"`
	Access     string   `json:"access"`
	RDD        int32    `json:"rdd"`
	Partition  int32    `json:"partition"`
	BlockID    string   `json:"block_id"`
	*hookBlock          // absent when the reporter did not say (no kind)
	ExecutorID string   `json:"executor_id"`
	PID        uint32   `json:"pid"`
	VAddr      string   `json:"vaddr"`
	Present    bool     `json:"present"`
	Swapped    bool     `json:"swapped"`
	PFN        uint64   `json:"pfn"`
	PAddr      string   `json:"paddr"`
	NumaNode   int32    `json:"numa_node"`
	THP        bool     `json:"thp"`
	Flags      []string `json:"flags"`
	// FlagsNotRead: the agent resolved this page without kpageflags
	// (--page-flags sampled), so Flags is empty for that reason.
	FlagsNotRead bool `json:"flags_not_read,omitempty"`
	// Coverage: what of the block's data the page's record holds (a walked
	// block's pages hold its objects; absent when the record says nothing).
	Coverage *coverageLine `json:"coverage,omitempty"`
}

func newTracePage(p *stratav1.TracePage) tracePage {
	is := func(s stratav1.PageState) bool { return p.GetState()&uint32(s) != 0 }
	return tracePage{
		Time:         time.Unix(0, p.GetTimeUnixNano()).UTC().Format(time.RFC3339Nano),
		Access:       enumName(p.GetAccess().String(), "ACCESS_KIND_"),
		RDD:          p.GetBlock().GetRddId(),
		Partition:    p.GetBlock().GetPartition(),
		BlockID:      p.GetBlock().GetBlockId(),
		hookBlock:    newHookBlock(p.GetBlock()),
		ExecutorID:   p.GetBlock().GetExecutorId(),
		PID:          p.GetPid(),
		VAddr:        hex(p.GetVaddr()),
		Present:      is(stratav1.PageState_PAGE_STATE_PRESENT),
		Swapped:      is(stratav1.PageState_PAGE_STATE_SWAPPED),
		PFN:          p.GetPfn(),
		PAddr:        hex(p.GetPaddr()),
		NumaNode:     p.GetNumaNode(),
		THP:          is(stratav1.PageState_PAGE_STATE_THP) || p.GetKpageflags()&(1<<stratav1.KPFTHP) != 0,
		Flags:        stratav1.KPageFlagNames(p.GetKpageflags()),
		FlagsNotRead: is(stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ),
		Coverage:     newCoverageLine(p.GetCoverage()),
	}
}

// coverageLine is a record's Coverage in `strata records` and `strata
// trace` JSON.
type coverageLine struct {
	Resolution    string `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Bytes         uint64 `json:"bytes"`
	Objects       uint64 `json:"objects,omitempty"`
	SharedObjects uint64 `json:"shared_objects,omitempty"`
	SharedBytes   uint64 `json:"shared_bytes,omitempty"`
	OpaqueObjects uint64 `json:"opaque_objects,omitempty"`
	GCEpoch       uint32 `json:"gc_epoch,omitempty"`
	Extents       uint32 `json:"extents,omitempty"`
	Detail        string `json:"detail,omitempty"`
}

func newCoverageLine(c *stratav1.Coverage) *coverageLine {
	if c == nil {
		return nil
	}
	return &coverageLine{Resolution: enumName(c.GetResolution().String(), "RESOLUTION_"), Bytes: c.GetBytes(),
		Objects: c.GetObjects(), SharedObjects: c.GetSharedObjects(), SharedBytes: c.GetSharedBytes(),
		OpaqueObjects: c.GetOpaqueObjects(), GCEpoch: c.GetGcEpoch(), Extents: c.GetExtents(), Detail: c.GetDetail()}
}

// hookBlock is what the JVM hook says of a block beyond its name: its kind
// (rdd, broadcast, tungsten_page, ...), which of the Spark block's buffers
// this range is, the task that put it (-1 outside a task), whether the
// block is deserialized (an array of references to objects the hook
// walks), Spark's size of the whole block, and, for a column buffer of a
// cached DataFrame batch, its column.
type hookBlock struct {
	Kind          string `json:"kind"`
	Chunk         uint32 `json:"chunk"`
	Chunks        uint32 `json:"chunks"`
	StageID       int32  `json:"stage_id"`
	StageAttempt  int32  `json:"stage_attempt"`
	TaskAttemptID int64  `json:"task_attempt_id"`
	ObjectGraph   bool   `json:"object_graph,omitempty"`
	SparkBytes    uint64 `json:"spark_bytes,omitempty"`
	CachedBatch   bool   `json:"cached_batch,omitempty"`
	Column        *int32 `json:"column,omitempty"` // absent: every column (an Arrow batch)
	ColumnName    string `json:"column_name,omitempty"`
}

// newHookBlock returns nil for a block whose kind nobody reported.
func newHookBlock(b *stratav1.SparkBlock) *hookBlock {
	if b.GetKind() == stratav1.BlockKind_BLOCK_KIND_UNSPECIFIED {
		return nil
	}
	return &hookBlock{Kind: enumName(b.GetKind().String(), "BLOCK_KIND_"), Chunk: b.GetChunk(), Chunks: b.GetChunks(),
		StageID: b.GetStageId(), StageAttempt: b.GetStageAttempt(), TaskAttemptID: b.GetTaskAttemptId(), ObjectGraph: b.GetObjectGraph(),
		SparkBytes: b.GetSparkBytes(), CachedBatch: b.GetCachedBatch(), Column: b.Column, ColumnName: b.GetColumnName()}
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
	stream, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: *app, RddId: rdd.v, Partition: part.v, Limit: uint32(*limit)})
	if err != nil {
		return rpcError("trace", err)
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
		tp := newTracePage(p)
		if err := out.row(tp, tp.Time, tp.Access, tp.RDD, tp.Partition, tp.BlockID, query.HoldsWords(p.GetCoverage()), tp.PID, tp.VAddr,
			tp.PFN, tp.PAddr, tp.NumaNode, pageState(tp), joinFlags(tp.Flags)); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	return out.flush()
}

// pageState is the table's STATE cell: present/swapped/absent, +thp.
func pageState(p tracePage) string {
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
