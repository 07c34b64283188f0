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
