package storetest

import (
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The coverage scenario (issue 23): one executor process (pid 100,
// executor "1") caches, with an agent that reports what its records hold
// (Record.coverage, SparkBlock.spark_bytes):
//
//   - RDD 2, serialized: rdd_2_0 in two buffers, resolved BUFFERS;
//   - RDD 3, a cached DataFrame: rdd_3_0's two columns ("id", "name"),
//     one hook block each, over two batches: each column's REGISTER names
//     its first batch's buffer (BUFFERS, "the first batch's buffer; the
//     column's buffers follow"), and its walk a nanosecond later both
//     buffers (a MOVE record whose runs are their pages, BUFFERS with
//     their bytes, 2 objects and 2 extents);
//   - RDD 4, deserialized and walked: rdd_4_0's array (REFERENCES, walk
//     pending), its walk, a STALE mark, a new walk split by the agent into
//     two records, and a read of it; rdd_4_1's array, a walk its object
//     budget cut, and a STALE mark never followed by a walk;
//   - RDD 5, deserialized, never walked ("walking off").
//
// The first batch ends at t6 with every block live; the second frees them
// all at t8, when the session ends. Every answer is worked out by hand
// below (CoverageRDDs, CoverageNuma, CoverageOccupation, CoverageBlocks).
const (
	// CoverageApp is the scenario's application.
	CoverageApp = "application_1526555215992_0023"
	coverBase   = uint64(0x7d00_0000_0000)
)

// Spark's sizes of the scenario's blocks: rdd_3_0's counts its batches'
// objects and statistics besides the column buffers (11,264 bytes).
const (
	CoverRDD2Spark  = 3*PageSize + 2000
	CoverRDD3Spark  = 12000
	CoverRDD40Spark = 12000
	CoverRDD41Spark = 9000
	CoverRDD5Spark  = 50000
)

// coverAddr is the first address of the scenario's range number i.
func coverAddr(i int) uint64 { return coverBase + uint64(i)<<20 }

func coverBlock(rdd, part int32, hook uint64, chunk, chunks uint32, spark uint64) *stratav1.SparkBlock {
	b := block("1", rdd, part, "rdd_"+itoa(rdd)+"_"+itoa(part), hook)
	b.AppId, b.Kind, b.Chunk, b.Chunks, b.SparkBytes = CoverageApp, stratav1.BlockKind_BLOCK_KIND_RDD, chunk, chunks, spark
	b.StageId, b.StageAttempt, b.TaskAttemptId = 1, 0, int64(10+part)
	return b
}

// columnBlock is column col of rdd_3_0, a cached DataFrame block: chunk
// col of its 2.
func columnBlock(col int32, name string) *stratav1.SparkBlock {
	b := coverBlock(3, 0, uint64(3+col), uint32(col), 2, CoverRDD3Spark)
	b.CachedBatch, b.Column, b.ColumnName = true, proto.Int32(col), name
	return b
}

func graphBlock(rdd, part int32, hook, spark uint64) *stratav1.SparkBlock {
	b := coverBlock(rdd, part, hook, 0, 1, spark)
	b.ObjectGraph = true
	return b
}

// coverRec is one record at second s after T0, pid 100, with coverage.
func coverRec(s int64, access stratav1.AccessKind, blk *stratav1.SparkBlock, vaddr, length uint64, cov *stratav1.Coverage,
	runs ...*stratav1.PageRun) *stratav1.Record {
	return &stratav1.Record{TimeUnixNano: T0 + s*1e9, Access: access, Pid: 100, Tid: 101, Block: blk, Vaddr: vaddr,
		Length: length, PageSize: PageSize, Runs: runs, CpuNumaNode: -1, Coverage: cov}
}

func buffers(n uint64) *stratav1.Coverage {
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: n}
}

// firstBuffer is the coverage of a column's record of its first batch's
// buffer alone (n bytes).
func firstBuffer(n uint64) *stratav1.Coverage {
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: n,
		Detail: "the first batch's buffer; the column's buffers follow"}
}

// columnBuffers is the coverage of a column's walk: its two batches'
// buffers, n bytes.
func columnBuffers(n uint64) *stratav1.Coverage {
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Bytes: n, Objects: 2, Extents: 2}
}

func references(n uint64, why string) *stratav1.Coverage {
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_REFERENCES, Bytes: n, Detail: why}
}

// The walks of rdd_4_0 (before and after the STALE mark) and rdd_4_1's.
var (
	coverWalk1 = &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Bytes: 10000, Objects: 200,
		SharedObjects: 10, SharedBytes: 400, OpaqueObjects: 1, GcEpoch: 1, Extents: 2}
	coverWalk2 = &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Bytes: 10400, Objects: 210,
		SharedObjects: 10, SharedBytes: 400, OpaqueObjects: 1, GcEpoch: 2, Extents: 2}
	coverCut = &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_WALK_CUT, Bytes: 6000, Objects: 100,
		GcEpoch: 1, Extents: 1}
)

// The array of references of rdd_4_0 and rdd_4_1 (1,000 records each).
const coverArray = 4016

// CoverageBatches returns the scenario's two batches.
func CoverageBatches() []*stratav1.Batch {
	const (
		alloc = stratav1.AccessKind_ACCESS_KIND_ALLOC
		read  = stratav1.AccessKind_ACCESS_KIND_READ
		free  = stratav1.AccessKind_ACCESS_KIND_FREE
		move  = stratav1.AccessKind_ACCESS_KIND_MOVE
	)
	p := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	thp := p | uint32(stratav1.PageState_PAGE_STATE_THP)
	swapped := uint32(stratav1.PageState_PAGE_STATE_SWAPPED)
	s20, s21 := coverBlock(2, 0, 1, 0, 2, CoverRDD2Spark), coverBlock(2, 0, 2, 1, 2, CoverRDD2Spark)
	cols := []*stratav1.SparkBlock{columnBlock(0, "id"), columnBlock(1, "name")}
	// The buffers of batch 0 then batch 1, of column i%2, at coverAddr(2+i).
	colLen := []uint64{4096, 4096, 1024, 2048}
	g40, g41 := graphBlock(4, 0, 7, CoverRDD40Spark), graphBlock(4, 1, 8, CoverRDD41Spark)
	g50 := graphBlock(5, 0, 9, CoverRDD5Spark)
	pending := "walk pending"
	walk2 := []*stratav1.PageRun{reportRun(coverAddr(23), 3, thp, 0, 0x2300), reportRun(coverAddr(24), 1, swapped, -1, 5)}
	first := &stratav1.Batch{
		NodeName: Node, BootId: Boot, Seq: 1,
		Node: &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize, MemTotalBytes: ReportMemTotal},
		Records: []*stratav1.Record{
			// t0: rdd_2_0's two buffers: 3 pages on node 0, 2,000 bytes on node 1.
			coverRec(0, alloc, s20, coverAddr(0), 3*PageSize, buffers(3*PageSize), reportRun(coverAddr(0), 3, p, 0, 0x1000)),
			coverRec(0, alloc, s21, coverAddr(1), 2000, buffers(2000), reportRun(coverAddr(1), 1, p, 1, 0x1100)),
		},
	}
	// t1: rdd_3_0's two columns, their first batch's buffers; a
	// nanosecond later their walks, both batches' buffers: a page each on
	// node 0.
	for i, b := range cols {
		first.Records = append(first.Records, coverRec(1, alloc, b, coverAddr(2+i), colLen[i], firstBuffer(colLen[i]),
			reportRun(coverAddr(2+i), 1, p, 0, 0x1200+uint64(i))))
	}
	for i, b := range cols {
		w := coverRec(1, move, b, coverAddr(2+i), colLen[i], columnBuffers(colLen[i]+colLen[2+i]),
			reportRun(coverAddr(2+i), 1, p, 0, 0x1200+uint64(i)), reportRun(coverAddr(4+i), 1, p, 0, 0x1202+uint64(i)))
		w.TimeUnixNano++
		first.Records = append(first.Records, w)
	}
	first.Records = append(first.Records,
		// t2: the deserialized blocks' arrays of references.
		coverRec(2, alloc, g40, coverAddr(6), coverArray, references(coverArray, pending), reportRun(coverAddr(6), 1, p, 0, 0x1300)),
		coverRec(2, alloc, g41, coverAddr(7), coverArray, references(coverArray, pending), reportRun(coverAddr(7), 1, p, 0, 0x1301)),
		coverRec(2, alloc, g50, coverAddr(8), 2*PageSize, references(2*PageSize, "walking off"), reportRun(coverAddr(8), 2, p, 1, 0x1400)),
		// t3: rdd_4_0 walked (3 pages in 2 extents); rdd_4_1's walk cut (2 pages).
		coverRec(3, move, g40, coverAddr(6), coverArray, coverWalk1,
			reportRun(coverAddr(20), 2, p, 0, 0x2000), reportRun(coverAddr(21), 1, p, 1, 0x2100)),
		coverRec(3, move, g41, coverAddr(7), coverArray, coverCut, reportRun(coverAddr(22), 2, p, 0, 0x2200)),
		// t4: a GC moved rdd_4_0's objects and its array: STALE.
		coverRec(4, move, g40, coverAddr(9), coverArray, references(coverArray, "stale: objects moved by GC 2, walk pending"),
			reportRun(coverAddr(9), 1, p, 0, 0x1500)),
		// t5: its new walk, 3 THP pages and a swapped one, split by the
		// agent into two records that each carry the whole coverage.
		coverRec(5, move, g40, coverAddr(9), coverArray/2, coverWalk2, walk2[0]),
		coverRec(5, move, g40, coverAddr(9)+coverArray/2, coverArray-coverArray/2, coverWalk2, walk2[1]),
		// t6: rdd_4_0 read with its usable walk; rdd_4_1's walk goes stale
		// and is never walked again.
		coverRec(6, read, g40, coverAddr(9), coverArray, coverWalk2, walk2...),
		coverRec(6, move, g41, coverAddr(10), coverArray, references(coverArray, "stale: objects moved by GC 3, walk pending"),
			reportRun(coverAddr(10), 1, p, 0, 0x1600)),
	)
	second := &stratav1.Batch{
		NodeName: Node, BootId: Boot, Seq: 2,
		Node: &stratav1.NodeInfo{NumaNodes: 2, PageSize: PageSize, MemTotalBytes: ReportMemTotal},
	}
	// t8: the session ends.
	ended := func(b *stratav1.SparkBlock, vaddr, length uint64) *stratav1.Record {
		r := coverRec(8, free, b, vaddr, length, nil)
		r.FreeReason = stratav1.FreeReason_FREE_REASON_SESSION_END
		return r
	}
	second.Records = append(second.Records, ended(s20, coverAddr(0), 3*PageSize), ended(s21, coverAddr(1), 2000))
	for i, b := range cols {
		second.Records = append(second.Records, ended(b, coverAddr(2+i), colLen[i]))
	}
	second.Records = append(second.Records, ended(g40, coverAddr(9), coverArray), ended(g41, coverAddr(10), coverArray),
		ended(g50, coverAddr(8), 2*PageSize))
	return []*stratav1.Batch{first, second}
}

// CoverageRDDs is RDDs' answer for the scenario, at t6 (live true: every
// block live) or after the session's end (none live): each buffer as last
// resolved while live, preferring its latest resolved record.
//
//   - RDD 2: both buffers at t0 (3 pages on node 0, 1 on node 1), 14,288
//     bytes of Spark's 14,288: buffers 100 %.
//   - RDD 3: its two columns' walks, two buffers each (4 pages on node
//     0), 11,264 bytes of Spark's 12,000, not their first buffers alone;
//     writes: the columns' allocs; moves: their walks.
//   - RDD 4: rdd_4_0 as read at t6 with its second walk (3 THP pages on
//     node 0, 1 swapped; 10,400 bytes, 210 objects, 10 of 400 bytes
//     shared) — not its STALE array of t4; rdd_4_1 as its cut walk of t3
//     (2 pages on node 0; 6,000 bytes), not its STALE array of t6: 16,400
//     bytes of Spark's 21,000. Writes: the two allocs; moves: rdd_4_0 at
//     t3, t4, t5 (two records, one move) and rdd_4_1 at t3, t6.
//   - RDD 5: its array of references only (2 pages on node 1), 8,192
//     bytes, "walking off": none of Spark's 50,000 resolved.
func CoverageRDDs(live bool) []*stratav1.RddReport {
	n := func(v uint64) uint64 {
		if live {
			return v
		}
		return 0
	}
	share := func(a, b float64) *float64 { v := a / b; return &v }
	none := &stratav1.FaultCounts{}
	buffers := stratav1.Resolution_RESOLUTION_BUFFERS
	return []*stratav1.RddReport{
		{RddId: 2, Blocks: 1, Partitions: 1, Bytes: CoverRDD2Spark, Pages: 4, Present: 4,
			Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 3}, {NumaNode: 1, Pages: 1}}, Writes: 1, Faults: none,
			PageSize: PageSize, LiveBlocks: n(1), SparkBytes: CoverRDD2Spark, SizedBlocks: 1, ResolvedBytes: CoverRDD2Spark,
			ResolvedShare: share(1, 1),
			Parts:         []*stratav1.ResolvedPart{{Resolution: buffers, Blocks: 1, Buffers: 2, Bytes: CoverRDD2Spark}}},
		{RddId: 3, Blocks: 1, Partitions: 1, Bytes: 11264, Pages: 4, Present: 4,
			Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 4}}, Writes: 1, Moves: 2, Faults: none,
			PageSize: PageSize, LiveBlocks: n(1), SparkBytes: CoverRDD3Spark, SizedBlocks: 1, ResolvedBytes: 11264,
			ResolvedShare: share(11264, CoverRDD3Spark),
			Parts:         []*stratav1.ResolvedPart{{Resolution: buffers, Blocks: 1, Buffers: 2, Bytes: 11264, Objects: 4}}},
		{RddId: 4, Blocks: 2, Partitions: 2, Bytes: 16400, Pages: 6, Present: 5, Swapped: 1, Thp: 3,
			Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 5}}, Reads: 1, Writes: 2, Moves: 5, Faults: none,
			ObjectGraph: true, PageSize: PageSize, LiveBlocks: n(2), SparkBytes: CoverRDD40Spark + CoverRDD41Spark, SizedBlocks: 2,
			ResolvedBytes: 16400, SharedBytes: 400, ResolvedShare: share(16400, CoverRDD40Spark+CoverRDD41Spark),
			Parts: []*stratav1.ResolvedPart{
				{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Blocks: 1, Buffers: 1, Bytes: 10400, Objects: 210,
					SharedObjects: 10, SharedBytes: 400, OpaqueObjects: 1},
				{Resolution: stratav1.Resolution_RESOLUTION_WALK_CUT, Blocks: 1, Buffers: 1, Bytes: 6000, Objects: 100},
			}},
		{RddId: 5, Blocks: 1, Partitions: 1, Bytes: 2 * PageSize, Pages: 2, Present: 2,
			Nodes: []*stratav1.NodePages{{NumaNode: 1, Pages: 2}}, Writes: 1, Faults: none, ObjectGraph: true,
			PageSize: PageSize, LiveBlocks: n(1), SparkBytes: CoverRDD5Spark, SizedBlocks: 1, ResolvedShare: share(0, 1),
			Parts: []*stratav1.ResolvedPart{{Resolution: stratav1.Resolution_RESOLUTION_REFERENCES, Blocks: 1, Buffers: 1,
				Bytes: 2 * PageSize, Details: []string{"walking off"}}}},
	}
}

// CoverageNuma is Numa's answer at t6: the live buffers' latest records
// that hold — rdd_4_0's read of its second walk (3 pages on node 0, a
// swapped one under -1), rdd_4_1's cut walk, not their STALE arrays.
func CoverageNuma() []*stratav1.NumaRow {
	return []*stratav1.NumaRow{
		{RddId: 2, NumaNode: 0, Pages: 3, Bytes: 3 * PageSize},
		{RddId: 2, NumaNode: 1, Pages: 1, Bytes: PageSize},
		{RddId: 3, NumaNode: 0, Pages: 4, Bytes: 4 * PageSize},
		{RddId: 4, NumaNode: -1, Pages: 1, Bytes: PageSize},
		{RddId: 4, NumaNode: 0, Pages: 5, Bytes: 5 * PageSize},
		{RddId: 5, NumaNode: 1, Pages: 2, Bytes: 2 * PageSize},
	}
}

// CoverageOccupation is pid 100's present pages over time: 4 at t0, 8 at
// t1, 10 at t2 (rdd_5_0's array; the arrays of the blocks walked later
// never hold), 15 at t3 (the walks: the peak, first reached then), still
// 15 after the STALE mark of t4, the new walk of t5 and the read of t6,
// and none after t8.
func CoverageOccupation() []*stratav1.OccupationRow {
	return []*stratav1.OccupationRow{
		{ExecutorId: "1", Pid: 100, NodeName: Node, PeakRddBytes: 15 * PageSize, PeakTimeUnixNano: T0 + 3e9,
			MemTotalBytes: ReportMemTotal, OfNode: proto.Float64(float64(15*PageSize) / float64(ReportMemTotal))},
	}
}

// CoverageOccupancy is Occupancy over nine buckets of the scenario (one
// per second from t0 to t8), as "rdd@second:pages".
// RDD 4's steps at t5 and t6 hold what it held: they still make points.
const CoverageOccupancy = "2@0:4 3@1:4 5@2:2 4@3:5 4@5:5 4@6:5 2@8:0 3@8:0 4@8:0 5@8:0"

// CoverageBlocks is Blocks' answer for RDDs 3 and 4 of the scenario (the
// same after t6 and after the end).
func CoverageBlocks(rdd int32) []answer.BlockCoverage {
	share := func(a, b float64) *float64 { v := a / b; return &v }
	switch rdd {
	case 3:
		colLen := []uint64{4096, 4096, 1024, 2048}
		b := answer.BlockCoverage{ExecutorID: "1", BlockID: "rdd_3_0", SparkBytes: CoverRDD3Spark, Bytes: 11264,
			ResolvedBytes: 11264, ResolvedShare: share(11264, CoverRDD3Spark),
			Parts: []*stratav1.ResolvedPart{{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Blocks: 1, Buffers: 2, Bytes: 11264,
				Objects: 4}}}
		// Each column as its walk left it: its buffers' bytes and pages,
		// its first buffer's range.
		for i, name := range []string{"id", "name"} {
			cov := columnBuffers(colLen[i] + colLen[2+i])
			cov.Extents = 0 // not listed per buffer
			b.Buffers = append(b.Buffers, answer.BufferCoverage{Chunk: uint32(i), Chunks: 2, PID: 100, TimeNs: T0 + 1e9 + 1,
				Coverage: cov, CachedBatch: true, Column: proto.Int32(int32(i)), ColumnName: name, Length: colLen[i], Pages: 2})
		}
		return []answer.BlockCoverage{b}
	case 4:
		walk := proto.CloneOf(coverWalk2)
		walk.GcEpoch, walk.Extents = 0, 0 // not listed per buffer
		cut := proto.CloneOf(coverCut)
		cut.GcEpoch, cut.Extents = 0, 0
		return []answer.BlockCoverage{
			{ExecutorID: "1", BlockID: "rdd_4_0", SparkBytes: CoverRDD40Spark, Bytes: 10400, ResolvedBytes: 10400,
				SharedBytes: 400, ResolvedShare: share(10400, CoverRDD40Spark),
				Parts: []*stratav1.ResolvedPart{{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Blocks: 1, Buffers: 1,
					Bytes: 10400, Objects: 210, SharedObjects: 10, SharedBytes: 400, OpaqueObjects: 1}},
				Buffers: []answer.BufferCoverage{{Chunks: 1, PID: 100, TimeNs: T0 + 6e9, Coverage: walk, Length: coverArray, Pages: 4}}},
			{ExecutorID: "1", BlockID: "rdd_4_1", Partition: 1, SparkBytes: CoverRDD41Spark, Bytes: 6000, ResolvedBytes: 6000,
				ResolvedShare: share(6000, CoverRDD41Spark),
				Parts: []*stratav1.ResolvedPart{{Resolution: stratav1.Resolution_RESOLUTION_WALK_CUT, Blocks: 1, Buffers: 1,
					Bytes: 6000, Objects: 100}},
				Buffers: []answer.BufferCoverage{{Chunks: 1, PID: 100, TimeNs: T0 + 3e9, Coverage: cut, Length: coverArray, Pages: 2}}},
		}
	}
	return nil
}
