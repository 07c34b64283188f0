package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

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

// BenchmarkIngest appends 2 Mi pages, carried as runs, into the embedded
// store (the collector's write path minus gRPC), then the same pages as one
// row each, and reports the ratios between the two.
func BenchmarkIngest(b *testing.B) {
	batches, pages, runs := storetest.BenchBatches(20, 100)
	var runTime time.Duration
	var runBytes int64
	for i := range b.N {
		d, size := ingest(b, filepath.Join(b.TempDir(), strconv.Itoa(i)), batches)
		runTime += d
		runBytes = size
	}
	b.StopTimer()
	hwmRuns := storetest.PeakRSSKiB("self")
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
		pages, flatTime.Round(time.Millisecond), float64(pages)/flatTime.Seconds(), flatBytes, float64(flatBytes)/float64(pages), storetest.PeakRSSKiB("self")/1024)
	b.Logf("runs save: %.1fx rows, %.1fx bytes, %.1fx insert time",
		float64(pages)/float64(runs), float64(flatBytes)/float64(runBytes), flatTime.Seconds()/perRun.Seconds())
}

// BenchmarkQueries times the query paths over the benchmark's 2 Mi pages:
// Trace expands every run in Go; Numa expands the latest runs in SQL.
func BenchmarkQueries(b *testing.B) {
	ctx := context.Background()
	batches, pages, _ := storetest.BenchBatches(20, 100)
	dir := b.TempDir()
	ingest(b, dir, batches)
	s, err := store.Open(ctx, store.Options{Dir: dir, MemoryLimit: "1GB", Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		n := 0
		if err := s.Trace(ctx, answer.TraceQuery{AppID: "app-bench"}, func(*stratav1.TracePage) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != pages {
			b.Fatalf("trace: %d pages, want %d", n, pages)
		}
		traceTook := time.Since(start)
		start = time.Now()
		rows, err := s.Numa(ctx, "app-bench")
		if err != nil {
			b.Fatal(err)
		}
		numaTook := time.Since(start)
		start = time.Now()
		if _, err := s.Faults(ctx, "app-bench"); err != nil {
			b.Fatal(err)
		}
		faultsTook := time.Since(start)
		var counted uint64
		for _, r := range rows {
			counted += r.GetPages()
		}
		if counted != uint64(pages) {
			b.Fatalf("numa counted %d pages, want %d", counted, pages)
		}
		b.ReportMetric(float64(pages)/traceTook.Seconds(), "trace-pages/s")
		b.ReportMetric(float64(numaTook.Milliseconds()), "numa-ms")
		b.ReportMetric(float64(faultsTook.Milliseconds()), "faults-ms")
		b.Logf("trace %d pages in %v, numa in %v, faults in %v", pages, traceTook.Round(time.Millisecond),
			numaTook.Round(time.Millisecond), faultsTook.Round(time.Millisecond))
	}
}

// BenchmarkSmallBatches appends batches of 8 records each, the size an
// agent cuts every second beside a small job, and reports the time a batch
// takes; the store's fixed cost per batch dominates it.
func BenchmarkSmallBatches(b *testing.B) {
	batches, _, _ := storetest.BenchBatches(b.N, 8)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Dir: b.TempDir(), MemoryLimit: "1GB", Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for _, bt := range batches {
		if _, err := s.Append(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
}
