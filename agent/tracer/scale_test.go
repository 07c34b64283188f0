package tracer

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// mapMemory reads the kernel's memory accounting of a map ("memlock" in
// /proc/self/fdinfo), which for hash maps without preallocation follows the
// entries in use.
func mapMemory(tb testing.TB, m *ebpf.Map) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", m.FD()))
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("memlock:")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	tb.Fatalf("no memlock in fdinfo of map %v", m)
	return 0
}

// rssBytes is this process's resident set (VmRSS).
func rssBytes(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			var kb int64
			fmt.Sscanf(string(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

func reportMemory(tb testing.TB, tr *Tracer) (total int64) {
	tb.Helper()
	for _, name := range []string{strataMapPidBits, strataMapCells, strataMapRuns, strataMapCounters, strataMapTgids, strataMapStats, strataMapEvents} {
		n := mapMemory(tb, tr.maps[name])
		total += n
		tb.Logf("  map %-9s %8.2f MiB", name, float64(n)/(1<<20))
	}
	tb.Logf("  maps total %7.2f MiB; agent RSS %.1f MiB", float64(total)/(1<<20), float64(rssBytes(tb))/(1<<20))
	return total
}

// Test64kBlocks registers 65,536 blocks in one process, sparse (1 MiB
// blocks, two per 2 MiB bucket) and dense (16 KiB blocks: buckets split
// into 64 KiB granule entries), checks lookups at both ends and prints memory.
func Test64kBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		size uint64
	}{{"sparse 1MiB", 1 << 20}, {"dense 16KiB", 16 << 10}} {
		t.Run(tc.name, func(t *testing.T) { register64k(t, tc.name, tc.size) })
	}
}

// BenchmarkBlockMemory64k prints the BPF map memory and the agent's RSS
// with 65,536 registered 1 MiB blocks.
func BenchmarkBlockMemory64k(b *testing.B) { register64k(b, "sparse 1MiB", 1<<20) }

func register64k(t testing.TB, name string, size uint64) {
	t.Helper()
	const n = 65536
	tr := loadTracer(t, Config{MaxBlocks: n, NoMajorFaults: true})
	c := startChild(t, 8)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	base := uint64(0x200000000000)
	start := time.Now()
	for i := uint64(0); i < n; i++ {
		if err := tr.RegisterBlock(c.pid, i, base+i*size, base+(i+1)*size); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	reg := time.Since(start)
	if err := tr.RegisterBlock(c.pid, n, 0x100000, 0x200000); err == nil {
		t.Error("block 65,537 accepted with MaxBlocks 65,536")
	}
	start = time.Now()
	snap, err := tr.Snapshot()
	if err != nil || len(snap) != n {
		t.Fatalf("snapshot: %d blocks, %v", len(snap), err)
	}
	st, _ := tr.Stats()
	t.Logf("%s: registered %d blocks in %v (%.1f µs each), snapshot %v, %d range sets",
		name, n, reg.Round(time.Millisecond), float64(reg.Microseconds())/n, time.Since(start).Round(time.Millisecond), st.RangeSets)
	reportMemory(t, tr)
	// Kernel lookups agree with the index at the first and last block.
	kv := map[strataCellKey]strataRangeSet{}
	var k strataCellKey
	var v strataRangeSet
	it := tr.maps[strataMapCells].Iterate()
	for it.Next(&k, &v) {
		kv[k] = v
	}
	runs := map[uint32]strataBlockRange{}
	var rk uint32
	var rv strataBlockRange
	for it := tr.maps[strataMapRuns].Iterate(); it.Next(&rk, &rv); {
		runs[rk] = rv
	}
	for _, i := range []uint64{0, n / 2, n - 1} {
		r, ok := lookup(kv, runs, c.pid, base+i*size+size/2)
		if !ok || r.BlockId != i {
			t.Errorf("lookup block %d: %v %+v", i, ok, r)
		}
	}
	start = time.Now()
	if err := tr.Untrack(c.pid); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := kernelEntries(t, tr, c.pid); m != 0 {
		t.Errorf("%d entries after untrack", m)
	}
	t.Logf("untrack (removes all): %v", time.Since(start).Round(time.Millisecond))
}
