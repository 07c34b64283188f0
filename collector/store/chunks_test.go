package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// chunkBatch is one serialized Spark block, rdd_9_1, held in two buffers
// (the JVM hook reports each chunk of a ChunkedByteBuffer as its own hook
// block with the block's name), 3 pages on node 0 and 2 on node 1, put by
// stage 4 attempt 0, task attempt 42.
func chunkBatch(seq uint64) *stratav1.Batch {
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	rec := func(hook uint64, chunk uint32, vaddr uint64, pages uint32, pfn uint64, node int32) *stratav1.Record {
		return &stratav1.Record{TimeUnixNano: storetest.T0, Access: stratav1.AccessKind_ACCESS_KIND_WRITE, Pid: 300, Tid: 301,
			Block: &stratav1.SparkBlock{AppId: storetest.App, ExecutorId: "3", RddId: 9, Partition: 1, BlockId: "rdd_9_1",
				Mode: stratav1.MemoryMode_MEMORY_MODE_STORAGE, Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP,
				HookBlockId: hook, Kind: stratav1.BlockKind_BLOCK_KIND_RDD, Chunk: chunk, Chunks: 2,
				StageId: 4, StageAttempt: 0, TaskAttemptId: 42},
			Vaddr: vaddr, Length: uint64(pages) * storetest.PageSize, PageSize: storetest.PageSize,
			Runs: []*stratav1.PageRun{{Vaddr: vaddr, Count: pages, State: present, Pfn: pfn, NumaNode: node}}}
	}
	return &stratav1.Batch{NodeName: storetest.Node, BootId: storetest.Boot, Seq: seq, Records: []*stratav1.Record{
		rec(31, 0, 0x7f0000000000, 3, 0x8000, 0),
		rec(32, 1, 0x7f0000100000, 2, 0x9000, 1),
	}}
}

// Both chunks of a block count: the latest lifecycle record is per chunk,
// not per Spark block name.
func TestNumaCountsEveryChunk(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, chunkBatch(1))
	rows, err := s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, []*stratav1.NumaRow{
		{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 9, NumaNode: 1, Pages: 2, Bytes: 2 * 4096},
	})

	// Freeing chunk 1 leaves chunk 0's pages.
	free := chunkBatch(2)
	free.Records = free.Records[1:]
	free.Records[0].Access, free.Records[0].Runs = stratav1.AccessKind_ACCESS_KIND_FREE, nil
	free.Records[0].FreeReason = stratav1.FreeReason_FREE_REASON_EVICTED
	free.Records[0].TimeUnixNano++
	mustAppend(t, s, free)
	rows, err = s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, []*stratav1.NumaRow{{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096}})
}

// A record the agent split into sub-range records (same block, same time,
// possibly in different batches) counts whole.
func TestNumaCountsSplitRecords(t *testing.T) {
	s := storetest.Open(t)
	b := chunkBatch(1)
	first := b.Records[0]
	first.Block.Chunks, first.Block.Chunk = 1, 0
	second := proto.CloneOf(first)
	second.Vaddr += 3 * storetest.PageSize
	second.Runs[0].Vaddr, second.Runs[0].Pfn, second.Runs[0].NumaNode = second.Vaddr, 0xa000, 1
	b.Records = []*stratav1.Record{first}
	mustAppend(t, s, b)
	b2 := chunkBatch(2)
	b2.Records = []*stratav1.Record{second}
	mustAppend(t, s, b2)
	rows, err := s.Numa(context.Background(), storetest.App)
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, rows, []*stratav1.NumaRow{
		{RddId: 9, NumaNode: 0, Pages: 3, Bytes: 3 * 4096},
		{RddId: 9, NumaNode: 1, Pages: 3, Bytes: 3 * 4096},
	})
}

// Trace returns what the hook said of each block: kind, chunk, task.
func TestTraceCarriesHookFields(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, chunkBatch(1))
	pages := trace(t, s, store.TraceQuery{AppID: storetest.App})
	if len(pages) != 5 {
		t.Fatalf("%d pages, want 5", len(pages))
	}
	for i, p := range pages {
		b := p.GetBlock()
		chunk := uint32(0)
		if i >= 3 {
			chunk = 1
		}
		if b.GetKind() != stratav1.BlockKind_BLOCK_KIND_RDD || b.GetChunk() != chunk || b.GetChunks() != 2 ||
			b.GetStageId() != 4 || b.GetStageAttempt() != 0 || b.GetTaskAttemptId() != 42 || b.GetObjectGraph() {
			t.Fatalf("page %d block %v", i, b)
		}
	}
}

// A store written before the hook's fields existed opens, gains them, and
// its old records read as "not said" (kind unspecified, no task).
func TestMigrateOldStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, storetest.Sample(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it the old layout: drop the columns migrations add.
	db, err := sql.Open("duckdb", filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"records", "runs"} {
		for _, col := range []string{"block_kind", "object_graph", "chunk", "chunks", "stage_id", "stage_attempt", "task_attempt",
			"free_reason", "mem_mode", "mem_location"} {
			if table == "runs" && (col == "free_reason" || col == "mem_mode" || col == "mem_location") {
				continue
			}
			if _, err := db.Exec("ALTER TABLE " + table + " DROP COLUMN " + col); err != nil {
				t.Fatalf("drop %s.%s: %v", table, col, err)
			}
		}
	}
	db.Close()

	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatalf("open old store: %v", err)
	}
	defer s.Close()
	mustAppend(t, s, chunkBatch(2))
	var old, hooked int
	for _, p := range trace(t, s, store.TraceQuery{AppID: storetest.App}) {
		switch b := p.GetBlock(); b.GetKind() {
		case stratav1.BlockKind_BLOCK_KIND_UNSPECIFIED:
			if b.GetStageId() != -1 || b.GetTaskAttemptId() != -1 || b.GetChunks() != 0 {
				t.Fatalf("old record's block %v, want no task and no chunks", b)
			}
			old++
		case stratav1.BlockKind_BLOCK_KIND_RDD:
			hooked++
		}
	}
	if old != storetest.SamplePages || hooked != 5 {
		t.Fatalf("%d old pages and %d new, want %d and 5", old, hooked, storetest.SamplePages)
	}
}

// Records lists a block's life without pages: every chunk's write, then the
// eviction of chunk 1 with its reason.
func TestRecords(t *testing.T) {
	s := storetest.Open(t)
	mustAppend(t, s, chunkBatch(1))
	free := chunkBatch(2)
	free.Records = free.Records[1:]
	free.Records[0].Access, free.Records[0].Runs = stratav1.AccessKind_ACCESS_KIND_FREE, nil
	free.Records[0].FreeReason = stratav1.FreeReason_FREE_REASON_EVICTED
	free.Records[0].TimeUnixNano++
	mustAppend(t, s, free)
	mustAppend(t, s, storetest.Sample(3))

	list := func(q store.RecordsQuery) []*stratav1.RecordRow {
		t.Helper()
		var rows []*stratav1.RecordRow
		if err := s.Records(context.Background(), q, func(r *stratav1.RecordRow) error {
			rows = append(rows, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	rows := list(store.RecordsQuery{AppID: storetest.App, BlockID: "rdd_9_1"})
	if len(rows) != 3 {
		t.Fatalf("%d records of rdd_9_1, want 3: %v", len(rows), rows)
	}
	for i, want := range []struct {
		access stratav1.AccessKind
		chunk  uint32
		pages  uint64
		why    stratav1.FreeReason
	}{
		{stratav1.AccessKind_ACCESS_KIND_WRITE, 0, 3, 0},
		{stratav1.AccessKind_ACCESS_KIND_WRITE, 1, 2, 0},
		{stratav1.AccessKind_ACCESS_KIND_FREE, 1, 0, stratav1.FreeReason_FREE_REASON_EVICTED},
	} {
		r := rows[i]
		b := r.GetBlock()
		if r.GetAccess() != want.access || b.GetChunk() != want.chunk || r.GetPages() != want.pages || r.GetFreeReason() != want.why ||
			b.GetKind() != stratav1.BlockKind_BLOCK_KIND_RDD || b.GetTaskAttemptId() != 42 || b.GetMode() != stratav1.MemoryMode_MEMORY_MODE_STORAGE ||
			b.GetLocation() != stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP || r.GetNodeName() != storetest.Node || r.GetPid() != 300 {
			t.Fatalf("record %d = %v, want %+v", i, r, want)
		}
	}
	frees := list(store.RecordsQuery{AppID: storetest.App, Access: []stratav1.AccessKind{stratav1.AccessKind_ACCESS_KIND_FREE}})
	if len(frees) != 1 || frees[0].GetBlock().GetHookBlockId() != 32 {
		t.Fatalf("free records %v, want the eviction of hook block 32", frees)
	}
	rdd7 := int32(7)
	if n := len(list(store.RecordsQuery{AppID: storetest.App, RDD: &rdd7})); n != 2 {
		t.Fatalf("%d records of RDD 7, want the sample's 2", n)
	}
	if n := len(list(store.RecordsQuery{AppID: storetest.App, Limit: 4})); n != 4 {
		t.Fatalf("limit 4 gave %d", n)
	}
	withFaults := list(store.RecordsQuery{AppID: storetest.App, BlockID: "rdd_7_3"})
	if len(withFaults) != 2 || withFaults[1].GetFaults().GetRead() != 9 || withFaults[1].GetFaults().GetUnclassified() != 4 {
		t.Fatalf("rdd_7_3 records %v, want the sample's counters", withFaults)
	}
}
