package procmem

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOnlineCPUs(t *testing.T) {
	got, err := FS{Sys: "testdata/sys2"}.OnlineCPUs()
	if err != nil || !slices.Equal(got, []int{0, 1, 2, 3, 5}) {
		t.Fatalf("online cpus = %v, %v; want [0 1 2 3 5]", got, err)
	}
	dir := t.TempDir()
	if _, err := (FS{Sys: dir}).OnlineCPUs(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no online file: %v", err)
	}
	p := filepath.Join(dir, "devices", "system", "cpu")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "online"), []byte("0-1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (FS{Sys: dir}).OnlineCPUs(); !errors.Is(err, ErrBadCPUList) {
		t.Errorf("bad online file: %v", err)
	}
}

func TestOnlineCPUsLive(t *testing.T) {
	got, err := Default().OnlineCPUs()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if len(got) == 0 || got[0] != 0 {
		t.Errorf("online cpus of this machine: %v", got)
	}
}
