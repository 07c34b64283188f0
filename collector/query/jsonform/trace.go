package jsonform

import (
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Block names the Spark block a page, a record or a hot page belongs to;
// its fields are written inline in theirs.
type Block struct {
	RDD         int32  `json:"rdd"` // -1: not an RDD block
	Partition   int32  `json:"partition"`
	BlockID     string `json:"block_id"`
	ExecutorID  string `json:"executor_id"`
	HookBlockID uint64 `json:"hook_block_id"`
	Mode        string `json:"mode,omitempty"`     // storage, execution; absent unknown
	Location    string `json:"location,omitempty"` // on_heap, off_heap; absent unknown
	*Hook              // absent when the reporter did not say (no kind)
}

// Hook is what the JVM hook says of a block beyond its name: its kind
// (rdd, broadcast, tungsten_page, ...), which of the Spark block's buffers
// this range is, the task that put it (-1 outside a task), whether the
// block is deserialized (an array of references to objects the hook
// walks), Spark's size of the whole block and, for a column buffer of a
// cached DataFrame batch, its column.
type Hook struct {
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

// NewBlock is b's form.
func NewBlock(b *stratav1.SparkBlock) Block {
	out := Block{RDD: b.GetRddId(), Partition: b.GetPartition(), BlockID: b.GetBlockId(), ExecutorID: b.GetExecutorId(),
		HookBlockID: b.GetHookBlockId()}
	if b.GetMode() != stratav1.MemoryMode_MEMORY_MODE_UNSPECIFIED {
		out.Mode = enum(b.GetMode().String(), "MEMORY_MODE_")
	}
	if b.GetLocation() != stratav1.MemoryLocation_MEMORY_LOCATION_UNSPECIFIED {
		out.Location = enum(b.GetLocation().String(), "MEMORY_LOCATION_")
	}
	if b.GetKind() != stratav1.BlockKind_BLOCK_KIND_UNSPECIFIED {
		out.Hook = &Hook{Kind: enum(b.GetKind().String(), "BLOCK_KIND_"), Chunk: b.GetChunk(), Chunks: b.GetChunks(),
			StageID: b.GetStageId(), StageAttempt: b.GetStageAttempt(), TaskAttemptID: b.GetTaskAttemptId(),
			ObjectGraph: b.GetObjectGraph(), SparkBytes: b.GetSparkBytes(), CachedBatch: b.GetCachedBatch(), Column: b.Column,
			ColumnName: b.GetColumnName()}
	}
	return out
}

// Coverage is what of its block's data a record's pages hold.
type Coverage struct {
	Resolution    string `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Bytes         uint64 `json:"bytes"`
	Objects       uint64 `json:"objects,omitempty"`
	SharedObjects uint64 `json:"shared_objects,omitempty"`
	SharedBytes   uint64 `json:"shared_bytes,omitempty"`
	OpaqueObjects uint64 `json:"opaque_objects,omitempty"`
	GCEpoch       uint32 `json:"gc_epoch,omitempty"`
	Extents       uint32 `json:"extents,omitempty"`
	Detail        string `json:"detail,omitempty"` // why a block is references only
}

// NewCoverage is c's form, nil for nil (the record says nothing).
func NewCoverage(c *stratav1.Coverage) *Coverage {
	if c == nil {
		return nil
	}
	return &Coverage{Resolution: Resolution(c.GetResolution()), Bytes: c.GetBytes(), Objects: c.GetObjects(),
		SharedObjects: c.GetSharedObjects(), SharedBytes: c.GetSharedBytes(), OpaqueObjects: c.GetOpaqueObjects(),
		GCEpoch: c.GetGcEpoch(), Extents: c.GetExtents(), Detail: c.GetDetail()}
}

// Page is one physical page of a record: a line of `strata trace -o json`
// and of /api/v1/apps/{app}/trace.
type Page struct {
	Time   string `json:"time"`
	Access string `json:"access"`
	Block
	PID      uint32 `json:"pid"`
	VAddr    string `json:"vaddr"`
	Present  bool   `json:"present"`
	Swapped  bool   `json:"swapped"`
	PFN      uint64 `json:"pfn"` // 0: not present, or hidden (no CAP_SYS_ADMIN)
	PAddr    string `json:"paddr"`
	NumaNode int32  `json:"numa_node"` // -1 unknown
	THP      bool   `json:"thp"`
	// Flags are the page's kpageflags by name; MapCount its kpagecount.
	Flags    []string `json:"flags"`
	MapCount uint64   `json:"kpagecount"`
	// FlagsNotRead: the agent resolved this page without kpageflags
	// (--page-flags sampled), so Flags is empty for that reason.
	FlagsNotRead bool `json:"flags_not_read,omitempty"`
	// Coverage: what of the block's data the page's record holds.
	Coverage *Coverage `json:"coverage,omitempty"`
}

// NewPage is p's form.
func NewPage(p *stratav1.TracePage) Page {
	is := func(s stratav1.PageState) bool { return p.GetState()&uint32(s) != 0 }
	return Page{
		Time:         Time(p.GetTimeUnixNano()),
		Access:       Access(p.GetAccess()),
		Block:        NewBlock(p.GetBlock()),
		PID:          p.GetPid(),
		VAddr:        Hex(p.GetVaddr()),
		Present:      is(stratav1.PageState_PAGE_STATE_PRESENT),
		Swapped:      is(stratav1.PageState_PAGE_STATE_SWAPPED),
		PFN:          p.GetPfn(),
		PAddr:        Hex(p.GetPaddr()),
		NumaNode:     p.GetNumaNode(),
		THP:          is(stratav1.PageState_PAGE_STATE_THP) || p.GetKpageflags()&(1<<stratav1.KPFTHP) != 0,
		Flags:        stratav1.KPageFlagNames(p.GetKpageflags()),
		MapCount:     p.GetKpagecount(),
		FlagsNotRead: is(stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ),
		Coverage:     NewCoverage(p.GetCoverage()),
	}
}

// Record is one stored record without its pages: a line of `strata
// records -o json` and of /api/v1/apps/{app}/records.
type Record struct {
	Time   string `json:"time"`
	Access string `json:"access"`
	Block
	Node         string       `json:"node"`
	PID          uint32       `json:"pid"`
	TID          uint32       `json:"tid"`
	VAddr        string       `json:"vaddr"` // the range's start (a sampled fault's address)
	Length       uint64       `json:"length"`
	Pages        uint64       `json:"pages"`
	FreeReason   string       `json:"free_reason,omitempty"`
	FaultKind    string       `json:"fault_kind,omitempty"`
	Faults       *FaultCounts `json:"faults,omitempty"` // counters since registration, when sent
	ResolveError string       `json:"resolve_error,omitempty"`
	Coverage     *Coverage    `json:"coverage,omitempty"`
}

// NewRecord is r's form.
func NewRecord(r *stratav1.RecordRow) Record {
	l := Record{Time: Time(r.GetTimeUnixNano()), Access: Access(r.GetAccess()), Block: NewBlock(r.GetBlock()),
		Node: r.GetNodeName(), PID: r.GetPid(), TID: r.GetTid(), VAddr: Hex(r.GetVaddr()), Length: r.GetLength(),
		Pages: r.GetPages(), ResolveError: r.GetResolveError(), Coverage: NewCoverage(r.GetCoverage())}
	if r.GetFaults() != nil {
		f := NewFaultCounts(r.GetFaults())
		l.Faults = &f
	}
	if r.GetFreeReason() != stratav1.FreeReason_FREE_REASON_UNSPECIFIED {
		l.FreeReason = enum(r.GetFreeReason().String(), "FREE_REASON_")
	}
	if r.GetFaultKind() != stratav1.FaultKind_FAULT_KIND_UNSPECIFIED {
		l.FaultKind = enum(r.GetFaultKind().String(), "FAULT_KIND_")
	}
	return l
}

// Hot is one page ranked by sampled page faults: a line of `strata hot
// -o json` and an element of /api/v1/apps/{app}/hot's pages.
type Hot struct {
	Block
	PID       uint32   `json:"pid"`
	VAddr     string   `json:"vaddr"`
	Samples   uint64   `json:"samples"`
	Reads     uint64   `json:"reads"`
	Writes    uint64   `json:"writes"`
	CrossNode uint64   `json:"cross_node"` // samples whose CPU was on another node than the page
	PFN       uint64   `json:"pfn"`        // as of the latest sample
	NumaNode  int32    `json:"numa_node"`
	Flags     []string `json:"flags"`
}

// NewHot is p's form.
func NewHot(p *stratav1.HotPage) Hot {
	return Hot{Block: NewBlock(p.GetBlock()), PID: p.GetPid(), VAddr: Hex(p.GetVaddr()), Samples: p.GetSamples(),
		Reads: p.GetReads(), Writes: p.GetWrites(), CrossNode: p.GetCrossNode(), PFN: p.GetPfn(), NumaNode: p.GetNumaNode(),
		Flags: stratav1.KPageFlagNames(p.GetKpageflags())}
}

// HotPages is /api/v1/apps/{app}/hot: the pages and how hotness was
// measured.
type HotPages struct {
	Method string `json:"method"`
	Pages  []Hot  `json:"pages"`
}

// NewHotPages is r's form.
func NewHotPages(r *stratav1.HotResponse) HotPages {
	return HotPages{Method: r.GetMethod(), Pages: List(r.GetPages(), NewHot)}
}

// Numa is an RDD's pages on one NUMA node: a line of `strata numa -o
// json` and an element of /api/v1/apps/{app}/numa.
type Numa struct {
	RDD      int32  `json:"rdd"`
	NumaNode int32  `json:"numa_node"` // -1: unknown (not present, or PFN hidden)
	Pages    uint64 `json:"pages"`
	Bytes    uint64 `json:"bytes"`
}

// NewNuma is r's form.
func NewNuma(r *stratav1.NumaRow) Numa {
	return Numa{RDD: r.GetRddId(), NumaNode: r.GetNumaNode(), Pages: r.GetPages(), Bytes: r.GetBytes()}
}

// Faults are one block's page-fault counters: a line of `strata faults
// -o json` and an element of /api/v1/apps/{app}/faults.
type Faults struct {
	RDD        int32  `json:"rdd"`
	Partition  int32  `json:"partition"`
	BlockID    string `json:"block_id"`
	ExecutorID string `json:"executor_id"`
	PID        uint32 `json:"pid"`
	FaultCounts
	// Fill are the faults of filling the block (its puts' threads while
	// Spark filled it), absent when no put of it was measured.
	Fill *FaultCounts `json:"fill,omitempty"`
}

// NewFaults is r's form.
func NewFaults(r *stratav1.FaultRow) Faults {
	return Faults{RDD: r.GetRddId(), Partition: r.GetPartition(), BlockID: r.GetBlockId(), ExecutorID: r.GetExecutorId(),
		PID: r.GetPid(), FaultCounts: NewFaultCounts(r.GetFaults()), Fill: newFill(r.GetFill())}
}

// newFill is f's form, nil for nil (no fill measured).
func newFill(f *stratav1.FaultCounts) *FaultCounts {
	if f == nil {
		return nil
	}
	c := NewFaultCounts(f)
	return &c
}
