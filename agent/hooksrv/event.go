package hooksrv

import (
	"context"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Handler consumes the events of every session. HandleEvent is called from
// the session's own goroutine, in frame order for that session, and
// concurrently for different sessions, so it must be safe for concurrent use.
// It should return quickly: while it runs, that session's frames queue in
// the socket and, once the socket is full, the hook drops new ones (the JVM
// never waits). ctx is cancelled when the server closes.
type Handler interface {
	HandleEvent(ctx context.Context, ev Event)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev Event)

// HandleEvent calls f.
func (f HandlerFunc) HandleEvent(ctx context.Context, ev Event) { f(ctx, ev) }

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds. A session yields SessionStart (after a valid HELLO), then any
// number of block events, then exactly one SessionEnd. A connection that
// never sends a valid HELLO yields no events at all.
const (
	EventSessionStart EventKind = iota + 1
	EventRegister               // a block now occupies [Vaddr, Vaddr+Length)
	EventMove                   // a live block's data moved to [Vaddr, Vaddr+Length)
	EventAccess                 // a live block was read or written
	EventFree                   // a block is gone; its id is dead
	EventSessionEnd             // the JVM is gone: every block of the session is dead
	// EventWalk: a complete walk (every part) of an object-graph block, or
	// its STALE mark, or of a cached batch column's buffers (Event.Walk).
	EventWalk
	// EventGC: the hook saw collections end up to Event.GCEpoch; object
	// graphs' walks of earlier epochs are unsure until an EventChecked of
	// this epoch.
	EventGC
	// EventChecked: every object graph's walk of the session not marked
	// stale since holds at Event.GCEpoch.
	EventChecked
)

func (k EventKind) String() string {
	switch k {
	case EventSessionStart:
		return "session-start"
	case EventRegister:
		return "register"
	case EventMove:
		return "move"
	case EventAccess:
		return "access"
	case EventFree:
		return "free"
	case EventSessionEnd:
		return "session-end"
	case EventWalk:
		return "walk"
	case EventGC:
		return "gc"
	case EventChecked:
		return "checked"
	}
	return "unknown"
}

// Session describes one connected JVM. It is set from SO_PEERCRED and the
// HELLO frame and never changes afterwards; events share one *Session.
type Session struct {
	ID  uint64 // unique per server, counts from 1
	PID uint32 // the peer process (SO_PEERCRED), the owner of every range
	UID uint32
	GID uint32
	// Reported by the hook in HELLO.
	HookPID       uint32 // the pid HELLO named: PID, or PID as seen in its own pid namespace
	AppID         string
	ExecutorID    string
	PageSize      uint32
	ByteArrayBase uint16
	LongArrayBase uint16
	RefSize       uint16
	Walk          WalkMode  // whether the hook walks object graphs, and if not why
	HelloTime     time.Time // the hook's CLOCK_REALTIME at HELLO
	HelloMonoNs   uint64    // the hook's CLOCK_MONOTONIC at the same instant
	Accepted      time.Time // when the agent accepted the connection
}

// Block is a block as its REGISTER frame described it. One Spark block held
// in several buffers is several Blocks with the same Name, one per Chunk.
type Block struct {
	HookID    uint64 // the hook's block id, unique within the session
	RDDID     int32  // -1 when not an RDD block (pages: the task's RDD)
	Partition int32  // -1 when not applicable (pages: the task's partition)
	Name      string // Spark's BlockId name, e.g. rdd_7_3
	Mode      stratav1.MemoryMode
	Location  stratav1.MemoryLocation
	Kind      BlockKind
	// ObjectGraph: the range is a deserialized block's reference array; the
	// objects it refers to are elsewhere (EventWalk gives their ranges).
	ObjectGraph   bool
	Chunk         uint32 // this range's index within the Spark block
	Chunks        uint32 // ranges the Spark block has
	StageID       int32  // stage of the task that put it; -1 outside a task
	StageAttempt  int32  // -1 outside a task
	TaskAttemptID int64  // -1 outside a task
	SparkBytes    uint64 // Spark's size of the whole Spark block; 0 unknown
	// CachedBatch: the block is one column of a Spark SQL cached
	// DataFrame block, Chunk its index among the block's Chunks columns;
	// the range is the column's buffer in the first batch, and EventWalk
	// gives every batch's buffer. Column is the column (-1: the buffers of
	// every column, Arrow batches), ColumnName its name ("" unknown).
	// Column is -1 for every other block.
	CachedBatch bool
	Column      int32
	ColumnName  string
}

// block returns the Block a REGISTER describes.
func (r *Register) block() Block {
	return Block{
		HookID: r.BlockID, RDDID: r.RDDID, Partition: r.Partition, Name: r.Name,
		Mode: r.Mode, Location: r.Location, Kind: r.Kind, ObjectGraph: r.Flags&FlagObjectGraph != 0,
		Chunk: r.Chunk, Chunks: r.Chunks, StageID: r.StageID, StageAttempt: r.StageAttempt,
		TaskAttemptID: r.TaskAttemptID, SparkBytes: r.SparkBytes, CachedBatch: r.Flags&FlagCachedBatch != 0,
		Column: r.Column, ColumnName: r.Label,
	}
}

// Walk is one complete walk of an object-graph block's objects, or its
// STALE mark (State WalkStale, no extents), or of a cached batch column's
// buffers (State WalkDone, holding until the block's next walk).
type Walk struct {
	Seq     uint32 // per block, +1 per walk or STALE
	GCEpoch uint32 // the hook's finished-GC count the walk holds at
	State   WalkState
	// The block's objects (shared ones excluded) and their sizes summed;
	// objects reached that another block's walk holds; objects whose own
	// references could not be read (counted, not followed). A column's
	// walk: its buffers and their lengths summed, no shared or opaque.
	Objects, Bytes, SharedObjects, SharedBytes, OpaqueObjects uint64
	// Extents are ascending and disjoint. An object graph's are the
	// page-aligned ranges holding the objects (another block's walk may
	// share a page at an edge); a column's are its buffers' bytes exactly.
	Extents []Extent
}

// Event is one thing that happened in a session. Block events carry the
// block as registered and its current range, so a consumer needs no state
// of its own to build a record from one event.
type Event struct {
	Kind    EventKind
	Session *Session
	// Access is the proto access kind of a block event: ALLOC (register),
	// MOVE, READ, WRITE or FREE; UNSPECIFIED for session events.
	Access   stratav1.AccessKind
	Seq      uint32    // frame sequence number (0 for SessionEnd)
	TID      uint32    // thread the frame is about (hook-reported, not checked)
	Time     time.Time // the hook's time of the event; receive time for SessionEnd
	Received time.Time // when the agent read the frame

	Block Block  // block events
	Vaddr uint64 // block events: the block's current range in Session.PID
	// Length is the block's current length in bytes.
	Length uint64
	// AccessOffset and AccessLength are the accessed part of the block
	// (EventAccess only); AccessLength 0 means the whole block.
	AccessOffset uint64
	AccessLength uint64
	GCEpoch      uint32 // EventMove, EventGC, EventChecked: the hook's GC count
	// Walk is EventWalk's walk; Block, Vaddr and Length are then the block
	// as registered and its reference array's current range.
	Walk *Walk
	// FreeReason says why the block ended (EventFree only).
	FreeReason FreeReason

	// SessionEnd only: why the session ended (nil when the peer closed its
	// end or the server shut down) and the hook's last reported counters.
	Err         error
	PeerDropped uint64
	PeerSent    uint64
}
