package procmem

import (
	"errors"
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}, false},
		{"5", []int{5}, false},
		{"\n", nil, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"1,,2", nil, true},
		{"-1", nil, true},
		{"0-70000", nil, true},
	} {
		got, err := parseCPUList([]byte(c.in))
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("parseCPUList(%q) = %v, %v", c.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrBadCPUList) {
			t.Errorf("parseCPUList(%q) error %v is not ErrBadCPUList", c.in, err)
		}
	}
}

func TestLoadCPUNodesFixture(t *testing.T) {
	// node0 0-1, node1 2-3,5, node3 memory only; CPU 4 is on no node.
	got, err := FS{Sys: "testdata/sys2"}.LoadCPUNodes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 0, 1, 1, -1, 1}; !slices.Equal(got, want) {
		t.Fatalf("cpu nodes = %v, want %v", got, want)
	}
	if _, err := (FS{Sys: t.TempDir()}).LoadCPUNodes(); !errors.Is(err, ErrNoNodeInfo) {
		t.Fatalf("no sysfs nodes: %v", err)
	}
}

func FuzzParseCPUList(f *testing.F) {
	f.Add([]byte("0-3,8"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cpus, err := parseCPUList(b)
		if err != nil {
			return
		}
		for _, c := range cpus {
			if c < 0 || c >= maxCPUs {
				t.Fatalf("cpu %d out of range from %q", c, b)
			}
		}
	})
}
