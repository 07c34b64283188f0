package storetest

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// BenchBatches builds n batches of recs records, each record a 4 MiB block
// of 1024 pages: every fourth block sits in two PMD THPs (two runs of 512),
// the others in 4 KiB pages whose PFNs are contiguous for 1..32 pages at a
// time (seeded, so every run of the benchmark stores the same data).
func BenchBatches(n, recs int) (batches []*stratav1.Batch, pages, runs int) {
	rng := rand.New(rand.NewPCG(1, 2))
	const pageSize, blockPages = 4096, 1024
	for s := range n {
		b := &stratav1.Batch{NodeName: "bench", BootId: "boot", Seq: uint64(s + 1)}
		for r := range recs {
			id := s*recs + r
			rec := &stratav1.Record{TimeUnixNano: int64(id) * 1e6, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC,
				Pid: 1000 + uint32(id%8), PageSize: pageSize, Vaddr: 0x7f00_0000_0000 + uint64(id)*blockPages*pageSize,
				Length: blockPages * pageSize,
				Block: &stratav1.SparkBlock{AppId: "app-bench", ExecutorId: strconv.Itoa(id % 8), RddId: int32(id % 30),
					Partition: int32(id / 30), BlockId: "rdd_" + strconv.Itoa(id%30) + "_" + strconv.Itoa(id/30)}}
			for off := 0; off < blockPages; {
				run := &stratav1.PageRun{Vaddr: rec.Vaddr + uint64(off)*pageSize, Kpagecount: 1,
					State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), NumaNode: int32(rng.IntN(2)),
					Kpageflags: 1<<3 | 1<<5 | 1<<12}
				if id%4 == 0 {
					run.Count, run.FolioPages = 512, 512
					run.Pfn = uint64(rng.IntN(1<<20)) * 512
					run.State |= uint32(stratav1.PageState_PAGE_STATE_THP)
					run.Kpageflags |= 1 << stratav1.KPFTHP
				} else {
					run.Count = uint32(min(1+rng.IntN(32), blockPages-off))
					run.Pfn = 1 + uint64(rng.IntN(6<<20))
				}
				rec.Runs = append(rec.Runs, run)
				off += int(run.Count)
				runs++
			}
			pages += blockPages
			b.Records = append(b.Records, rec)
		}
		batches = append(batches, b)
	}
	return batches, pages, runs
}

// PeakRSSKiB returns the peak resident set of process pid ("self" for this
// one) in KiB, from VmHWM in /proc/PID/status; 0 when unreadable.
func PeakRSSKiB(pid string) int64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
