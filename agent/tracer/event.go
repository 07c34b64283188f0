package tracer

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Kind says what an Event or a counter describes (enum strata_kind).
type Kind uint8

// Kinds, equal to enum strata_kind in bpf/strata.h.
const (
	KindRead         Kind = 0
	KindWrite        Kind = 1
	KindExec         Kind = 2 // instruction fetch
	KindUnclassified Kind = 3 // perf fallback hook: no error code to classify
	KindMajor        Kind = 4 // a major fault (the page was read from storage)
	KindWalkSample   Kind = 5
	KindExit         Kind = 15 // a traced thread group exited; only TGID is set
)

func (k Kind) String() string {
	switch k {
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindExec:
		return "exec"
	case KindUnclassified:
		return "unclassified"
	case KindMajor:
		return "major"
	case KindWalkSample:
		return "walk-sample"
	case KindExit:
		return "exit"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one sampled fault (or an exit notice) from the kernel.
type Event struct {
	Time    time.Time // wall clock, converted from MonoNS by the Tracer
	MonoNS  uint64    // CLOCK_MONOTONIC nanoseconds, as the kernel stamped it
	TGID    uint32
	TID     uint32
	Addr    uint64 // faulting virtual address
	IP      uint64 // user instruction pointer at the fault, 0 if unknown
	BlockID uint64
	Kind    Kind
	CPU     uint16 // the CPU the fault ran on (0 for exit notices)
}

// eventSize is sizeof(struct event); layout_test.go checks it and the
// offsets below against the bpf2go mirror.
const eventSize = 48

// decodeEvent decodes one ring record (struct event, little endian).
// Time is left zero; the Tracer fills it.
func decodeEvent(b []byte) (Event, error) {
	if len(b) < eventSize {
		return Event{}, fmt.Errorf("decode event: %d bytes: %w", len(b), errShortRecord)
	}
	le := binary.LittleEndian
	ev := Event{
		MonoNS:  le.Uint64(b[0:]),
		Addr:    le.Uint64(b[8:]),
		IP:      le.Uint64(b[16:]),
		BlockID: le.Uint64(b[24:]),
		TGID:    le.Uint32(b[32:]),
		TID:     le.Uint32(b[36:]),
		Kind:    Kind(b[40]),
		CPU:     le.Uint16(b[42:]),
	}
	switch ev.Kind {
	case KindRead, KindWrite, KindExec, KindUnclassified, KindMajor, KindWalkSample, KindExit:
	default:
		return Event{}, fmt.Errorf("decode event: kind %d: %w", b[40], errBadKind)
	}
	return ev, nil
}
