package store_test

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// benchBatches builds n batches of recs records, each record a 4 MiB block
// of 1024 pages: every fourth block sits in two PMD THPs (two runs of 512),
// the others in 4 KiB pages whose PFNs are contiguous for 1..32 pages at a
// time (seeded, so every run of the benchmark stores the same data).
func benchBatches(n, recs int) (batches []*stratav1.Batch, pages, runs int) {
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
					Partition: int32(id % 200), BlockId: "rdd_" + strconv.Itoa(id%30) + "_" + strconv.Itoa(id%200)}}
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

// perPage rewrites every run of b as runs of one page each: the naive
// one-row-per-page schema this store avoids, as the baseline.
func perPage(b *stratav1.Batch) *stratav1.Batch {
	out := &stratav1.Batch{NodeName: b.NodeName, BootId: b.BootId, Seq: b.Seq}
	for _, r := range b.Records {
		nr := &stratav1.Record{TimeUnixNano: r.TimeUnixNano, Access: r.Access, Pid: r.Pid, PageSize: r.PageSize,
			Vaddr: r.Vaddr, Length: r.Length, Block: r.Block}
		for _, run := range r.Runs {
			for i := range run.Count {
				p := run.Page(i, uint64(r.PageSize))
				nr.Runs = append(nr.Runs, &stratav1.PageRun{Vaddr: p.VAddr, Count: 1, State: p.State, Pfn: p.PFN,
					Kpageflags: p.KPageFlags, Kpagecount: p.KPageCount, NumaNode: p.NUMANode})
			}
		}
		out.Records = append(out.Records, nr)
	}
	return out
}

// ingest appends batches into a fresh store in dir and closes it; it returns
// the time taken (including the final checkpoint) and the bytes on disk.
func ingest(tb testing.TB, dir string, batches []*stratav1.Batch) (time.Duration, int64) {
	tb.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Dir: dir, MemoryLimit: "1GB", Threads: 2})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	for _, b := range batches {
		if _, err := s.Append(ctx, b); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	took := time.Since(start)
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			size += fi.Size()
		}
	}
	return took, size
}

// vmHWM returns this process's peak resident set in KiB (/proc/self/status).
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
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

// BenchmarkIngest appends 2 Mi pages, carried as runs, into the embedded
// store (the collector's write path minus gRPC), then the same pages as one
// row each, and reports the ratios between the two.
func BenchmarkIngest(b *testing.B) {
	batches, pages, runs := benchBatches(20, 100)
	var runTime time.Duration
	var runBytes int64
	for i := range b.N {
		d, size := ingest(b, filepath.Join(b.TempDir(), strconv.Itoa(i)), batches)
		runTime += d
		runBytes = size
	}
	b.StopTimer()
	hwmRuns := vmHWM()
	flat := make([]*stratav1.Batch, len(batches))
	for i, bt := range batches {
		flat[i] = perPage(bt)
	}
	flatTime, flatBytes := ingest(b, b.TempDir(), flat)

	perRun := runTime / time.Duration(b.N)
	pagesPerSec := float64(pages) / perRun.Seconds()
	b.ReportMetric(pagesPerSec, "pages/s")
	b.ReportMetric(float64(runs)/perRun.Seconds(), "rows/s")
	b.ReportMetric(float64(pages)/float64(runs), "pages/row")
	b.ReportMetric(float64(flatBytes)/float64(runBytes), "bytes-ratio")
	b.ReportMetric(flatTime.Seconds()/perRun.Seconds(), "time-ratio")
	b.ReportMetric(float64(hwmRuns)/1024, "peakRSS-MiB")
	b.Logf("runs: %d pages in %d rows, %v (%.0f pages/s), %d bytes on disk (%.2f B/page); peak RSS %d MiB",
		pages, runs, perRun.Round(time.Millisecond), pagesPerSec, runBytes, float64(runBytes)/float64(pages), hwmRuns/1024)
	b.Logf("one row per page: %d rows, %v (%.0f pages/s), %d bytes on disk (%.2f B/page); peak RSS %d MiB",
		pages, flatTime.Round(time.Millisecond), float64(pages)/flatTime.Seconds(), flatBytes, float64(flatBytes)/float64(pages), vmHWM()/1024)
	b.Logf("runs save: %.1fx rows, %.1fx bytes, %.1fx insert time",
		float64(pages)/float64(runs), float64(flatBytes)/float64(runBytes), flatTime.Seconds()/perRun.Seconds())
}
