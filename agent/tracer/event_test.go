package tracer

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"
)

// TestLayout pins the Go side of the ABI to the bpf2go mirrors of
// bpf/strata.h.
func TestLayout(t *testing.T) {
	var ev strataEvent
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(event)", unsafe.Sizeof(ev), eventSize},
		{"ts_ns", unsafe.Offsetof(ev.TsNs), 0},
		{"addr", unsafe.Offsetof(ev.Addr), 8},
		{"ip", unsafe.Offsetof(ev.Ip), 16},
		{"block_id", unsafe.Offsetof(ev.BlockId), 24},
		{"tgid", unsafe.Offsetof(ev.Tgid), 32},
		{"tid", unsafe.Offsetof(ev.Tid), 36},
		{"kind", unsafe.Offsetof(ev.Kind), 40},
		{"cpu", unsafe.Offsetof(ev.Cpu), 42},
		{"STRATA_SLOTS", uintptr(len(strataRangeSet{}.Ranges)), rangeSlots},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, Go side assumes %d", c.name, c.got, c.want)
		}
	}
}

func encodeEvent(ev Event) []byte {
	b := make([]byte, eventSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], ev.MonoNS)
	le.PutUint64(b[8:], ev.Addr)
	le.PutUint64(b[16:], ev.IP)
	le.PutUint64(b[24:], ev.BlockID)
	le.PutUint32(b[32:], ev.TGID)
	le.PutUint32(b[36:], ev.TID)
	b[40] = byte(ev.Kind)
	le.PutUint16(b[42:], ev.CPU)
	return b
}

func TestDecodeEvent(t *testing.T) {
	want := Event{MonoNS: 1, Addr: 0x7f00_0000_1000, IP: 0x401000, BlockID: 42, TGID: 7, TID: 8, Kind: KindWrite, CPU: 1}
	got, err := decodeEvent(encodeEvent(want))
	if err != nil || got != want {
		t.Fatalf("decode: %+v %v, want %+v", got, err, want)
	}
	if _, err := decodeEvent(make([]byte, eventSize-1)); !errors.Is(err, errShortRecord) {
		t.Errorf("short: %v", err)
	}
	bad := encodeEvent(want)
	bad[40] = 9
	if _, err := decodeEvent(bad); !errors.Is(err, errBadKind) {
		t.Errorf("bad kind: %v", err)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(encodeEvent(Event{MonoNS: 1, Addr: 4096, TGID: 1, TID: 1, Kind: KindRead}))
	f.Add(encodeEvent(Event{TGID: 9, Kind: KindExit}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeEvent(b)
		if err != nil {
			if !errors.Is(err, errShortRecord) && !errors.Is(err, errBadKind) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(b) < eventSize {
			t.Fatalf("decoded %d bytes", len(b))
		}
		// Re-encoding reproduces the decoded prefix, minus padding.
		re := encodeEvent(ev)
		for i := 0; i < 41; i++ {
			if re[i] != b[i] {
				t.Fatalf("byte %d: %#x, want %#x", i, re[i], b[i])
			}
		}
		if ev.Kind.String() == "" {
			t.Fatal("empty kind name")
		}
	})
}
