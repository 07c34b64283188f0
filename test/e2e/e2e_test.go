package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// tracePage is one line of `strata trace -o json`.
type tracePage struct {
	VAddr     string   `json:"vaddr"`
	Present   bool     `json:"present"`
	Swapped   bool     `json:"swapped"`
	PFN       uint64   `json:"pfn"`
	PAddr     string   `json:"paddr"`
	NUMANode  int      `json:"numa_node"`
	THP       bool     `json:"thp"`
	Flags     []string `json:"flags"`
	RDD       int32    `json:"rdd"`
	Partition int32    `json:"partition"`
	BlockID   string   `json:"block_id"`
	Access    string   `json:"access"`
	Time      string   `json:"time"`
}

func hexval(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("parse hex %q: %v", s, err)
	}
	return v
}

func trace(t *testing.T, bin, collector, app string) []tracePage {
	t.Helper()
	out := runCLI(t, bin, "trace", "--collector", collector, "--app", app, "-o", "json")
	var pages []tracePage
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var p tracePage
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("trace line %q: %v", line, err)
		}
		pages = append(pages, p)
	}
	return pages
}

// TestSpine runs the whole path: workload -> hook socket -> agent (pagemap,
// kpageflags, NUMA) -> gRPC -> collector (DuckDB) -> query -> CLI, and
// checks each returned page against the kernel.
func TestSpine(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Build(t)
	col, addr := startCollector(t, bin)
	ag := startAgent(t, bin, addr, "--faults", "off")

	app := fmt.Sprintf("app-e2e-%d", os.Getpid())
	w := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: app, ExecutorID: "1", RDD: 7})
	if len(w.Regions) != 3 {
		t.Fatalf("workload printed %d regions, want 3", len(w.Regions))
	}
	var blockPages uint64
	for _, r := range w.Regions {
		blockPages += r.Pages
	}
	// REGISTER + ACCESS write + ACCESS read per block, all with pages.
	want := int(3 * blockPages)
	var pages []tracePage
	waitFor(t, "the collector to hold every page", 60*time.Second, func() bool {
		pages = trace(t, bin, addr, app)
		return len(pages) >= want
	})
	if len(pages) != want {
		t.Fatalf("collector returned %d pages, want %d (3 records x %d pages)", len(pages), want, blockPages)
	}

	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", w.PID))
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	kpf, err := os.Open("/proc/kpageflags")
	if err != nil {
		t.Fatal(err)
	}
	defer kpf.Close()

	byBlock := map[string]workload.Region{}
	for _, r := range w.Regions {
		byBlock[r.Block] = r
	}
	perRecord := map[string]uint64{} // block/access -> pages
	var thpPages, checkedBytes int
	for _, p := range pages {
		r, ok := byBlock[p.BlockID]
		if !ok {
			t.Fatalf("page of unknown block %q", p.BlockID)
		}
		if p.RDD != 7 || p.Partition != r.Partition {
			t.Fatalf("page %s: rdd %d partition %d, want 7 %d", p.VAddr, p.RDD, p.Partition, r.Partition)
		}
		perRecord[p.BlockID+"/"+p.Access]++
		va := hexval(t, p.VAddr)
		if va < r.Vaddr || va >= r.Vaddr+r.Length || va%4096 != 0 {
			t.Fatalf("page %#x outside block %s [%#x, %#x)", va, r.Block, r.Vaddr, r.Vaddr+r.Length)
		}
		i := (va - r.Vaddr) / 4096
		e := pagemapEntry(t, pm, va)
		present := e>>63&1 == 1
		if p.Present != present || p.Present != r.Touched(i) {
			t.Fatalf("page %#x (%s page %d): present=%v, pagemap says %v, workload touched=%v", va, r.Block, i, p.Present, present, r.Touched(i))
		}
		if p.Swapped != (e>>62&1 == 1) {
			t.Fatalf("page %#x: swapped=%v, pagemap entry %#x", va, p.Swapped, e)
		}
		if !present {
			if p.PFN != 0 || hexval(t, p.PAddr) != 0 {
				t.Fatalf("page %#x not present but pfn %d paddr %s", va, p.PFN, p.PAddr)
			}
			continue
		}
		pfn := e & (1<<55 - 1)
		if p.PFN != pfn || hexval(t, p.PAddr) != pfn*4096 {
			t.Fatalf("page %#x: pfn %#x paddr %s, pagemap pfn %#x", va, p.PFN, p.PAddr, pfn)
		}
		if p.NUMANode != 0 {
			t.Fatalf("page %#x on node %d; this machine has node 0 only", va, p.NUMANode)
		}
		kf := kpageflags(t, kpf, pfn)
		isTHP := kf>>22&1 == 1
		if p.THP != isTHP || slices.Contains(p.Flags, "thp") != isTHP {
			t.Fatalf("page %#x: thp=%v flags=%v, kpageflags %#x", va, p.THP, p.Flags, kf)
		}
		if !slices.Contains(p.Flags, "anon") {
			t.Fatalf("page %#x: flags %v lack anon (kpageflags %#x)", va, p.Flags, kf)
		}
		if isTHP {
			thpPages++
		}
		// The bytes at the reported address are the workload's own pattern.
		if i%37 == 0 || r.THP {
			word, err := w.ReadWord(va)
			if err != nil {
				t.Fatal(err)
			}
			if word != va {
				t.Fatalf("bytes at %#x = %#x, want the address itself", va, word)
			}
			checkedBytes++
		}
	}
	for _, r := range w.Regions {
		for _, acc := range []string{"alloc", "write", "read"} {
			if got := perRecord[r.Block+"/"+acc]; got != r.Pages {
				t.Fatalf("%s %s: %d pages, want %d (all: %v)", r.Block, acc, got, r.Pages, perRecord)
			}
		}
	}
	thpRegion := w.Regions[2]
	if !thpRegion.THP {
		t.Fatalf("region 2 is not the THP region: %+v", thpRegion)
	}
	t.Logf("checked %d pages against pagemap, %d against /proc/PID/mem, %d THP pages", len(pages), checkedBytes, thpPages)

	// NUMA summary: every present page of RDD 7 on node 0.
	var present uint64
	for _, r := range w.Regions {
		present += r.TouchedPages
	}
	numa := runCLI(t, bin, "numa", "--collector", addr, "--app", app, "-o", "json")
	if !strings.Contains(numa, `"numa_node":0`) || !strings.Contains(numa, fmt.Sprintf(`"pages":%d`, present)) {
		t.Fatalf("numa output lacks %d pages on node 0:\n%s", present, numa)
	}

	// A second peer claiming the first workload's memory is rejected and
	// counted; its own blocks are accepted.
	rej0, _ := ag.metric("strata_hook_frames_rejected_total")
	app2 := app + "-foreign"
	w2 := workload.Start(t, wbin, workload.Options{Socket: ag.socket, AppID: app2, ExecutorID: "2", RDD: 9, ForeignPID: w.PID})
	waitFor(t, "the foreign claims to be rejected", 30*time.Second, func() bool {
		v, _ := ag.metric("strata_hook_frames_rejected_total")
		return v >= rej0+2
	})
	var own []tracePage
	waitFor(t, "the second peer's own blocks", 60*time.Second, func() bool {
		own = trace(t, bin, addr, app2)
		return len(own) >= want
	})
	for _, p := range own {
		// The claims were a REGISTER of partition 99 and a MOVE of block 1.
		if p.Partition == 99 || p.Access == "move" {
			t.Fatalf("foreign claim of pid %d stored: %+v", w2.Foreign.ClaimedPID, p)
		}
		if p.RDD != 9 {
			t.Fatalf("second peer page with rdd %d: %+v", p.RDD, p)
		}
	}
	if len(own) != want {
		t.Fatalf("second peer: %d pages stored, want exactly its own %d", len(own), want)
	}

	// Frees reach the collector, then both daemons stop cleanly.
	if _, err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "free records", 30*time.Second, func() bool {
		out := runCLI(t, bin, "trace", "--collector", addr, "--app", app, "-o", "json")
		return len(strings.Split(strings.TrimSpace(out), "\n")) >= want
	})
	ag.stop(t)
	col.stop(t)
}
