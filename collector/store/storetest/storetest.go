// Package storetest holds the fixtures the collector's tests share: a small
// batch whose every answer is known, and a helper that opens an embedded
// store in a test's temporary directory.
package storetest

import (
	"context"
	"testing"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Fixture constants: the sample batch's identity and its block addresses.
const (
	App      = "application_1526555215992_0001"
	Node     = "node-a"
	Boot     = "3f6d2a1e-0000-4000-8000-000000000001"
	PageSize = 4096
	// BlockA is rdd_7_3's first virtual page; BlockB is rdd_8_0's.
	BlockA = uint64(0x7f00_0000_0000)
	BlockB = uint64(0x7f10_0000_0000)
	T0     = int64(1_700_000_000_000_000_000)
)

// KPF returns kpageflags with the named bits (by number) set.
func KPF(bits ...uint) uint64 {
	var f uint64
	for _, b := range bits {
		f |= 1 << b
	}
	return f
}

// Runs of the sample's first record (rdd_7_3 on executor 1, pid 100):
// 3 present pages on node 0, 2 pages of a THP on node 1, 1 swapped page.
func runsA() []*stratav1.PageRun {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	return []*stratav1.PageRun{
		{Vaddr: BlockA, Count: 3, State: present | uint32(stratav1.PageState_PAGE_STATE_EXCLUSIVE),
			Pfn: 0x1000, Kpageflags: KPF(3, 5, 12), Kpagecount: 1, NumaNode: 0},
		{Vaddr: BlockA + 3*PageSize, Count: 2, State: present | uint32(stratav1.PageState_PAGE_STATE_THP),
			Pfn: 0x2000, Kpageflags: KPF(3, 5, 12, stratav1.KPFTHP), FolioPages: 512, Kpagecount: 1, NumaNode: 1},
		{Vaddr: BlockA + 5*PageSize, Count: 1, State: uint32(stratav1.PageState_PAGE_STATE_SWAPPED),
			NumaNode: -1, SwapType: 1, SwapOffset: 77},
	}
}

func block(exec string, rdd, part int32, id string, hook uint64) *stratav1.SparkBlock {
	return &stratav1.SparkBlock{AppId: App, ExecutorId: exec, RddId: rdd, Partition: part, BlockId: id,
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP,
		HookBlockId: hook}
}

// Sample returns batch seq of the fixture. Every seq carries the same
// records, so tests can replay or store several.
//
//   - record 0, T0: ALLOC rdd_7_3 (executor 1, pid 100), runsA, faults r5 w2 x0 M1
//   - record 1, T0+1s: READ rdd_7_3, same runs, faults r9 w3 x1 M1 (latest)
//   - record 2, T0+2s: ALLOC rdd_8_0 (executor 2, pid 200), 4 pages node 1
//   - workloads: pid 100 without PMU; pid 200 with cycles 1000, walk
//     load 50, store 25, rdd 10 over 2 s with 30 minor + 10 major faults.
func Sample(seq uint64) *stratav1.Batch {
	cycles, load, store, rdd := uint64(1000), uint64(50), uint64(25), uint64(10)
	return &stratav1.Batch{
		NodeName: Node, BootId: Boot, Seq: seq,
		Records: []*stratav1.Record{
			{TimeUnixNano: T0, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 100, Tid: 101,
				Block: block("1", 7, 3, "rdd_7_3", 11), Vaddr: BlockA, Length: 6 * PageSize, PageSize: PageSize,
				Runs: runsA(), CpuNumaNode: 0, Faults: &stratav1.FaultCounts{Read: 5, Write: 2, Major: 1}},
			{TimeUnixNano: T0 + 1e9, Access: stratav1.AccessKind_ACCESS_KIND_READ, Pid: 100, Tid: 102,
				Block: block("1", 7, 3, "rdd_7_3", 11), Vaddr: BlockA, Length: 6 * PageSize, PageSize: PageSize,
				Runs: runsA(), CpuNumaNode: 1, Faults: &stratav1.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}},
			{TimeUnixNano: T0 + 2e9, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 200, Tid: 201,
				Block: block("2", 8, 0, "rdd_8_0", 21), Vaddr: BlockB, Length: 4 * PageSize, PageSize: PageSize,
				Runs: []*stratav1.PageRun{{Vaddr: BlockB, Count: 4, State: uint32(stratav1.PageState_PAGE_STATE_PRESENT),
					Pfn: 0x3000, Kpageflags: KPF(5, 12), Kpagecount: 1, NumaNode: 1}}},
		},
		Workloads: []*stratav1.WorkloadCounters{
			{AppId: App, ExecutorId: "1", Pid: 100, StartUnixNano: T0, EndUnixNano: T0 + 2e9,
				TaskClockNs: 1e9, MinorFaults: 30, MajorFaults: 10, PmuStatus: "unavailable: no hardware PMU"},
			{AppId: App, ExecutorId: "2", Pid: 200, StartUnixNano: T0, EndUnixNano: T0 + 2e9,
				TaskClockNs: 1e9, MinorFaults: 30, MajorFaults: 10, Cycles: &cycles,
				WalkCyclesLoad: &load, WalkCyclesStore: &store, WalkCyclesRdd: &rdd, PmuStatus: "available"},
		},
	}
}

// SamplePages is how many pages Trace returns for the whole sample.
const SamplePages = 6 + 6 + 4

// Open opens an embedded store in t.TempDir() and closes it at cleanup.
func Open(tb testing.TB) *store.DuckDB {
	tb.Helper()
	s, err := store.Open(context.Background(), store.Options{Dir: tb.TempDir(), MemoryLimit: "512MB", Threads: 2})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}

// JobAdvice is the long text of a detail of every fixture job.
const JobAdvice = "Kryo is not the serializer:\nset spark.serializer to org.apache.spark.serializer.KryoSerializer."

// Jobs returns three analysed jobs, LOW, MODERATE and CRITICAL, finishing in
// that order (so newest first is CRITICAL, MODERATE, LOW); each carries a
// detail with a value and a two-line long text (JobAdvice).
func Jobs() []*stratav1.JobResult {
	var out []*stratav1.JobResult
	for i, sev := range []stratav1.Severity{stratav1.Severity_SEVERITY_LOW, stratav1.Severity_SEVERITY_MODERATE, stratav1.Severity_SEVERITY_CRITICAL} {
		out = append(out, &stratav1.JobResult{
			JobId: "job_1526555215992_000" + string(rune('1'+i)), Type: "spark", Name: "etl-" + sev.String(),
			User: "alice", Queue: "default", AppId: App, StartUnixMs: 1000, FinishUnixMs: int64(2000 + i),
			Metrics:  &stratav1.JobMetrics{UsedGbHours: 1.5, WastedGbHours: 0.5, RuntimeMs: 60000},
			Severity: sev,
			Score:    int64(10 * i),
			Heuristics: []*stratav1.HeuristicResult{{Name: "Executor GC", Severity: sev, Score: int64(10 * i), Details: []*stratav1.HeuristicDetail{
				{Name: "GC time", Value: "12%"},
				{Name: "spark.serializer", Value: "org.apache.spark.serializer.JavaSerializer", Details: JobAdvice},
			}}},
		})
	}
	return out
}

// SampleNuma is Numa's answer for the sample: the latest record of rdd_7_3
// (3 pages on node 0, 2 on node 1, 1 swapped) and rdd_8_0 (4 on node 1).
func SampleNuma() []*stratav1.NumaRow {
	return []*stratav1.NumaRow{
		{RddId: 7, NumaNode: -1, Pages: 1, Bytes: PageSize},
		{RddId: 7, NumaNode: 0, Pages: 3, Bytes: 3 * PageSize},
		{RddId: 7, NumaNode: 1, Pages: 2, Bytes: 2 * PageSize},
		{RddId: 8, NumaNode: 1, Pages: 4, Bytes: 4 * PageSize},
	}
}

// SampleFaults is Faults' answer for the sample: rdd_7_3's latest counters
// (rdd_8_0 sent none).
func SampleFaults() []*stratav1.FaultRow {
	return []*stratav1.FaultRow{{ExecutorId: "1", RddId: 7, Partition: 3, BlockId: "rdd_7_3", Pid: 100,
		Faults: &stratav1.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}}}
}

// UIJobs are Jobs plus a MapReduce job of another user and queue, SEVERE,
// that finished a day later.
func UIJobs() []*stratav1.JobResult {
	jobs := Jobs()
	jobs = append(jobs, &stratav1.JobResult{JobId: "job_1526555215992_0009", Type: "mapreduce", User: "bob", Queue: "etl",
		AppId: "application_1526555215992_0009", FinishUnixMs: 86_400_000 + 5000, Severity: stratav1.Severity_SEVERITY_SEVERE,
		Score: 300})
	return jobs
}

// JobIDs lists the jobs' ids in order.
func JobIDs(jobs []*stratav1.JobResult) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.GetJobId())
	}
	return out
}

// FillBatch is batch seq of App holding three FILL records (the faults
// of filling a block, each put once): two puts of rdd_7_3 (executor 1,
// pid 100), read 1 write 256 and write 10 major 2, summed in FillRDD7;
// one of rdd_8_5 (executor 2, pid 200), write 4 unclassified 1.
func FillBatch(seq uint64) *stratav1.Batch {
	fill := func(ts int64, exec string, pid uint32, rdd, part int32, name string, hook uint64, fc *stratav1.FaultCounts) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: ts, Access: stratav1.AccessKind_ACCESS_KIND_FILL, Pid: pid, Tid: pid + 1,
			Block: block(exec, rdd, part, name, hook), Vaddr: BlockA, Length: 6 * PageSize, PageSize: PageSize, CpuNumaNode: -1,
			Faults: fc}
	}
	return &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: seq, Records: []*stratav1.Record{
		fill(T0+5e9, "1", 100, 7, 3, "rdd_7_3", 11, &stratav1.FaultCounts{Read: 1, Write: 256}),
		fill(T0+6e9, "1", 100, 7, 3, "rdd_7_3", 12, &stratav1.FaultCounts{Write: 10, Major: 2}),
		fill(T0+7e9, "2", 200, 8, 5, "rdd_8_5", 22, &stratav1.FaultCounts{Write: 4, Unclassified: 1}),
	}}
}

// FillRDD7 is the fill faults of FillBatch's RDD 7 (rdd_7_3's two puts).
func FillRDD7() *stratav1.FaultCounts { return &stratav1.FaultCounts{Read: 1, Write: 266, Major: 2} }
