package procmem

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestEntryDecode(t *testing.T) {
	tests := []struct {
		name                   string
		e                      Entry
		present, swapped, file bool
		excl, soft             bool
		pfn                    uint64
		swapType               uint32
		swapOff                uint64
	}{
		{name: "empty", e: 0},
		// Measured on this VM: an anonymous page after a write.
		{name: "anon written", e: 0x8100_0000_0023_433e, present: true, excl: true, pfn: 0x23433e},
		{name: "hidden pfn", e: EntryPresent | EntryExclusive, present: true, excl: true},
		{name: "file soft-dirty", e: EntryPresent | EntryFileShared | EntrySoftDirty | 0x1234, present: true, file: true, soft: true, pfn: 0x1234},
		{name: "max pfn", e: EntryPresent | pfnMask, present: true, pfn: pfnMask},
		{name: "swapped", e: EntrySwapped | Entry(0xabcdef<<5) | 3, swapped: true, swapType: 3, swapOff: 0xabcdef},
		{name: "swapped max", e: EntrySwapped | (1<<55 - 1), swapped: true, swapType: 31, swapOff: 1<<50 - 1},
		{name: "swapped shmem", e: EntrySwapped | EntryFileShared | 1<<5 | 1, swapped: true, file: true, swapType: 1, swapOff: 1},
		{name: "guard only", e: EntryGuard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			if e.Present() != tt.present || e.Swapped() != tt.swapped || e.FileShared() != tt.file ||
				e.Exclusive() != tt.excl || e.SoftDirty() != tt.soft {
				t.Errorf("%#x: present=%v swapped=%v file=%v excl=%v soft=%v", uint64(e),
					e.Present(), e.Swapped(), e.FileShared(), e.Exclusive(), e.SoftDirty())
			}
			if e.Hidden() != (tt.present && tt.pfn == 0) || e.Status() != e&^(1<<55-1) || (e.Status()|Entry(tt.pfn)) != e && tt.present {
				t.Errorf("%#x: hidden=%v status=%#x", uint64(e), e.Hidden(), uint64(e.Status()))
			}
			if e.PFN() != tt.pfn || e.SwapType() != tt.swapType || e.SwapOffset() != tt.swapOff {
				t.Errorf("%#x: pfn=%#x swap=%d/%#x, want %#x %d/%#x", uint64(e), e.PFN(),
					e.SwapType(), e.SwapOffset(), tt.pfn, tt.swapType, tt.swapOff)
			}
		})
	}
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add([]byte{0x3e, 0x43, 0x23, 0, 0, 0, 0, 0x81})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]Entry, len(b)/8+1)
		n := decodeEntries(dst, b)
		if n != len(b)/8 {
			t.Fatalf("decoded %d of %d", n, len(b)/8)
		}
		for i, e := range dst[:n] {
			if uint64(e) != binary.LittleEndian.Uint64(b[i*8:]) {
				t.Fatalf("entry %d", i)
			}
			// The fields never overlap in an impossible way.
			if e.Present() && (e.SwapType() != 0 || e.SwapOffset() != 0) {
				t.Fatalf("present entry %#x has swap fields", uint64(e))
			}
			if !e.Present() && e.PFN() != 0 {
				t.Fatalf("absent entry %#x has a PFN", uint64(e))
			}
			if e.Swapped() && !e.Present() {
				back := Entry(EntrySwapped) | Entry(e.SwapOffset()<<5) | Entry(e.SwapType())
				if back&(1<<55-1) != e&(1<<55-1) {
					t.Fatalf("swap fields of %#x do not round-trip", uint64(e))
				}
			}
		}
	})
}

// fakeProc writes a proc tree with a pagemap for pid 7 holding entries at
// page index 0.
func fakeProc(t *testing.T, entries []Entry) FS {
	t.Helper()
	dir := t.TempDir()
	b := make([]byte, 8*len(entries))
	for i, e := range entries {
		binary.LittleEndian.PutUint64(b[i*8:], uint64(e))
	}
	if err := os.MkdirAll(filepath.Join(dir, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "7", "pagemap"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return FS{Proc: dir, Sys: "testdata/sys2"}
}

func TestPagemapFixture(t *testing.T) {
	want := []Entry{0, EntryPresent | 5, EntryPresent | 6, EntrySwapped | 2<<5 | 1}
	fs := fakeProc(t, want)
	pm, err := fs.OpenPagemap(7)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	got := make([]Entry, 3)
	if err := pm.Read(got, pageSize); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i+1] {
			t.Errorf("entry %d = %#x, want %#x", i, got[i], want[i+1])
		}
	}
	if err := pm.Read(make([]Entry, 2), 3*pageSize); err == nil {
		t.Error("read past the end: no error")
	}
	if _, err := fs.OpenPagemap(8); !errors.Is(err, ErrProcessGone) {
		t.Errorf("open missing pid: %v, want ErrProcessGone", err)
	}
}
