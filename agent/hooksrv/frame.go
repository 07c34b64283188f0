package hooksrv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Constants of the wire format. The specification is the C header
// jvmhook/include/strata_hook.h; layout_test.go checks every constant and
// offset here against what the C compiler says about that header.
const (
	Magic        = 0x48525453 // "STRH" as a little-endian u32
	ProtoVersion = 3
	FrameMax     = 4096 // bytes in a frame, header included
	StrMax       = 255  // bytes in one string
	HeaderSize   = 32
)

// FrameType is the header's type field.
type FrameType uint16

// Frame types (enum strata_frame_type).
const (
	FrameHello    FrameType = 1
	FrameRegister FrameType = 2
	FrameMove     FrameType = 3
	FrameAccess   FrameType = 4
	FrameFree     FrameType = 5
	FrameDropped  FrameType = 6
	FrameWalk     FrameType = 7
	FrameGC       FrameType = 8
	FrameChecked  FrameType = 9
	FrameOff      FrameType = 10
)

func (t FrameType) String() string {
	switch t {
	case FrameHello:
		return "HELLO"
	case FrameRegister:
		return "REGISTER"
	case FrameMove:
		return "MOVE"
	case FrameAccess:
		return "ACCESS"
	case FrameFree:
		return "FREE"
	case FrameDropped:
		return "DROPPED"
	case FrameWalk:
		return "WALK"
	case FrameGC:
		return "GC"
	case FrameChecked:
		return "CHECKED"
	case FrameOff:
		return "OFF"
	}
	return fmt.Sprintf("FrameType(%d)", uint16(t))
}

// Header field offsets (struct strata_hdr).
const (
	offMagic       = 0
	offVersion     = 4
	offType        = 6
	offLength      = 8
	offSeq         = 12
	offTID         = 16
	offHdrReserved = 20
	offTime        = 24
)

// Body sizes and field offsets, relative to the start of the body.
const (
	helloSize          = 28
	helloPID           = 0
	helloPageSize      = 4
	helloMonotonic     = 8
	helloByteArrayBase = 16
	helloLongArrayBase = 18
	helloRefSize       = 20
	helloWalk          = 22
	helloReserved      = 23
	helloAppIDLen      = 24
	helloExecutorIDLen = 26
	registerSize       = 80
	registerBlockID    = 0
	registerVaddr      = 8
	registerLength     = 16
	registerPID        = 24
	registerRDDID      = 28
	registerPartition  = 32
	registerMode       = 36
	registerLocation   = 37
	registerNameLen    = 38
	registerKind       = 40
	registerFlags      = 41
	registerLabelLen   = 42
	registerChunk      = 44
	registerChunks     = 48
	registerStageID    = 52
	registerStageAtt   = 56
	registerColumn     = 60
	registerTaskAtt    = 64
	registerSparkBytes = 72
	moveSize           = 32
	moveBlockID        = 0
	moveVaddr          = 8
	moveLength         = 16
	movePID            = 24
	moveGCEpoch        = 28
	accessSize         = 32
	accessBlockID      = 0
	accessOffset       = 8
	accessLength       = 16
	accessKind         = 24
	accessReserved     = 25
	accessReserved2    = 28
	freeSize           = 16
	freeBlockID        = 0
	freeReason         = 8
	freeReserved       = 9
	freeReserved2      = 12
	droppedSize        = 16
	droppedDropped     = 0
	droppedSent        = 8
	walkSize           = 72
	walkBlockID        = 0
	walkGCEpoch        = 8
	walkSeq            = 12
	walkPart           = 16
	walkParts          = 18
	walkCount          = 20
	walkState          = 22
	walkReserved       = 23
	walkObjects        = 24
	walkBytes          = 32
	walkSharedObjects  = 40
	walkSharedBytes    = 48
	walkOpaqueObjects  = 56
	walkExtents        = 64
	walkReserved2      = 68
	extentSize         = 16
	epochSize          = 8
	epochGCEpoch       = 0
	epochReserved      = 4
	offSize            = 16
	offPID             = 0
	offReason          = 4
	offReserved        = 5
	offDetailLen       = 6
	offJava            = 8
	offReserved2       = 12
	// WalkExtentsMax is the most extents one WALK frame carries.
	WalkExtentsMax = 248
)

// Values of the mode, location and kind bytes. They equal the proto enums;
// layout_test.go checks both sides.
const (
	modeMax      = uint8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION)
	locationMax  = uint8(stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP)
	accessKindRd = uint8(stratav1.AccessKind_ACCESS_KIND_READ)
	accessKindWr = uint8(stratav1.AccessKind_ACCESS_KIND_WRITE)
)

// BlockKind says what a registered range holds (enum strata_block_kind).
type BlockKind uint8

// Block kinds.
const (
	KindRDD          BlockKind = 1 // RDDBlockId rdd_<rdd>_<partition>
	KindBroadcast    BlockKind = 2 // BroadcastBlockId
	KindShuffle      BlockKind = 3 // shuffle data, index and merged blocks
	KindTaskResult   BlockKind = 4 // TaskResultBlockId
	KindStream       BlockKind = 5 // StreamBlockId
	KindTungstenPage BlockKind = 6 // TaskMemoryManager page (execution memory)
	KindOther        BlockKind = 7 // any other BlockId
	kindMax                    = KindOther
)

func (k BlockKind) String() string {
	switch k {
	case KindRDD:
		return "rdd"
	case KindBroadcast:
		return "broadcast"
	case KindShuffle:
		return "shuffle"
	case KindTaskResult:
		return "task-result"
	case KindStream:
		return "stream"
	case KindTungstenPage:
		return "tungsten-page"
	case KindOther:
		return "other"
	}
	return fmt.Sprintf("BlockKind(%d)", uint8(k))
}

// REGISTER flags (STRATA_BLOCK_*).
const (
	// FlagObjectGraph: the range is a deserialized block's reference array;
	// the objects it points to are elsewhere, and WALK frames give their
	// ranges when the hook walks (Session.Walk).
	FlagObjectGraph = 0x01
	// FlagCachedBatch: the block is one column of a Spark SQL cached
	// DataFrame block (Register.Column, Register.Label); the range is the
	// column's buffer in the first batch and WALK frames give every
	// batch's.
	FlagCachedBatch = 0x02
	flagsAll        = FlagObjectGraph | FlagCachedBatch
)

// WalkMode is whether a hook walks object graphs, and if not why (HELLO
// walk, enum strata_walk_mode). 0 is a hook that is not a JVM.
type WalkMode uint8

// Walk modes.
const (
	WalkOn            WalkMode = 1 // WALK frames follow object-graph blocks
	WalkOff           WalkMode = 2 // turned off by the hook's walk=off option
	WalkUnsupportedGC WalkMode = 3 // a collector that moves objects while Java runs
	WalkNoLayout      WalkMode = 4 // object addresses or field offsets unknown
	walkModeMax                = WalkNoLayout
)

// String says the mode as a record's coverage detail does.
func (m WalkMode) String() string {
	switch m {
	case 0:
		return "not walked: the hook is not a JVM"
	case WalkOn:
		return "walking"
	case WalkOff:
		return "walking off (walk=off)"
	case WalkUnsupportedGC:
		return "walking unsupported: a collector that moves objects while Java runs (ZGC, Shenandoah)"
	case WalkNoLayout:
		return "walking unsupported: object addresses unknown in this JVM"
	}
	return fmt.Sprintf("WalkMode(%d)", uint8(m))
}

// WalkState says what a walk found (enum strata_walk_state).
type WalkState uint8

// Walk states.
const (
	WalkDone     WalkState = 1 // every reachable object up to the stops
	WalkCut      WalkState = 2 // the walk's object budget ended it: part of the objects
	WalkStale    WalkState = 3 // no extents: a GC moved the objects; a new walk follows
	walkStateMax           = WalkStale
)

func (w WalkState) String() string {
	switch w {
	case WalkDone:
		return "done"
	case WalkCut:
		return "cut"
	case WalkStale:
		return "stale"
	}
	return fmt.Sprintf("WalkState(%d)", uint8(w))
}

// Proto is k as records carry it (the numbers are the same; TestEnumsMatchProto).
func (k BlockKind) Proto() stratav1.BlockKind { return stratav1.BlockKind(k) }

// FreeReason says why a block ended (enum strata_free_reason).
type FreeReason uint8

// Free reasons.
const (
	FreeRemoved   FreeReason = 1 // MemoryStore.remove (unpersist, cleanup)
	FreeEvicted   FreeReason = 2 // evicted to make room for another block
	FreePageFreed FreeReason = 3 // TaskMemoryManager.freePage
	FreeTaskEnd   FreeReason = 4 // page freed by the task's final cleanup
	FreeCleared   FreeReason = 5 // MemoryStore.clear (block manager stopped)
	FreeCollected FreeReason = 6 // the hook found the heap array collected
	freeReasonMax            = FreeCollected
)

func (r FreeReason) String() string {
	switch r {
	case FreeRemoved:
		return "removed"
	case FreeEvicted:
		return "evicted"
	case FreePageFreed:
		return "page-freed"
	case FreeTaskEnd:
		return "task-end"
	case FreeCleared:
		return "cleared"
	case FreeCollected:
		return "collected"
	}
	return fmt.Sprintf("FreeReason(%d)", uint8(r))
}

// Proto is r as records carry it (the numbers are the same; TestEnumsMatchProto).
func (r FreeReason) Proto() stratav1.FreeReason { return stratav1.FreeReason(r) }

// OffReason says why a hook stays off in its JVM (OFF reason, enum
// strata_off_reason).
type OffReason uint8

// Off reasons.
const (
	OffJavaVersion OffReason = 1 // a Java the hook does not run on (older than 11)
	OffOptions     OffReason = 2 // the hook's options are wrong
	OffJar         OffReason = 3 // strata-hook.jar or its classes could not be loaded
	OffJVMTI       OffReason = 4 // JVMTI, or an event or capability it needs, unavailable
	OffJavaStart   OffReason = 5 // the Java side failed to start
	offReasonMax             = OffJavaStart
)

// String is the reason as the agent's metric labels it.
func (r OffReason) String() string {
	switch r {
	case OffJavaVersion:
		return "java_version"
	case OffOptions:
		return "options"
	case OffJar:
		return "jar"
	case OffJVMTI:
		return "jvmti"
	case OffJavaStart:
		return "java_start"
	}
	return fmt.Sprintf("OffReason(%d)", uint8(r))
}

// ErrMalformed is wrapped by every error Decode returns, together with one
// of the more specific sentinels below.
var ErrMalformed = errors.New("malformed frame")

// Specific decode failures; each error from Decode wraps ErrMalformed and
// exactly one of these.
var (
	ErrShort       = errors.New("frame shorter than its header")
	ErrBadMagic    = errors.New("bad magic")
	ErrBadVersion  = errors.New("unsupported version")
	ErrBadLength   = errors.New("length field does not match")
	ErrUnknownType = errors.New("unknown frame type")
	ErrBadString   = errors.New("bad string")
	ErrBadField    = errors.New("bad field value")
)

// Header is the fixed header every frame starts with.
type Header struct {
	Version uint16
	Type    FrameType
	Length  uint32
	Seq     uint32 // per-connection, +1 per frame the hook tried to send
	TID     uint32 // thread the frame is about
	TimeNs  uint64 // CLOCK_REALTIME ns since the epoch
}

// Time returns the header time as a time.Time.
func (h Header) Time() time.Time { return time.Unix(0, int64(h.TimeNs)) }

// Frame is one decoded frame: its header and a body of the type the header
// names (*Hello, *Register, *Move, *Access, *Free, *Dropped, *WalkPart,
// *GC, *Checked or *Off).
type Frame struct {
	Header
	Body Body
}

// Body is the type-specific part of a frame.
type Body interface{ frameType() FrameType }

// Hello opens a session (struct strata_hello).
type Hello struct {
	PID           uint32 // the JVM's getpid()
	PageSize      uint32
	MonotonicNs   uint64 // CLOCK_MONOTONIC at the header's time
	ByteArrayBase uint16 // Unsafe.arrayBaseOffset(byte[].class)
	LongArrayBase uint16 // Unsafe.arrayBaseOffset(long[].class)
	RefSize       uint16 // 4 with compressed oops, 8 without, 0 unknown
	Walk          WalkMode
	AppID         string
	ExecutorID    string
}

// Register announces a block's range (struct strata_register).
type Register struct {
	BlockID       uint64
	Vaddr         uint64
	Length        uint64
	PID           uint32
	RDDID         int32
	Partition     int32
	Mode          stratav1.MemoryMode
	Location      stratav1.MemoryLocation
	Kind          BlockKind
	Flags         uint8  // FlagObjectGraph, FlagCachedBatch
	Chunk         uint32 // index of this range in its Spark block, < Chunks
	Chunks        uint32 // ranges of the Spark block, >= 1
	StageID       int32  // -1: put outside a task
	StageAttempt  int32  // -1 as above
	TaskAttemptID int64  // -1 as above
	Column        int32  // FlagCachedBatch: the column, -1 every column; else -1
	SparkBytes    uint64 // Spark's size of the whole block; 0 unknown
	Name          string
	Label         string // FlagCachedBatch: the column's name, "" unknown
}

// Move gives a registered block's new range after a GC (struct strata_move).
type Move struct {
	BlockID uint64
	Vaddr   uint64
	Length  uint64
	PID     uint32
	GCEpoch uint32
}

// Access is one read or write of a block (struct strata_access).
type Access struct {
	BlockID uint64
	Offset  uint64 // relative to the block's start
	Length  uint64 // 0: the whole block
	Kind    stratav1.AccessKind
}

// Free ends a block (struct strata_free).
type Free struct {
	BlockID uint64
	Reason  FreeReason
}

// Dropped is the hook's cumulative send counters (struct strata_dropped).
type Dropped struct {
	Dropped uint64
	Sent    uint64
}

// Extent is one address range of a walk (struct strata_extent).
type Extent struct {
	Vaddr, Length uint64
}

// End is the first address past e.
func (e Extent) End() uint64 { return e.Vaddr + e.Length }

// WalkSummary is what every part of one walk repeats.
type WalkSummary struct {
	GCEpoch       uint32 // the hook's finished-GC count the walk holds at
	Seq           uint32 // per block, +1 per walk or STALE
	State         WalkState
	Objects       uint64
	Bytes         uint64
	SharedObjects uint64
	SharedBytes   uint64
	OpaqueObjects uint64
	TotalExtents  uint32 // in all parts
}

// WalkPart is one WALK frame (struct strata_walk and its extents).
type WalkPart struct {
	BlockID uint64
	Part    uint16
	Parts   uint16
	WalkSummary
	Extents []Extent // this part's, ascending and disjoint
}

// GC says collections ended up to GCEpoch (a GC frame).
type GC struct{ GCEpoch uint32 }

// Checked says the walks not marked stale hold at GCEpoch (a CHECKED frame).
type Checked struct{ GCEpoch uint32 }

// Off is a hook saying why it stays off in its JVM (struct strata_off): a
// connection's first and only frame.
type Off struct {
	PID    uint32 // the JVM's getpid()
	Reason OffReason
	Java   uint32 // the JVM's Java feature version (8, 11, 17, ...); 0 unknown
	Detail string // what the hook printed after "strata-hook: off: "
}

func (*Hello) frameType() FrameType    { return FrameHello }
func (*Register) frameType() FrameType { return FrameRegister }
func (*Move) frameType() FrameType     { return FrameMove }
func (*Access) frameType() FrameType   { return FrameAccess }
func (*Free) frameType() FrameType     { return FrameFree }
func (*Dropped) frameType() FrameType  { return FrameDropped }
func (*WalkPart) frameType() FrameType { return FrameWalk }
func (*GC) frameType() FrameType       { return FrameGC }
func (*Checked) frameType() FrameType  { return FrameChecked }
func (*Off) frameType() FrameType      { return FrameOff }

var le = binary.LittleEndian

func malformed(kind error, format string, args ...any) error {
	return fmt.Errorf("decode frame: %w: %w: %s", ErrMalformed, kind, fmt.Sprintf(format, args...))
}

// Decode parses exactly one frame from b, which must hold the whole frame
// and nothing else (one SEQPACKET packet). It does no I/O and keeps no
// reference to b.
func Decode(b []byte) (Frame, error) {
	var f Frame
	if len(b) < HeaderSize {
		return f, malformed(ErrShort, "%d bytes", len(b))
	}
	if m := le.Uint32(b[offMagic:]); m != Magic {
		return f, malformed(ErrBadMagic, "%#x", m)
	}
	f.Version = le.Uint16(b[offVersion:])
	if f.Version != ProtoVersion {
		return f, malformed(ErrBadVersion, "version %d, want %d", f.Version, ProtoVersion)
	}
	f.Type = FrameType(le.Uint16(b[offType:]))
	f.Length = le.Uint32(b[offLength:])
	if f.Length != uint32(len(b)) || len(b) > FrameMax {
		return f, malformed(ErrBadLength, "length field %d, packet %d bytes (max %d)", f.Length, len(b), FrameMax)
	}
	if r := le.Uint32(b[offHdrReserved:]); r != 0 {
		return f, malformed(ErrBadField, "header reserved %#x", r)
	}
	f.Seq = le.Uint32(b[offSeq:])
	f.TID = le.Uint32(b[offTID:])
	f.TimeNs = le.Uint64(b[offTime:])
	body := b[HeaderSize:]
	var err error
	switch f.Type {
	case FrameHello:
		f.Body, err = decodeHello(body)
	case FrameRegister:
		f.Body, err = decodeRegister(body)
	case FrameMove:
		f.Body, err = decodeMove(body)
	case FrameAccess:
		f.Body, err = decodeAccess(body)
	case FrameFree:
		f.Body, err = decodeFree(body)
	case FrameDropped:
		f.Body, err = decodeDropped(body)
	case FrameWalk:
		f.Body, err = decodeWalk(body)
	case FrameGC:
		var e uint32
		e, err = decodeEpoch(FrameGC, body)
		f.Body = &GC{GCEpoch: e}
	case FrameChecked:
		var e uint32
		e, err = decodeEpoch(FrameChecked, body)
		f.Body = &Checked{GCEpoch: e}
	case FrameOff:
		f.Body, err = decodeOff(body)
	default:
		return f, malformed(ErrUnknownType, "type %d", uint16(f.Type))
	}
	return f, err
}

// fixedBody checks that body is exactly size bytes.
func fixedBody(t FrameType, body []byte, size int) error {
	if len(body) != size {
		return malformed(ErrBadLength, "%v body %d bytes, want %d", t, len(body), size)
	}
	return nil
}

// takeString cuts a string of n bytes off the front of *tail.
func takeString(what string, tail *[]byte, n int) (string, error) {
	if n > StrMax {
		return "", malformed(ErrBadString, "%s %d bytes, max %d", what, n, StrMax)
	}
	if n > len(*tail) {
		return "", malformed(ErrBadString, "%s truncated: %d bytes, %d left", what, n, len(*tail))
	}
	s := (*tail)[:n]
	*tail = (*tail)[n:]
	if !utf8.Valid(s) {
		// JNI hands out modified UTF-8; proto strings must be valid UTF-8.
		return strings.ToValidUTF8(string(s), "\uFFFD"), nil
	}
	return string(s), nil
}

// checkRange rejects empty ranges and ranges that wrap around.
func checkRange(t FrameType, blockID, vaddr, length uint64) error {
	switch {
	case blockID == 0:
		return malformed(ErrBadField, "%v block id 0", t)
	case length == 0:
		return malformed(ErrBadField, "%v block %d length 0", t, blockID)
	case vaddr+length < vaddr:
		return malformed(ErrBadField, "%v block %d range %#x+%#x wraps", t, blockID, vaddr, length)
	}
	return nil
}

func decodeHello(body []byte) (*Hello, error) {
	if len(body) < helloSize {
		return nil, malformed(ErrBadLength, "HELLO body %d bytes, want >= %d", len(body), helloSize)
	}
	if r := body[helloReserved]; r != 0 {
		return nil, malformed(ErrBadField, "HELLO reserved %#x", r)
	}
	walk := WalkMode(body[helloWalk])
	if walk > walkModeMax {
		return nil, malformed(ErrBadField, "HELLO walk mode %d", walk)
	}
	h := &Hello{
		PID:           le.Uint32(body[helloPID:]),
		PageSize:      le.Uint32(body[helloPageSize:]),
		MonotonicNs:   le.Uint64(body[helloMonotonic:]),
		ByteArrayBase: le.Uint16(body[helloByteArrayBase:]),
		LongArrayBase: le.Uint16(body[helloLongArrayBase:]),
		RefSize:       le.Uint16(body[helloRefSize:]),
		Walk:          walk,
	}
	tail := body[helloSize:]
	var err error
	if h.AppID, err = takeString("app id", &tail, int(le.Uint16(body[helloAppIDLen:]))); err != nil {
		return nil, err
	}
	if h.ExecutorID, err = takeString("executor id", &tail, int(le.Uint16(body[helloExecutorIDLen:]))); err != nil {
		return nil, err
	}
	if len(tail) != 0 {
		return nil, malformed(ErrBadLength, "HELLO has %d bytes after its strings", len(tail))
	}
	return h, nil
}

func decodeRegister(body []byte) (*Register, error) {
	if len(body) < registerSize {
		return nil, malformed(ErrBadLength, "REGISTER body %d bytes, want >= %d", len(body), registerSize)
	}
	r := &Register{
		BlockID:   le.Uint64(body[registerBlockID:]),
		Vaddr:     le.Uint64(body[registerVaddr:]),
		Length:    le.Uint64(body[registerLength:]),
		PID:       le.Uint32(body[registerPID:]),
		RDDID:     int32(le.Uint32(body[registerRDDID:])),
		Partition: int32(le.Uint32(body[registerPartition:])),
	}
	if err := checkRange(FrameRegister, r.BlockID, r.Vaddr, r.Length); err != nil {
		return nil, err
	}
	mode, loc := body[registerMode], body[registerLocation]
	if mode > modeMax || loc > locationMax {
		return nil, malformed(ErrBadField, "REGISTER mode %d location %d", mode, loc)
	}
	r.Mode, r.Location = stratav1.MemoryMode(mode), stratav1.MemoryLocation(loc)
	r.Kind, r.Flags = BlockKind(body[registerKind]), body[registerFlags]
	if r.Kind == 0 || r.Kind > kindMax {
		return nil, malformed(ErrBadField, "REGISTER block %d kind %d", r.BlockID, r.Kind)
	}
	if r.Flags&^flagsAll != 0 {
		return nil, malformed(ErrBadField, "REGISTER block %d flags %#x", r.BlockID, r.Flags)
	}
	r.Column = int32(le.Uint32(body[registerColumn:]))
	label := int(le.Uint16(body[registerLabelLen:]))
	if r.Flags&FlagCachedBatch == 0 && (r.Column != -1 || label != 0) {
		return nil, malformed(ErrBadField, "REGISTER block %d column %d, label of %d bytes, not a cached batch", r.BlockID, r.Column, label)
	}
	if r.Column < -1 {
		return nil, malformed(ErrBadField, "REGISTER block %d column %d", r.BlockID, r.Column)
	}
	r.SparkBytes = le.Uint64(body[registerSparkBytes:])
	r.Chunk, r.Chunks = le.Uint32(body[registerChunk:]), le.Uint32(body[registerChunks:])
	if r.Chunks == 0 || r.Chunk >= r.Chunks {
		return nil, malformed(ErrBadField, "REGISTER block %d chunk %d of %d", r.BlockID, r.Chunk, r.Chunks)
	}
	r.StageID = int32(le.Uint32(body[registerStageID:]))
	r.StageAttempt = int32(le.Uint32(body[registerStageAtt:]))
	r.TaskAttemptID = int64(le.Uint64(body[registerTaskAtt:]))
	n := int(le.Uint16(body[registerNameLen:]))
	if n == 0 {
		return nil, malformed(ErrBadString, "REGISTER block %d has an empty name", r.BlockID)
	}
	tail := body[registerSize:]
	var err error
	if r.Name, err = takeString("block name", &tail, n); err != nil {
		return nil, err
	}
	if r.Label, err = takeString("column name", &tail, label); err != nil {
		return nil, err
	}
	if len(tail) != 0 {
		return nil, malformed(ErrBadLength, "REGISTER has %d bytes after its strings", len(tail))
	}
	return r, nil
}

func decodeMove(body []byte) (*Move, error) {
	if err := fixedBody(FrameMove, body, moveSize); err != nil {
		return nil, err
	}
	m := &Move{
		BlockID: le.Uint64(body[moveBlockID:]),
		Vaddr:   le.Uint64(body[moveVaddr:]),
		Length:  le.Uint64(body[moveLength:]),
		PID:     le.Uint32(body[movePID:]),
		GCEpoch: le.Uint32(body[moveGCEpoch:]),
	}
	if err := checkRange(FrameMove, m.BlockID, m.Vaddr, m.Length); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeAccess(body []byte) (*Access, error) {
	if err := fixedBody(FrameAccess, body, accessSize); err != nil {
		return nil, err
	}
	a := &Access{
		BlockID: le.Uint64(body[accessBlockID:]),
		Offset:  le.Uint64(body[accessOffset:]),
		Length:  le.Uint64(body[accessLength:]),
	}
	if a.BlockID == 0 {
		return nil, malformed(ErrBadField, "ACCESS block id 0")
	}
	k := body[accessKind]
	if k != accessKindRd && k != accessKindWr {
		return nil, malformed(ErrBadField, "ACCESS kind %d", k)
	}
	a.Kind = stratav1.AccessKind(k)
	if body[accessReserved] != 0 || body[accessReserved+1] != 0 || body[accessReserved+2] != 0 ||
		le.Uint32(body[accessReserved2:]) != 0 {
		return nil, malformed(ErrBadField, "ACCESS reserved bytes set")
	}
	if a.Offset+a.Length < a.Offset {
		return nil, malformed(ErrBadField, "ACCESS range %#x+%#x wraps", a.Offset, a.Length)
	}
	return a, nil
}

func decodeFree(body []byte) (*Free, error) {
	if err := fixedBody(FrameFree, body, freeSize); err != nil {
		return nil, err
	}
	fr := &Free{BlockID: le.Uint64(body[freeBlockID:]), Reason: FreeReason(body[freeReason])}
	if fr.BlockID == 0 {
		return nil, malformed(ErrBadField, "FREE block id 0")
	}
	if fr.Reason == 0 || fr.Reason > freeReasonMax {
		return nil, malformed(ErrBadField, "FREE block %d reason %d", fr.BlockID, fr.Reason)
	}
	if body[freeReserved] != 0 || body[freeReserved+1] != 0 || body[freeReserved+2] != 0 ||
		le.Uint32(body[freeReserved2:]) != 0 {
		return nil, malformed(ErrBadField, "FREE reserved bytes set")
	}
	return fr, nil
}

func decodeDropped(body []byte) (*Dropped, error) {
	if err := fixedBody(FrameDropped, body, droppedSize); err != nil {
		return nil, err
	}
	return &Dropped{Dropped: le.Uint64(body[droppedDropped:]), Sent: le.Uint64(body[droppedSent:])}, nil
}

func decodeWalk(body []byte) (*WalkPart, error) {
	if len(body) < walkSize {
		return nil, malformed(ErrBadLength, "WALK body %d bytes, want >= %d", len(body), walkSize)
	}
	w := &WalkPart{
		BlockID: le.Uint64(body[walkBlockID:]),
		Part:    le.Uint16(body[walkPart:]),
		Parts:   le.Uint16(body[walkParts:]),
		WalkSummary: WalkSummary{
			GCEpoch:       le.Uint32(body[walkGCEpoch:]),
			Seq:           le.Uint32(body[walkSeq:]),
			State:         WalkState(body[walkState]),
			Objects:       le.Uint64(body[walkObjects:]),
			Bytes:         le.Uint64(body[walkBytes:]),
			SharedObjects: le.Uint64(body[walkSharedObjects:]),
			SharedBytes:   le.Uint64(body[walkSharedBytes:]),
			OpaqueObjects: le.Uint64(body[walkOpaqueObjects:]),
			TotalExtents:  le.Uint32(body[walkExtents:]),
		},
	}
	count := int(le.Uint16(body[walkCount:]))
	switch {
	case w.BlockID == 0:
		return nil, malformed(ErrBadField, "WALK block id 0")
	case w.State == 0 || w.State > walkStateMax:
		return nil, malformed(ErrBadField, "WALK block %d state %d", w.BlockID, w.State)
	case body[walkReserved] != 0 || le.Uint32(body[walkReserved2:]) != 0:
		return nil, malformed(ErrBadField, "WALK reserved bytes set")
	case w.Parts == 0 || w.Part >= w.Parts:
		return nil, malformed(ErrBadField, "WALK block %d part %d of %d", w.BlockID, w.Part, w.Parts)
	case count > WalkExtentsMax || uint32(count) > w.TotalExtents:
		return nil, malformed(ErrBadField, "WALK block %d has %d extents in a frame (max %d), %d in all", w.BlockID, count, WalkExtentsMax, w.TotalExtents)
	case w.State == WalkStale && (count != 0 || w.Parts != 1 || w.TotalExtents != 0):
		return nil, malformed(ErrBadField, "WALK block %d: STALE with %d extents in %d parts", w.BlockID, w.TotalExtents, w.Parts)
	case len(body) != walkSize+count*extentSize:
		return nil, malformed(ErrBadLength, "WALK body %d bytes for %d extents, want %d", len(body), count, walkSize+count*extentSize)
	}
	if count > 0 {
		w.Extents = make([]Extent, count)
	}
	for i := range w.Extents {
		off := walkSize + i*extentSize
		e := Extent{Vaddr: le.Uint64(body[off:]), Length: le.Uint64(body[off+8:])}
		if e.Length == 0 || e.End() < e.Vaddr {
			return nil, malformed(ErrBadField, "WALK block %d extent %#x+%#x", w.BlockID, e.Vaddr, e.Length)
		}
		if i > 0 && e.Vaddr < w.Extents[i-1].End() {
			return nil, malformed(ErrBadField, "WALK block %d extents not ascending and disjoint at %#x", w.BlockID, e.Vaddr)
		}
		w.Extents[i] = e
	}
	return w, nil
}

func decodeEpoch(t FrameType, body []byte) (uint32, error) {
	if err := fixedBody(t, body, epochSize); err != nil {
		return 0, err
	}
	if le.Uint32(body[epochReserved:]) != 0 {
		return 0, malformed(ErrBadField, "%v reserved bytes set", t)
	}
	return le.Uint32(body[epochGCEpoch:]), nil
}

func decodeOff(body []byte) (*Off, error) {
	if len(body) < offSize {
		return nil, malformed(ErrBadLength, "OFF body %d bytes, want >= %d", len(body), offSize)
	}
	o := &Off{PID: le.Uint32(body[offPID:]), Reason: OffReason(body[offReason]), Java: le.Uint32(body[offJava:])}
	if o.Reason == 0 || o.Reason > offReasonMax {
		return nil, malformed(ErrBadField, "OFF reason %d", o.Reason)
	}
	if body[offReserved] != 0 || le.Uint32(body[offReserved2:]) != 0 {
		return nil, malformed(ErrBadField, "OFF reserved bytes set")
	}
	tail := body[offSize:]
	var err error
	if o.Detail, err = takeString("detail", &tail, int(le.Uint16(body[offDetailLen:]))); err != nil {
		return nil, err
	}
	if len(tail) != 0 {
		return nil, malformed(ErrBadLength, "OFF has %d bytes after its detail", len(tail))
	}
	return o, nil
}
