package procmem

import (
	"errors"
	"testing"
)

func TestMapsFixture(t *testing.T) {
	fs := FS{Proc: "testdata/proc", Sys: "testdata/sys2"}
	vmas, err := fs.Maps(4242)
	if err != nil {
		t.Fatal(err)
	}
	if len(vmas) != 6 {
		t.Fatalf("%d vmas, want 6", len(vmas))
	}
	if v := vmas[4]; v.Start != 0x7f3a10600000 || v.End != 0x7f3a10800000 || v.Path != "/memfd:spark block (deleted)" {
		t.Errorf("vma 4 = %+v", v)
	}
	tests := []struct {
		addr uint64
		want int
	}{
		{0, 0},
		{0x55d0c0a01fff, 0},
		{0x55d0c0a02000, 1},
		{0x7f3a10400000, 4}, // hole before the memfd mapping
		{0x7f3a107fffff, 4},
		{0x7ffd7e906000, 6},
	}
	for _, tt := range tests {
		if got := Covering(vmas, tt.addr); got != tt.want {
			t.Errorf("Covering(%#x) = %d, want %d", tt.addr, got, tt.want)
		}
	}
	if _, err := fs.Maps(4243); !errors.Is(err, ErrProcessGone) {
		t.Errorf("missing pid: %v, want ErrProcessGone", err)
	}
}

// TestVMAAtFixture takes the fallback: ioctls on a regular file fail with
// ENOTTY, as on kernels before PROCMAP_QUERY.
func TestVMAAtFixture(t *testing.T) {
	m, err := FS{Proc: "testdata/proc"}.OpenMaps(4242)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tests := []struct {
		addr, start uint64
		ok          bool
	}{
		{0, 0x55d0c0a00000, true},
		{0x55d0c0a02fff, 0x55d0c0a02000, true},
		{0x7f3a10400000, 0x7f3a10600000, true}, // in a hole: the next mapping
		{0x7ffd7e906000, 0, false},
	}
	for _, tt := range tests {
		v, ok, err := m.VMAAt(tt.addr)
		if err != nil || ok != tt.ok || v.Start != tt.start {
			t.Errorf("VMAAt(%#x) = %+v, %v, %v; want start %#x, %v", tt.addr, v, ok, err, tt.start, tt.ok)
		}
	}
	if _, err := (FS{Proc: "testdata/proc"}).OpenMaps(4243); !errors.Is(err, ErrProcessGone) {
		t.Errorf("missing pid: %v", err)
	}
}
