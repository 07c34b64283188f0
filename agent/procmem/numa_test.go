package procmem

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestNodeMapFixture(t *testing.T) {
	m, err := FS{Sys: "testdata/sys2"}.LoadNodeMap()
	if err != nil {
		t.Fatal(err)
	}
	bp := uint64(0x8000000) / pageSize
	if m.BlockPages() != bp || m.Nodes() != 4 {
		t.Fatalf("block pages %d nodes %d", m.BlockPages(), m.Nodes())
	}
	tests := []struct {
		pfn  uint64
		node int32
	}{
		{0, 0}, {bp - 1, 0}, {2*bp + 5, 0},
		{3 * bp, 1}, {5*bp + bp - 1, 1},
		{4 * bp, -1}, // a hole between blocks
		{8 * bp, 3}, {10*bp - 1, 3},
		{10 * bp, -1}, {1 << 54, -1},
	}
	for _, tt := range tests {
		if got := m.Node(tt.pfn); got != tt.node {
			t.Errorf("Node(%#x) = %d, want %d", tt.pfn, got, tt.node)
		}
	}
	var nilMap *NodeMap
	if nilMap.Node(1) != -1 {
		t.Error("nil map: want -1")
	}
}

func TestNodeMapMissing(t *testing.T) {
	if _, err := (FS{Sys: t.TempDir()}).LoadNodeMap(); !errors.Is(err, ErrNoNodeInfo) {
		t.Errorf("empty sysfs: %v, want ErrNoNodeInfo", err)
	}
}

func TestParseBlockSize(t *testing.T) {
	for in, want := range map[string]uint64{"8000000\n": 0x8000000, "0x1000": 0x1000, " 40000000 ": 0x40000000} {
		if got, err := parseBlockSize([]byte(in)); err != nil || got != want {
			t.Errorf("parseBlockSize(%q) = %#x, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "zz", "3000", "800", "-8000000", "10000000000000000"} {
		if _, err := parseBlockSize([]byte(in)); err == nil {
			t.Errorf("parseBlockSize(%q): no error", in)
		}
	}
}

func FuzzParseBlockSize(f *testing.F) {
	for _, s := range []string{"8000000\n", "0x1000", "", "ffffffffffffffff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseBlockSize(b)
		if err != nil {
			return
		}
		if v < pageSize || v&(v-1) != 0 {
			t.Fatalf("accepted %#x", v)
		}
		m, err := newNodeMap(v, map[int][]int{0: {0, 2}, 1: {1}})
		if err != nil {
			t.Fatal(err)
		}
		if m.BlockPages()*pageSize != v {
			t.Fatalf("block pages %d for size %#x", m.BlockPages(), v)
		}
		if got := m.Node(m.BlockPages()); got != 1 {
			t.Fatalf("first pfn of block 1 on node %d", got)
		}
	})
}

func FuzzParseIndexedName(f *testing.F) {
	for _, s := range []string{"node0", "memory42", "node", "node+1", "nodeX", "memory99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range []string{"node", "memory"} {
			n, ok := parseIndexedName(s, p)
			if !ok {
				continue
			}
			rest, _ := strings.CutPrefix(s, p)
			if v, err := strconv.Atoi(rest); err != nil || v != n || n < 0 {
				t.Fatalf("parseIndexedName(%q, %q) = %d", s, p, n)
			}
		}
	})
}
