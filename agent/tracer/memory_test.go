package tracer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// perCPUBytes is the memory a map takes for each possible CPU, from its
// definition and the kernel's accounting of its type (kernel/bpf/
// arraymap.c and hashtab.c, *_mem_usage): the whole value per entry for
// per-CPU maps; for hash maps a lock word per CPU per lock class (8), and
// with preallocation one spare element per CPU, without it the per-CPU
// caches of the BPF memory allocator, which memlock does not count: up to
// max(96 × 256 / unit, 3) objects of unit = element + 8 bytes, each from a
// power-of-two kmalloc size. A 48-byte struct htab_elem header is assumed;
// every term is an upper bound, so the extrapolation cannot understate.
func perCPUBytes(spec *ebpf.MapSpec) (bytes int64, how string) {
	r8 := func(n uint32) int64 { return int64(n+7) &^ 7 }
	const htabElem, mapLocks = 48, 8 * 4
	switch spec.Type {
	case ebpf.PerCPUArray:
		return int64(spec.MaxEntries) * r8(spec.ValueSize), "per-CPU values"
	case ebpf.PerCPUHash:
		return int64(spec.MaxEntries+1)*r8(spec.ValueSize) + mapLocks + htabElem + r8(spec.KeySize) + 8, "per-CPU values"
	case ebpf.Hash:
		elem := htabElem + r8(spec.KeySize) + r8(spec.ValueSize)
		if spec.Flags&unix.BPF_F_NO_PREALLOC == 0 {
			return mapLocks + elem + 8, "lock words, a spare element"
		}
		unit := elem + 8
		slab := int64(8)
		for slab < unit {
			slab *= 2
		}
		return mapLocks + max(96*256/unit, 3)*slab, "lock words, allocator cache (not in memlock)"
	case ebpf.TaskStorage:
		return 0, "none: a fill_stack per thread that filled"
	}
	return 0, "none"
}

// TestMapMemoryPerCPU registers 65,536 blocks (of 1 MiB; of 64 bytes, 16 to
// a page) and states every map's memory on this machine (the kernel's
// memlock) and on 64 and 128 CPUs, adding perCPUBytes for each CPU beyond
// this machine's: at most 64 MiB on 128 CPUs. (With per-CPU block counters,
// 65,536 blocks took 65,536 × 48 bytes × 64 = 192 MiB on 64 CPUs.)
func TestMapMemoryPerCPU(t *testing.T) {
	const n = 65536
	for _, tc := range []struct {
		name string
		size uint64 // bytes; 64-byte blocks go 16 to a page
	}{{"1 MiB blocks", 1 << 20}, {"64-byte blocks", 64}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := loadTracer(t, Config{MaxBlocks: n, NoMajorFaults: true})
			c := startChild(t, 8)
			if err := tr.Track(c.pid); err != nil {
				t.Fatal(err)
			}
			base := uint64(0x200000000000)
			for i := uint64(0); i < n; i++ {
				s := base + i*tc.size
				if tc.size < 4096 {
					s = base + i/16*4096 + i%16*256
				}
				if err := tr.RegisterBlock(c.pid, i, s, s+tc.size); err != nil {
					t.Fatalf("block %d: %v", i, err)
				}
			}
			here := int64(tr.ncpu)
			cpus := []int64{here, 64, 128}
			total := make([]int64, len(cpus))
			var table strings.Builder
			fmt.Fprintf(&table, "%-10s %-12s %10s %10s %10s  %s\n", "map", "type", fmt.Sprintf("%d CPUs", here), "64 CPUs", "128 CPUs", "grows per CPU")
			names := []string{strataMapPidBits, strataMapCells, strataMapRuns, strataMapCounters, strataMapTgids, strataMapStats, strataMapEvents,
				strataMapFills, strataMapFillsDone, "grace"}
			for _, name := range names {
				var m *ebpf.Map
				var spec *ebpf.MapSpec
				if name == "grace" {
					m = tr.grace
					spec = &ebpf.MapSpec{Type: ebpf.ArrayOfMaps}
				} else {
					m, spec = tr.maps[name], tr.spec.Maps[name]
				}
				per, how := perCPUBytes(spec)
				fmt.Fprintf(&table, "%-10s %-12s", name, spec.Type)
				for j, ncpu := range cpus {
					b := mapMemory(t, m) + per*(ncpu-here)
					total[j] += b
					fmt.Fprintf(&table, " %10s", mib(b))
				}
				fmt.Fprintf(&table, "  %d B (%s)\n", per, how)
			}
			fmt.Fprintf(&table, "%-23s %10s %10s %10s", "total", mib(total[0]), mib(total[1]), mib(total[2]))
			st, _ := tr.Stats()
			t.Logf("%d blocks of %d bytes: %d cells, %d run entries\n%s", n, tc.size, st.RangeSets, st.RunEntries, table.String())
			if total[2] > 64<<20 {
				t.Errorf("maps take %s on 128 CPUs, above 64 MiB", mib(total[2]))
			}
			// Every map is accounted: the object holds no other.
			for name := range tr.spec.Maps {
				if !slices.Contains(names, name) && !strings.HasPrefix(name, ".") {
					t.Errorf("map %s not in the table", name)
				}
			}
		})
	}
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// TestPerCPUBytesOldCounters checks the arithmetic against the figure the
// issue gives for per-CPU counters: 65,536 blocks, 64 CPUs, 192 MiB.
func TestPerCPUBytesOldCounters(t *testing.T) {
	old := &ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 48, MaxEntries: 65536}
	if per, _ := perCPUBytes(old); per*64 != 192<<20 {
		t.Errorf("per-CPU counters of 65,536 blocks on 64 CPUs: %s, want 192 MiB", mib(per*64))
	}
}
