package jsonform_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The example answers docs/api.md shows, each built from the query
// service's answer it documents.
const (
	t0  = int64(1700000000000000000) // 2023-11-14T22:13:20Z
	app = "application_1526555215992_0001"
)

func ptr[T any](v T) *T { return &v }

func exampleBlock() *stratav1.SparkBlock {
	return &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: 4, Partition: 0, BlockId: "rdd_4_0", HookBlockId: 17,
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP,
		Kind: stratav1.BlockKind_BLOCK_KIND_RDD, Chunk: 0, Chunks: 1, StageId: 2, StageAttempt: 0, TaskAttemptId: 9,
		ObjectGraph: true, SparkBytes: 20688}
}

func exampleCoverage() *stratav1.Coverage {
	return &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Bytes: 10240, Objects: 210, SharedObjects: 4,
		SharedBytes: 400, OpaqueObjects: 1, GcEpoch: 2, Extents: 3}
}

// exampleHeat is RDD 4's heat from one own-kdamond sample of rdd_4_0.
func exampleHeat() *answer.Heat {
	s := &stratav1.HeatSample{AppId: app, ExecutorId: "1", Pid: 100, RddId: 4, Partition: 0, BlockId: "rdd_4_0",
		HookBlockId: 17, TimeUnixNano: t0 + 10e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: 16 << 20,
		MonitoredBytes: ptr(uint64(16 << 20)), CoveredBytes: 16 << 20, AccessRate: ptr(0.25), ColdBytes: 4 << 20,
		ColdAgeSeconds: ptr(90.0), ColdMinAgeSeconds: ptr(70.0), SourceKind: stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN,
		Source: "own: kdamond 0 scheme 0 stat, every region"}
	f := answer.HeatFiguresOf([]*stratav1.HeatSample{s}, 60e9)
	return &answer.Heat{ColdFor: 60e9, RDDs: []answer.HeatRDD{{RDD: 4, Latest: f,
		Points: []answer.HeatPoint{{TimeUnixNano: t0 + 10e9, HeatFigures: f}},
		Blocks: []answer.HeatBlock{{NodeName: "node-a", Samples: []*stratav1.HeatSample{s}}}}}}
}

func examples() map[string]any {
	report := &stratav1.ReportResponse{
		Rdds: []*stratav1.RddReport{{RddId: 4, Blocks: 2, Partitions: 2, Bytes: 16400, Pages: 6, Present: 5, Swapped: 1, Thp: 2,
			Nodes: []*stratav1.NodePages{{NumaNode: 0, Pages: 3}, {NumaNode: 1, Pages: 2}}, Reads: 3, Writes: 2, Evicted: 1,
			Faults: &stratav1.FaultCounts{Read: 6, Write: 7}, SampledFaults: 1, ObjectGraph: true, PageSize: 4096, LiveBlocks: 1,
			Moves: 2, SparkBytes: 20688, SizedBlocks: 2, ResolvedBytes: 16130, SharedBytes: 400, ResolvedShare: ptr(16130.0 / 20688),
			Parts: []*stratav1.ResolvedPart{
				{Resolution: stratav1.Resolution_RESOLUTION_WALKED, Blocks: 1, Buffers: 1, Bytes: 10240, Objects: 210,
					SharedObjects: 4, SharedBytes: 400, OpaqueObjects: 1},
				{Resolution: stratav1.Resolution_RESOLUTION_WALK_CUT, Blocks: 1, Buffers: 1, Bytes: 5890, Objects: 100,
					Details: []string{"object budget reached"}}}}},
		Occupation: []*stratav1.OccupationRow{{ExecutorId: "1", Pid: 100, NodeName: "node-a", PeakRddBytes: 36864,
			PeakTimeUnixNano: t0 + 5e9, PeakRssBytes: 122880, RssAtPeakBytes: 81920, MemTotalBytes: 25 << 30,
			OfRss: ptr(0.3), OfNode: ptr(36864.0 / (25 << 30)), RssSamples: 12}},
	}
	overRow := &stratav1.OverheadRow{Counters: &stratav1.WorkloadCounters{AppId: app, ExecutorId: "1", Pid: 100,
		StartUnixNano: t0, EndUnixNano: t0 + 2e9, TaskClockNs: 1e9, ContextSwitches: 40, CpuMigrations: 3, MinorFaults: 30,
		MajorFaults: 10, Cycles: ptr(uint64(1000)), PmuStatus: "available"},
		RddFaults: &stratav1.FaultCounts{Read: 6, Write: 7}, FaultRatePerSec: 20,
		WalkPct: ptr(7.5), WalkPctRead: ptr(5.0), WalkPctWrite: ptr(2.5), WalkPctRdd: ptr(1.0)}
	job := &stratav1.JobResult{JobId: app, Type: "spark", Name: "LogisticRegression", User: "alice", Queue: "default",
		AppId: app, StartUnixMs: 1700000000000, FinishUnixMs: 1700000060000, Source: "/var/log/spark/" + app,
		Metrics:  &stratav1.JobMetrics{UsedGbHours: 1.5, WastedGbHours: 0.5, RuntimeMs: 60000, WaitMs: 1200},
		Severity: stratav1.Severity_SEVERITY_MODERATE, Score: 20, AnalyzedUnixMs: 1700000070000,
		Heuristics: []*stratav1.HeuristicResult{{Name: "Executor GC", Severity: stratav1.Severity_SEVERITY_MODERATE, Score: 20,
			Details: []*stratav1.HeuristicDetail{{Name: "GC time", Value: "12%"},
				{Name: "spark.serializer", Value: "org.apache.spark.serializer.JavaSerializer",
					Details: "Kryo is not the serializer:\nset spark.serializer to org.apache.spark.serializer.KryoSerializer."}}}}}
	life := &query.BlockLife{App: app, ExecutorID: "1", BlockID: "rdd_4_0", RDD: 4, Partition: 0, Kind: "rdd", Mode: "storage",
		Steps: []query.LifeStep{{TimeNs: t0, Access: "alloc", PID: 100, Vaddr: 0x7f0000000000, Length: 24576, Pages: 6, Present: 5,
			Swapped: 1, THP: 2, Nodes: map[int32]uint64{0: 3, 1: 2},
			Ranges: []query.PFNRange{{First: 0x1000, Last: 0x1002, Node: 0}, {First: 0x2000, Last: 0x2001, Node: 1}},
			Faults: &stratav1.FaultCounts{Read: 5, Write: 2, Major: 1},
			Holds:  "references only: walk pending", CoverageBytes: 4000}}}
	color := func(int32) string { return "#1f77b4" }
	peak := answer.Moment{Kind: answer.MomentPeak, Default: true, AtNs: t0, Ended: true, FirstNs: t0, LastNs: t0 + 3e9,
		PeakNs: t0, PeakBytes: 20480, PeakPages: 5, Bytes: 20480, Pages: 5}
	return map[string]any{
		"page": jsonform.NewPage(&stratav1.TracePage{TimeUnixNano: t0 + 5e8, Access: stratav1.AccessKind_ACCESS_KIND_MOVE,
			Block: exampleBlock(), Pid: 100, Vaddr: 0x7f0000003000, Pfn: 0x2000, Paddr: 0x2000000, NumaNode: 1,
			Kpageflags: 1<<3 | 1<<5 | 1<<12 | 1<<15 | 1<<stratav1.KPFTHP, Kpagecount: 1,
			State: uint32(stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_THP), Coverage: exampleCoverage()}),
		"record": jsonform.NewRecord(&stratav1.RecordRow{TimeUnixNano: t0 + 5e8, Access: stratav1.AccessKind_ACCESS_KIND_MOVE,
			Block: exampleBlock(), NodeName: "node-a", Pid: 100, Tid: 101, Vaddr: 0x7f0000000000, Length: 24576, Pages: 6,
			Faults: &stratav1.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}, Coverage: exampleCoverage()}),
		"hot": jsonform.NewHotPages(&stratav1.HotResponse{Method: query.HotMethod, Pages: []*stratav1.HotPage{{
			Block: exampleBlock(), Pid: 100, Vaddr: 0x7f0000001000, Samples: 3, Reads: 2, Writes: 1, CrossNode: 1, Pfn: 0x1001,
			NumaNode: 0, Kpageflags: 1<<3 | 1<<5 | 1<<12}}}),
		"numa":     jsonform.NewNuma(&stratav1.NumaRow{RddId: 4, NumaNode: 1, Pages: 2, Bytes: 8192}),
		"faults":   jsonform.NewFaults(&stratav1.FaultRow{ExecutorId: "1", RddId: 4, Partition: 0, BlockId: "rdd_4_0", Pid: 100, Faults: &stratav1.FaultCounts{Read: 9, Write: 3, Exec: 1, Major: 1, Unclassified: 4}}),
		"overhead": jsonform.NewOverhead(overRow),
		"report":   jsonform.NewReport(app, report, &stratav1.OverheadResponse{Rows: []*stratav1.OverheadRow{overRow}}, job),
		"job":      jsonform.NewJob(job),
		"jobs": jsonform.NewJobsPage(answer.JobPage{Jobs: []*stratav1.JobResult{{JobId: "job_1526555215992_0003", Type: "mapreduce",
			Name: "wordcount", User: "bob", Queue: "etl", FinishUnixMs: 1700000060000, Severity: stratav1.Severity_SEVERITY_LOW,
			Score: 5}}, Total: 33}, answer.JobQuery{Offset: 0, Limit: 1}),
		"timeline": jsonform.NewTimeline([]answer.SeverityBucket{{StartMs: 1699920000000, Counts: [5]uint64{12, 3, 2, 0, 1}}},
			86400000),
		"apps": jsonform.NewApps([]answer.AppSummary{{AppID: app, Name: "LogisticRegression", Machines: []string{"node-a", "node-b"},
			Executors: 3, Records: 1204, LiveBlocks: 4, FirstNs: t0, LastNs: t0 + 61e9}}),
		"blocks": jsonform.NewResolvedBlocks([]answer.BlockCoverage{{ExecutorID: "1", BlockID: "rdd_3_0", Partition: 0,
			SparkBytes: 12000, Bytes: 11264, ResolvedBytes: 11264, ResolvedShare: ptr(11264.0 / 12000),
			Parts: []*stratav1.ResolvedPart{{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS, Blocks: 1, Buffers: 2,
				Bytes: 11264, Objects: 4}},
			Buffers: []answer.BufferCoverage{{Chunk: 0, Chunks: 2, PID: 100, TimeNs: t0 + 1, CachedBatch: true, Column: ptr(int32(0)),
				ColumnName: "id", Length: 5120, Pages: 2, Coverage: &stratav1.Coverage{Resolution: stratav1.Resolution_RESOLUTION_BUFFERS,
					Bytes: 5120, Objects: 2, Extents: 2}}}}}),
		"occupancy": jsonform.NewOccupancy([]query.RDDSeries{{RDD: 4, Points: []answer.OccupancyPoint{
			{RDDID: 4, TimeNs: t0, Pages: 5, Bytes: 20480}, {RDDID: 4, TimeNs: t0 + 3e9, Pages: 0, Bytes: 0}}}}, color),
		"memmap": jsonform.NewMemMap(&answer.PhysMap{Machine: "node-a", Machines: []string{"node-a"}, PageSize: 4096,
			Limit: 6291456, From: 4096, To: 4112, BucketPages: 8,
			Nodes: []answer.NodeSpan{{Node: 0, FirstPFN: 4096, LastPFN: 4098, Pages: 3}},
			Buckets: []answer.PFNBucket{{Start: 4096, End: 4104, RDDs: []answer.RDDCount{{RDDID: 4, Pages: 3}}, Nodes: 1,
				Block: &answer.BlockRef{ExecutorID: "1", BlockID: "rdd_4_0", RDDID: 4}}},
			RDDs:  []answer.RDDPages{{RDDID: 4, Present: 3, Swapped: 1}},
			Pages: 3, Runs: 1}, peak, color),
		"moment": jsonform.NewMoment(answer.Moment{Kind: answer.MomentAt, AtNs: t0 + 15e8, Ended: true, FirstNs: t0, LastNs: t0 + 3e9,
			PeakNs: t0, PeakBytes: 20480, PeakPages: 5, Bytes: 20480, Pages: 5}),
		"life":  jsonform.NewBlockLife(life),
		"heat":  jsonform.NewHeat(app, exampleHeat()),
		"error": jsonform.Error{Message: "application nope: not found: no records"},
	}
}

// Every example in docs/api.md is what the encoder writes for the answer
// it documents, indented: the document cannot drift from the form.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range examples() {
		var line bytes.Buffer
		if err := jsonform.NewEncoder(&line).Encode(v); err != nil {
			t.Fatal(err)
		}
		if bytes.Count(line.Bytes(), []byte("\n")) != 1 {
			t.Errorf("%s: %q is not one line", name, line.String())
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, bytes.TrimSpace(line.Bytes()), "", "  "); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```json\n"+pretty.String()+"\n```") {
			t.Errorf("docs/api.md lacks the %s example; the encoder writes:\n%s", name, pretty.String())
		}
	}
}
