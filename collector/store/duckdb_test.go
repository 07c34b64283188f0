package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// duckBackend runs the contract on the embedded store, each test in a
// directory of its own.
var duckBackend = storetest.Backend{
	New: func(tb testing.TB, env storetest.Env) (store.Store, func() store.Store) {
		dir := tb.TempDir()
		open := func() store.Store {
			s, err := store.Open(context.Background(), store.Options{Dir: dir, MemoryLimit: "256MB", Threads: 2,
				Logger: env.Log, Now: env.Now})
			if err != nil {
				tb.Fatalf("open store: %v", err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open
	},
	AppendUnchecked: func(s store.Store, b *stratav1.Batch) error { return store.AppendUnchecked(s, b) },
}

func TestContract(t *testing.T) { storetest.Contract(t, duckBackend) }

// dropColumns makes the store in dir the layout of an older collector:
// the named columns dropped from records and runs (those runs do not have
// are skipped).
func dropColumns(t *testing.T, dir string, cols []string) {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"records", "runs"} {
		for _, col := range cols {
			if table == "runs" && (col == "free_reason" || col == "mem_mode" || col == "mem_location" ||
				slices.Contains(store.CoverageColumns(), col)) {
				continue
			}
			if _, err := db.Exec("ALTER TABLE " + table + " DROP COLUMN " + col); err != nil {
				t.Fatalf("drop %s.%s: %v", table, col, err)
			}
		}
	}
}

// A store written by the collector before coverage opens and gains its
// columns (storetest.WantMigrated checks the store then).
func TestMigratePreviousStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustAppend(t, s, storetest.PreviousBatch())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dropColumns(t, dir, store.CoverageColumns())

	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatalf("open the previous store: %v", err)
	}
	defer s.Close()
	storetest.WantMigrated(t, s)
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
	storetest.MustAppend(t, s, storetest.Sample(1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it the old layout: drop the columns migrations add.
	dropColumns(t, dir, append([]string{"block_kind", "object_graph", "chunk", "chunks", "stage_id", "stage_attempt", "task_attempt",
		"free_reason", "mem_mode", "mem_location"}, store.CoverageColumns()...))

	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatalf("open old store: %v", err)
	}
	defer s.Close()
	storetest.MustAppend(t, s, storetest.ChunkBatch(2))
	var old, hooked int
	for _, p := range storetest.Trace(t, s, answer.TraceQuery{AppID: storetest.App}) {
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
