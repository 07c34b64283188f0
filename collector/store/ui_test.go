package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// uiJobs are the fixture jobs plus a MapReduce job of another user and
// queue that finished a day later.
func uiJobs() []*stratav1.JobResult {
	jobs := storetest.Jobs()
	jobs = append(jobs, &stratav1.JobResult{JobId: "job_1526555215992_0009", Type: "mapreduce", User: "bob", Queue: "etl",
		AppId: "application_1526555215992_0009", FinishUnixMs: 86_400_000 + 5000, Severity: stratav1.Severity_SEVERITY_SEVERE,
		Score: 300})
	return jobs
}

func jobIDs(jobs []*stratav1.JobResult) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.GetJobId())
	}
	return out
}

func TestSearchJobs(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	jobs := uiJobs()
	for _, j := range jobs {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		q     store.JobQuery
		want  []string
		total uint64
	}{
		{"all newest first", store.JobQuery{}, jobIDs([]*stratav1.JobResult{jobs[3], jobs[2], jobs[1], jobs[0]}), 4},
		{"worst first", store.JobQuery{Order: store.JobsWorst}, jobIDs([]*stratav1.JobResult{jobs[2], jobs[3], jobs[1], jobs[0]}), 4},
		{"moderate and worse, second page of 2", store.JobQuery{MinSeverity: stratav1.Severity_SEVERITY_MODERATE, Offset: 2, Limit: 2},
			jobIDs(jobs[1:2]), 3},
		{"user", store.JobQuery{User: "bob"}, jobIDs(jobs[3:]), 1},
		{"queue and type", store.JobQuery{Queue: "default", Type: "spark", Limit: 1}, jobIDs(jobs[2:3]), 3},
		{"type", store.JobQuery{Type: "mapreduce"}, jobIDs(jobs[3:]), 1},
		{"finish window", store.JobQuery{FinishedFrom: 2001, FinishedTo: 2002}, jobIDs(jobs[1:2]), 1},
		{"app", store.JobQuery{AppID: storetest.App, Order: store.JobsWorst}, jobIDs([]*stratav1.JobResult{jobs[2], jobs[1], jobs[0]}), 3},
		{"no match", store.JobQuery{User: "carol"}, nil, 0},
		{"past the end", store.JobQuery{Offset: 10}, nil, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			page, err := s.SearchJobs(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(page.Jobs); !reflect.DeepEqual(got, c.want) || page.Total != c.total {
				t.Fatalf("jobs %v total %d, want %v total %d", got, page.Total, c.want, c.total)
			}
		})
	}
	if _, err := s.SearchJobs(ctx, store.JobQuery{MinSeverity: 9}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("unknown severity: %v", err)
	}
	if _, err := s.SearchJobs(ctx, store.JobQuery{FinishedFrom: 5, FinishedTo: 5}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("empty window: %v", err)
	}

	tl, err := s.JobTimeline(ctx, store.JobQuery{}, 86_400_000)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SeverityBucket{{StartMs: 0, Counts: [5]uint64{0, 1, 1, 0, 1}}, {StartMs: 86_400_000, Counts: [5]uint64{0, 0, 0, 1, 0}}}
	if !reflect.DeepEqual(tl, want) {
		t.Fatalf("timeline = %+v, want %+v", tl, want)
	}
	tl, err = s.JobTimeline(ctx, store.JobQuery{User: "alice", MinSeverity: stratav1.Severity_SEVERITY_MODERATE}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.SeverityBucket{{StartMs: 2000, Counts: [5]uint64{0, 0, 1, 0, 1}}}; !reflect.DeepEqual(tl, want) {
		t.Fatalf("alice's moderate+ timeline = %+v, want %+v", tl, want)
	}
}

// A store whose jobs were written before the filter columns existed gets
// them filled from the stored results when it is opened.
func TestSearchJobsBackfill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range uiJobs() {
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE jobs SET user_name = NULL, queue = NULL, job_type = NULL, score = NULL"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.SearchJobs(ctx, store.JobQuery{User: "bob", Queue: "etl", Type: "mapreduce"})
	if err != nil || page.Total != 1 || page.Jobs[0].GetJobId() != "job_1526555215992_0009" {
		t.Fatalf("after backfill: %+v, %v", page, err)
	}
	page, err = s.SearchJobs(ctx, store.JobQuery{Order: store.JobsWorst, Limit: 2})
	if err != nil || !reflect.DeepEqual(jobIDs(page.Jobs), []string{"job_1526555215992_0003", "job_1526555215992_0009"}) {
		t.Fatalf("worst after backfill: %v, %v", jobIDs(page.Jobs), err)
	}
}

func TestAppsRDDsOccupancy(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	mustAppend(t, s, storetest.Sample(1))
	apps, err := s.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantApps := []store.AppSummary{{AppID: storetest.App, Machines: []string{storetest.Node}, Executors: 2, Records: 3,
		FirstNs: storetest.T0, LastNs: storetest.T0 + 2e9}}
	if !reflect.DeepEqual(apps, wantApps) {
		t.Fatalf("apps = %+v, want %+v", apps, wantApps)
	}
	rdds, err := s.RDDs(ctx, storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	// The UI's RDD table is the report's RDDs: both blocks live.
	type row struct{ rdd, blocks, live, bytes, reads, writes uint64 }
	rowsOf := func(rs []*stratav1.RddReport) []row {
		var out []row
		for _, r := range rs {
			out = append(out, row{uint64(r.GetRddId()), r.GetBlocks(), r.GetLiveBlocks(), r.GetBytes(), r.GetReads(), r.GetWrites()})
		}
		return out
	}
	wantRDDs := []row{{7, 1, 1, 6 * storetest.PageSize, 1, 1}, {8, 1, 1, 4 * storetest.PageSize, 0, 1}}
	if got := rowsOf(rdds); !reflect.DeepEqual(got, wantRDDs) {
		t.Fatalf("rdds = %+v, want %+v", got, wantRDDs)
	}
	// Two buckets over [T0, T0+2s]: rdd 7's 5 present pages (its read
	// changes nothing) in the first, rdd 8's 4 in the second.
	occ, err := s.Occupancy(ctx, storetest.App, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantOcc := []store.OccupancyPoint{
		{RDDID: 7, TimeNs: storetest.T0 + 1e9, Pages: 5, Bytes: 5 * storetest.PageSize},
		{RDDID: 8, TimeNs: storetest.T0 + 2e9, Pages: 4, Bytes: 4 * storetest.PageSize},
	}
	if !reflect.DeepEqual(occ, wantOcc) {
		t.Fatalf("occupancy = %+v, want %+v", occ, wantOcc)
	}

	// rdd_7_3 is freed: it no longer occupies memory nor counts as live.
	free := &stratav1.Batch{NodeName: storetest.Node, BootId: storetest.Boot, Seq: 2, Records: []*stratav1.Record{{
		TimeUnixNano: storetest.T0 + 3e9, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Pid: 100, PageSize: storetest.PageSize,
		Block: storetest.Sample(1).GetRecords()[0].GetBlock(), Vaddr: storetest.BlockA, Length: 6 * storetest.PageSize,
		FreeReason: stratav1.FreeReason_FREE_REASON_REMOVED}}}
	mustAppend(t, s, free)
	rdds, err = s.RDDs(ctx, storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	// rdd_7_3 is no longer live; its bytes are still what it held.
	wantRDDs[0].live = 0
	if got := rowsOf(rdds); !reflect.DeepEqual(got, wantRDDs) {
		t.Fatalf("rdds after free = %+v, want %+v", got, wantRDDs)
	}
	occ, err = s.Occupancy(ctx, storetest.App, 3)
	if err != nil {
		t.Fatal(err)
	}
	if last := occ[len(occ)-1]; last.RDDID != 7 || last.Pages != 0 || last.TimeNs != storetest.T0+3e9 {
		t.Fatalf("occupancy after free: %+v", occ)
	}
	if _, err := s.Occupancy(ctx, storetest.App, 0); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("0 buckets: %v", err)
	}
}

func TestPhysMap(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	b := storetest.Sample(1)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	// rdd_9_0: four scattered pages stored as one run with PFN steps
	// (0x5000, 0x5001, 0x500b, 0x500c on node 0), and a sampled fault on
	// 0x500b; machine info says 128 MiB of memory.
	blk := &stratav1.SparkBlock{AppId: storetest.App, ExecutorId: "1", RddId: 9, BlockId: "rdd_9_0", HookBlockId: 31,
		Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE}
	b.Records = append(b.Records,
		&stratav1.Record{TimeUnixNano: storetest.T0 + 3e9, Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 100, Block: blk,
			Vaddr: 0x7f20_0000_0000, Length: 4 * storetest.PageSize, PageSize: storetest.PageSize,
			Runs: []*stratav1.PageRun{{Vaddr: 0x7f20_0000_0000, Count: 4, State: present, Pfn: 0x5000, PfnDeltas: []int64{1, 10, 1},
				Kpagecount: 1, NumaNode: 0}}},
		&stratav1.Record{TimeUnixNano: storetest.T0 + 4e9, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, Block: blk,
			Vaddr: 0x7f20_0000_2000, PageSize: storetest.PageSize, FaultKind: stratav1.FaultKind_FAULT_KIND_READ, CpuNumaNode: 0,
			Runs: []*stratav1.PageRun{{Vaddr: 0x7f20_0000_2000, Count: 1, State: present, Pfn: 0x500b, Kpagecount: 1, NumaNode: 0}}},
		// A sampled fault on a frame the block no longer holds: no bucket.
		&stratav1.Record{TimeUnixNano: storetest.T0 + 4e9, Access: stratav1.AccessKind_ACCESS_KIND_FAULT, Pid: 100, Block: blk,
			Vaddr: 0x7f20_0000_3000, PageSize: storetest.PageSize, FaultKind: stratav1.FaultKind_FAULT_KIND_WRITE, CpuNumaNode: 0,
			Runs: []*stratav1.PageRun{{Vaddr: 0x7f20_0000_3000, Count: 1, State: present, Pfn: 0x7000, Kpagecount: 1, NumaNode: 0}}})
	b.Node = &stratav1.NodeInfo{NumaNodes: 2, PageSize: storetest.PageSize, MemTotalBytes: 128 << 20}
	mustAppend(t, s, b)

	m, err := s.PhysMap(ctx, store.PhysMapQuery{AppID: storetest.App, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	if m.Machine != storetest.Node || m.PageSize != storetest.PageSize || m.Limit != 32768 || m.From != 0 || m.To != 32768 ||
		m.BucketPages != 2048 || m.Pages != 13 || m.Hidden != 0 {
		t.Fatalf("whole map = %+v", m)
	}
	wantRDDs := []store.RDDPages{{RDDID: 7, Present: 5, Swapped: 1}, {RDDID: 8, Present: 4}, {RDDID: 9, Present: 4}}
	wantNodes := []store.NodeSpan{{Node: 0, FirstPFN: 0x1000, LastPFN: 0x500c, Pages: 7}, {Node: 1, FirstPFN: 0x2000, LastPFN: 0x3003, Pages: 6}}
	if !reflect.DeepEqual(m.RDDs, wantRDDs) || !reflect.DeepEqual(m.Nodes, wantNodes) {
		t.Fatalf("rdds %+v nodes %+v", m.RDDs, m.Nodes)
	}
	// 2048 pages a bucket: 0x1000 (rdd 7, 3 pages node 0), 0x2000 (rdd 7,
	// 2 THP pages node 1), 0x3000 (rdd 8), 0x5000 (rdd 9, one hot sample).
	wantBuckets := []store.PFNBucket{
		{Start: 0x1000, End: 0x1800, RDDs: []store.RDDCount{{RDDID: 7, Pages: 3}}, Nodes: 1,
			Block: &store.BlockRef{ExecutorID: "1", BlockID: "rdd_7_3", RDDID: 7}},
		{Start: 0x2000, End: 0x2800, RDDs: []store.RDDCount{{RDDID: 7, Pages: 2}}, THP: 2, Nodes: 2,
			Block: &store.BlockRef{ExecutorID: "1", BlockID: "rdd_7_3", RDDID: 7}},
		{Start: 0x3000, End: 0x3800, RDDs: []store.RDDCount{{RDDID: 8, Pages: 4}}, Nodes: 2,
			Block: &store.BlockRef{ExecutorID: "2", BlockID: "rdd_8_0", RDDID: 8}},
		{Start: 0x5000, End: 0x5800, RDDs: []store.RDDCount{{RDDID: 9, Pages: 4}}, Hot: 1, Nodes: 1,
			Block: &store.BlockRef{ExecutorID: "1", BlockID: "rdd_9_0", RDDID: 9}},
	}
	if !reflect.DeepEqual(m.Buckets, wantBuckets) {
		t.Fatalf("buckets = %+v\nwant %+v", m.Buckets, wantBuckets)
	}

	// Page by page around the scattered run: each PFN step lands where
	// the run says.
	m, err = s.PhysMap(ctx, store.PhysMapQuery{AppID: storetest.App, Machine: storetest.Node, From: 0x5000, To: 0x5010})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, bk := range m.Buckets {
		if bk.End != bk.Start+1 || bk.RDDs[0].RDDID != 9 {
			t.Fatalf("bucket %+v", bk)
		}
		got = append(got, bk.Start)
		if (bk.Hot == 1) != (bk.Start == 0x500b) {
			t.Fatalf("hot mark on %#x: %+v", bk.Start, bk)
		}
	}
	if want := []uint64{0x5000, 0x5001, 0x500b, 0x500c}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pages at %x, want %x", got, want)
	}

	// Two RDDs in one bucket: most pages first.
	m, err = s.PhysMap(ctx, store.PhysMapQuery{AppID: storetest.App, From: 0x2000, To: 0x4000, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Buckets) != 1 || !reflect.DeepEqual(m.Buckets[0].RDDs, []store.RDDCount{{RDDID: 8, Pages: 4}, {RDDID: 7, Pages: 2}}) ||
		m.Buckets[0].Block != nil {
		t.Fatalf("mixed bucket = %+v", m.Buckets)
	}

	// A later batch invalidates the cached index: rdd_8_0 is freed.
	mustAppend(t, s, &stratav1.Batch{NodeName: storetest.Node, BootId: storetest.Boot, Seq: 2, Records: []*stratav1.Record{{
		TimeUnixNano: storetest.T0 + 5e9, Access: stratav1.AccessKind_ACCESS_KIND_FREE, Pid: 200, PageSize: storetest.PageSize,
		Block: proto.Clone(storetest.Sample(1).GetRecords()[2].GetBlock()).(*stratav1.SparkBlock), Vaddr: storetest.BlockB,
		Length: 4 * storetest.PageSize}}})
	m, err = s.PhysMap(ctx, store.PhysMapQuery{AppID: storetest.App, From: 0x3000, To: 0x3004})
	if err != nil || len(m.Buckets) != 0 || m.Pages != 9 {
		t.Fatalf("after free: %+v, %v", m, err)
	}

	for name, q := range map[string]store.PhysMapQuery{
		"empty window":  {AppID: storetest.App, From: 10, To: 10},
		"many buckets":  {AppID: storetest.App, Buckets: 5000},
		"other machine": {AppID: storetest.App, Machine: "node-z"},
		"no app":        {},
	} {
		if _, err := s.PhysMap(ctx, q); !errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", name, err)
		}
	}
	if _, err := s.PhysMap(ctx, store.PhysMapQuery{AppID: "app-none"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown app: %v, want ErrNotFound", err)
	}
}
