package storetest

import (
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The report scenario: one executor process (pid 100, executor "1") caches
// RDD 7 (rdd_7_0 in two chunks, rdd_7_1 evicted and cached again) and
// RDD 9 (one deserialized block), allocates a Tungsten page of RDD 7's
// task (execution memory: never part of an RDD), and ends; a second
// process (pid 300, the driver) only sends memory samples. Every answer of
// RDDs and Occupation is worked out by hand in ReportRDDs and
// ReportOccupation.
const (
	// ReportMemTotal is the node's MemTotal in the scenario.
	ReportMemTotal = uint64(1 << 30)
	reportBase     = uint64(0x7e00_0000_0000)
)

// reportAddr is the first address of the scenario's block number i.
func reportAddr(i int) uint64 { return reportBase + uint64(i)<<20 }

func reportRun(vaddr uint64, count uint32, state uint32, node int32, pfn uint64) *stratav1.PageRun {
	r := &stratav1.PageRun{Vaddr: vaddr, Count: count, State: state, NumaNode: node}
	if state&uint32(stratav1.PageState_PAGE_STATE_PRESENT) != 0 {
		r.Pfn = pfn
	} else {
		r.NumaNode = -1
	}
	if state&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 {
		r.SwapType, r.SwapOffset = 1, pfn
	}
	if state&uint32(stratav1.PageState_PAGE_STATE_THP) != 0 {
		r.FolioPages = 512
	}
	return r
}

// reportRec is one record of the scenario: second s after T0, pid 100.
func reportRec(s int64, access stratav1.AccessKind, blk *stratav1.SparkBlock, vaddr uint64, pages uint64, runs ...*stratav1.PageRun) *stratav1.Record {
	return &stratav1.Record{TimeUnixNano: T0 + s*1e9, Access: access, Pid: 100, Tid: 101, Block: blk,
		Vaddr: vaddr, Length: pages * PageSize, PageSize: PageSize, Runs: runs, CpuNumaNode: -1}
}

func rddBlock(rdd, part int32, hook uint64, chunk, chunks uint32) *stratav1.SparkBlock {
	b := block("1", rdd, part, "rdd_"+itoa(rdd)+"_"+itoa(part), hook)
	b.Kind, b.Chunk, b.Chunks = stratav1.BlockKind_BLOCK_KIND_RDD, chunk, chunks
	return b
}

func itoa(v int32) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

// ReportBatches returns the scenario's two batches (the second holds the
// session's end).
func ReportBatches() []*stratav1.Batch {
	const (
		alloc = stratav1.AccessKind_ACCESS_KIND_ALLOC
		read  = stratav1.AccessKind_ACCESS_KIND_READ
		free  = stratav1.AccessKind_ACCESS_KIND_FREE
		move  = stratav1.AccessKind_ACCESS_KIND_MOVE
		fault = stratav1.AccessKind_ACCESS_KIND_FAULT
	)
	p := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	thp := p | uint32(stratav1.PageState_PAGE_STATE_THP)
	swapped := uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	c00, c01 := rddBlock(7, 0, 1, 0, 2), rddBlock(7, 0, 2, 1, 2)
	b71, b71again, b90 := rddBlock(7, 1, 3, 0, 1), rddBlock(7, 1, 4, 0, 1), rddBlock(9, 0, 6, 0, 1)
	b90.ObjectGraph = true
	page := block("1", 7, 0, "page_40_0", 5)
	page.Kind, page.Mode = stratav1.BlockKind_BLOCK_KIND_TUNGSTEN_PAGE, stratav1.MemoryMode_MEMORY_MODE_EXECUTION
	counters := func(r *stratav1.Record, f *stratav1.FaultCounts) *stratav1.Record {
		r.Access, r.Faults, r.Runs = fault, f, nil
		return r
	}
	withFree := func(r *stratav1.Record, why stratav1.FreeReason) *stratav1.Record {
		r.FreeReason = why
		return r
	}
	first := &stratav1.Batch{
		NodeName: Node, BootId: Boot, Seq: 1,
		Node: &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize, MemTotalBytes: ReportMemTotal},
		Records: []*stratav1.Record{
			// t0: rdd_7_0 in two chunks: 4 pages on node 0, 2 THP pages on node 1.
			reportRec(0, alloc, c00, reportAddr(0), 4, reportRun(reportAddr(0), 4, p, 0, 0x100)),
			reportRec(0, alloc, c01, reportAddr(1), 2, reportRun(reportAddr(1), 2, thp, 1, 0x200)),
			// t1: rdd_7_1: 2 pages on node 0, 1 swapped.
			reportRec(1, alloc, b71, reportAddr(2), 3, reportRun(reportAddr(2), 2, p, 0, 0x300), reportRun(reportAddr(2)+2*PageSize, 1, swapped, -1, 9)),
			// t2: both chunks of rdd_7_0 read (one access of the block).
			reportRec(2, read, c00, reportAddr(0), 4, reportRun(reportAddr(0), 4, p, 0, 0x100)),
			reportRec(2, read, c01, reportAddr(1), 2, reportRun(reportAddr(1), 2, thp, 1, 0x200)),
			// t3: rdd_7_1 read, the record split in two sub-ranges by the agent.
			reportRec(3, read, b71, reportAddr(2), 2, reportRun(reportAddr(2), 2, p, 0, 0x300)),
			reportRec(3, read, b71, reportAddr(2)+2*PageSize, 1, reportRun(reportAddr(2)+2*PageSize, 1, swapped, -1, 9)),
			// Counters: rdd_7_0 chunk 0 (r3 w1, then r5 w2), rdd_7_1 (r1).
			counters(reportRec(3, read, c00, reportAddr(0), 4), &stratav1.FaultCounts{Read: 3, Write: 1}),
			counters(reportRec(4, read, c00, reportAddr(0), 4), &stratav1.FaultCounts{Read: 5, Write: 2}),
			counters(reportRec(4, read, b71, reportAddr(2), 3), &stratav1.FaultCounts{Read: 1}),
			// t4: rdd_7_1 evicted; t5: cached again, 3 pages on node 0.
			withFree(reportRec(4, free, b71, reportAddr(2), 3), stratav1.FreeReason_FREE_REASON_EVICTED),
			reportRec(5, alloc, b71again, reportAddr(3), 3, reportRun(reportAddr(3), 3, p, 0, 0x400)),
			// A sampled fault in rdd_7_0's second chunk.
			{TimeUnixNano: T0 + 5e9, Access: fault, Pid: 100, Tid: 101, Block: c01, Vaddr: reportAddr(1), Length: 1, PageSize: PageSize,
				Runs: []*stratav1.PageRun{reportRun(reportAddr(1), 1, thp, 1, 0x200)}, CpuNumaNode: 0, FaultKind: stratav1.FaultKind_FAULT_KIND_WRITE},
		},
		Processes: []*stratav1.ProcessMemory{
			{AppId: App, ExecutorId: "1", Pid: 100, TimeUnixNano: T0 + 5e8, RssBytes: 40 << 10, HwmBytes: 40 << 10},
			{AppId: App, ExecutorId: "1", Pid: 100, TimeUnixNano: T0 + 35e8, RssBytes: 80 << 10, HwmBytes: 100 << 10},
			{AppId: App, ExecutorId: "driver", Pid: 300, TimeUnixNano: T0 + 1e9, RssBytes: 1 << 20, HwmBytes: 2 << 20},
		},
	}
	second := &stratav1.Batch{
		NodeName: Node, BootId: Boot, Seq: 2,
		Node: &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize, MemTotalBytes: ReportMemTotal},
		Records: []*stratav1.Record{
			// t6: rdd_7_0 chunk 0 moved: 1 of its 4 pages present now.
			reportRec(6, move, c00, reportAddr(4), 4, reportRun(reportAddr(4), 1, p, 0, 0x500), reportRun(reportAddr(4)+PageSize, 3, 0, -1, 0)),
			// A Tungsten page of RDD 7's task: execution memory.
			reportRec(6, alloc, page, reportAddr(5), 10, reportRun(reportAddr(5), 10, p, 0, 0x600)),
			counters(reportRec(6, read, page, reportAddr(5), 10), &stratav1.FaultCounts{Read: 100}),
			counters(reportRec(6, read, b71again, reportAddr(3), 3), &stratav1.FaultCounts{Write: 4}),
			// t7: rdd_9_0, deserialized: its reference array, 1 page.
			reportRec(7, alloc, b90, reportAddr(6), 1, reportRun(reportAddr(6), 1, p, 0, 0x700)),
			// t8: the session ends.
			withFree(reportRec(8, free, c00, reportAddr(4), 4), stratav1.FreeReason_FREE_REASON_SESSION_END),
			withFree(reportRec(8, free, c01, reportAddr(1), 2), stratav1.FreeReason_FREE_REASON_SESSION_END),
			// rdd_7_1's free carries its final counters (w5), as the agent sends them.
			func() *stratav1.Record {
				r := withFree(reportRec(8, free, b71again, reportAddr(3), 3), stratav1.FreeReason_FREE_REASON_SESSION_END)
				r.Faults = &stratav1.FaultCounts{Write: 5}
				return r
			}(),
			withFree(reportRec(8, free, page, reportAddr(5), 10), stratav1.FreeReason_FREE_REASON_SESSION_END),
			withFree(reportRec(8, free, b90, reportAddr(6), 1), stratav1.FreeReason_FREE_REASON_SESSION_END),
		},
		Processes: []*stratav1.ProcessMemory{
			{AppId: App, ExecutorId: "1", Pid: 100, TimeUnixNano: T0 + 9e9, RssBytes: 50 << 10, HwmBytes: 120 << 10},
		},
	}
	return []*stratav1.Batch{first, second}
}

// ReportRDDs is RDDs' answer for the scenario.
//
// RDD 7: blocks rdd_7_0 and rdd_7_1; as last resolved while live: chunk 0
// of rdd_7_0 after its move (4 pages, 1 present on node 0), chunk 1 at its
// read (2 THP pages on node 1), rdd_7_1's second registration (3 pages on
// node 0); reads: rdd_7_0 once (both chunks at t2) and rdd_7_1 once (two
// sub-range records); writes: the allocs of chunk 0 of rdd_7_0 and both
// registrations of rdd_7_1; one move (chunk 0 of rdd_7_0); one eviction;
// faults r5 w2 + r1 + w5 (the counters on rdd_7_1's free are its latest),
// and one sample; no block live after the session's end. RDD 9: one
// deserialized page. The agent sent no coverage and no Spark sizes: every
// buffer is in the UNSPECIFIED part, by its length, and no share is known.
func ReportRDDs() []*stratav1.RddReport {
	return []*stratav1.RddReport{
		{RddId: 7, Blocks: 2, Partitions: 2, Bytes: 9 * PageSize, Pages: 9, Present: 6, Swapped: 0, Thp: 2,
			Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 4}, {NumaNode: 1, Pages: 2}},
			Reads: 2, Writes: 3, Evicted: 1, Faults: &stratav1.FaultCounts{Read: 6, Write: 7}, SampledFaults: 1, PageSize: PageSize,
			Moves: 1, Parts: []*stratav1.ResolvedPart{{Blocks: 2, Buffers: 3, Bytes: 9 * PageSize}}},
		{RddId: 9, Blocks: 1, Partitions: 1, Bytes: PageSize, Pages: 1, Present: 1,
			Nodes:  []*stratav1.NodePages{{NumaNode: 0, Pages: 1}},
			Writes: 1, Faults: &stratav1.FaultCounts{}, ObjectGraph: true, PageSize: PageSize,
			Parts: []*stratav1.ResolvedPart{{Blocks: 1, Buffers: 1, Bytes: PageSize}}},
	}
}

// ReportOccupation is Occupation's answer for the scenario. Pid 100's RDD
// blocks hold 6 present pages at t0, 8 at t1, 6 after the eviction at t4,
// 9 at t5 (the peak), 6 after the move at t6, 7 at t7 and none after t8;
// its latest sample before t5 says 80 KiB resident, its peak resident set
// is 120 KiB. The driver has samples only.
func ReportOccupation() []*stratav1.OccupationRow {
	ofRSS, ofNode, zero := float64(9*PageSize)/float64(120<<10), float64(9*PageSize)/float64(ReportMemTotal), 0.0
	return []*stratav1.OccupationRow{
		{ExecutorId: "1", Pid: 100, NodeName: Node, PeakRddBytes: 9 * PageSize, PeakTimeUnixNano: T0 + 5e9,
			PeakRssBytes: 120 << 10, RssAtPeakBytes: 80 << 10, MemTotalBytes: ReportMemTotal, OfRss: &ofRSS, OfNode: &ofNode, RssSamples: 3},
		{ExecutorId: "driver", Pid: 300, NodeName: Node, PeakRssBytes: 2 << 20, RssAtPeakBytes: 1 << 20,
			MemTotalBytes: ReportMemTotal, OfRss: &zero, OfNode: &zero, RssSamples: 1},
	}
}
