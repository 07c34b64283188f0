package tracer

import "errors"

var (
	// ErrUnsupported means the kernel lacks something the tracer needs.
	ErrUnsupported = errors.New("not supported by this kernel")
	// ErrNotTracked means the TGID was not passed to Track.
	ErrNotTracked = errors.New("process not tracked")
	// ErrUnknownBlock means no block with that id is registered for the TGID.
	ErrUnknownBlock = errors.New("unknown block")
	// ErrBlockExists means the block id is already registered for the TGID.
	ErrBlockExists = errors.New("block already registered")
	// ErrOverlap means the range overlaps another block of the same TGID.
	ErrOverlap = errors.New("range overlaps a registered block")
	// ErrBadRange means start >= end or the range is outside user space.
	ErrBadRange = errors.New("invalid address range")
	// ErrIndexFull means the address index has no room left: the runs array
	// of dense granules (Config.MaxRunEntries) or the cells map
	// (Config.MaxRangeSets).
	ErrIndexFull = errors.New("address index full")
	// ErrFull means every counter slot (Config.MaxBlocks) is in use.
	ErrFull = errors.New("block table full")
	// ErrBadPID means the TGID is 0 or beyond the kernel's PID limit.
	ErrBadPID = errors.New("invalid pid")
	// ErrClosed means the Tracer was closed.
	ErrClosed = errors.New("tracer closed")
)

// Errors of decodeEvent; the reader counts such records in Stats.BadRecords.
var (
	errShortRecord = errors.New("short ring record")
	errBadKind     = errors.New("unknown event kind")
)
