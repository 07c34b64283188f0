package store_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/chserver"
)

func TestMain(m *testing.M) { os.Exit(chserver.Main(m)) }

// chOptions are the options of a test's ClickHouse store in database db.
func chOptions(srv *chserver.Server, db string, log *slog.Logger) store.ClickHouseOptions {
	return store.ClickHouseOptions{URL: srv.URL, Database: db, CreateSchema: true, Logger: log,
		FlushInterval: 5 * time.Millisecond, ClaimSettle: time.Second, ClaimLease: time.Minute}
}

// openCH opens a ClickHouse store with opts, closed at tb's cleanup.
func openCH(tb testing.TB, opts store.ClickHouseOptions) *store.ClickHouse {
	tb.Helper()
	s, err := store.OpenClickHouse(context.Background(), opts)
	if err != nil {
		tb.Fatalf("open clickhouse store: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// chBackend runs the contract on a real clickhouse-server (Debian's,
// started by chserver), each test in a database of its own.
var chBackend = storetest.Backend{
	New: func(tb testing.TB, env storetest.Env) (store.Store, func() store.Store) {
		srv := chserver.Shared(tb)
		opts := chOptions(srv, srv.Database(tb), env.Log)
		opts.Now = env.Now
		open := func() store.Store { return openCH(tb, opts) }
		return open(), open
	},
	AppendUnchecked: func(s store.Store, b *stratav1.Batch) error { return store.AppendUnchecked(s, b) },
}

func TestClickHouseContract(t *testing.T) {
	srv := chserver.Shared(t)
	t.Logf("clickhouse-server %s at %s", srv.Version, srv.URL)
	storetest.Contract(t, chBackend)
}

// TestClickHouseContractCurrent runs the contract, every question's SQL
// and the schema, on the current ClickHouse engine (chdb, 26.9) besides
// the Debian server (18.16) above.
func TestClickHouseContractCurrent(t *testing.T) {
	srv := chserver.Current(t)
	t.Logf("ClickHouse %s (chdb) at %s", srv.Version, srv.URL)
	storetest.Contract(t, storetest.Backend{
		New: func(tb testing.TB, env storetest.Env) (store.Store, func() store.Store) {
			opts := chOptions(srv, srv.Database(tb), env.Log)
			opts.Now = env.Now
			open := func() store.Store { return openCH(tb, opts) }
			return open(), open
		},
		AppendUnchecked: chBackend.AppendUnchecked,
	})
}

// countRows returns count() of a raw table in db, bypassing visibility.
func countRows(t *testing.T, srv *chserver.Server, db, table, where string) int {
	t.Helper()
	out, err := srv.Query(context.Background(), "SELECT count() FROM "+db+"."+table+" "+where)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("count %s: %q", table, out)
	}
	return n
}

// A group commit that fails at any step leaves its batch stored once or
// not at all, and the agent's replay through another collector (a second
// store on the same database) makes it stored exactly once: rows written
// before the commit rows are never read, and a batch whose commit rows
// went in but whose key did not is written again on replay and still
// read once.
func TestClickHouseCommitFailsAtEachStep(t *testing.T) {
	srv := chserver.Shared(t)
	db := srv.Database(t)
	a := openCH(t, chOptions(srv, db, nil))
	b := openCH(t, chOptions(srv, db, nil))
	for i, step := range store.CommitSteps {
		seq := uint64(i + 1)
		storetest.AppendFailing(t, a, storetest.Sample(seq), step, func(h func(string) error) { store.SetCommitHook(a, h) })
		visible := len(storetest.Trace(t, a, answer.TraceQuery{AppID: storetest.App}))
		wantBefore := (int(seq) - 1) * storetest.SamplePages
		if step == "key" { // the commit rows went in: stored, though unacknowledged
			wantBefore += storetest.SamplePages
		}
		if visible != wantBefore {
			t.Fatalf("step %s: %d pages visible after the failure, want %d", step, visible, wantBefore)
		}
		res := storetest.MustAppend(t, b, storetest.Sample(seq)) // the agent fails over
		if res.Duplicate {
			t.Fatalf("step %s: replay through the other collector reported duplicate; the key was never written", step)
		}
		if res := storetest.MustAppend(t, a, storetest.Sample(seq)); !res.Duplicate {
			t.Fatalf("step %s: third send not a duplicate", step)
		}
		if n := len(storetest.Trace(t, a, answer.TraceQuery{AppID: storetest.App})); n != int(seq)*storetest.SamplePages {
			t.Fatalf("step %s: %d pages, want %d (every batch once)", step, n, int(seq)*storetest.SamplePages)
		}
	}
	// Seq 5 (failed at "key") was committed twice; reads take one attempt.
	if n := countRows(t, srv, db, "batch_apps", "WHERE seq = 5"); n != 2 {
		t.Fatalf("seq 5 has %d commit rows, want 2 (its first write and the replay)", n)
	}
	var recs int
	if err := a.Records(context.Background(), answer.RecordsQuery{AppID: storetest.App}, func(*stratav1.RecordRow) error {
		recs++
		return nil
	}); err != nil || recs != 3*len(store.CommitSteps) {
		t.Fatalf("records = %d (%v), want %d", recs, err, 3*len(store.CommitSteps))
	}
}

// Two collectors write the same batch at the same moment (an agent that
// failed over while its first collector was still storing): both find it
// absent and both commit it, and every query reads it once.
func TestClickHouseTwoCollectorsRace(t *testing.T) {
	srv := chserver.Shared(t)
	db := srv.Database(t)
	a := openCH(t, chOptions(srv, db, nil))
	b := openCH(t, chOptions(srv, db, nil))
	held, release := make(chan struct{}), make(chan struct{})
	store.SetCommitHook(a, func(step string) error {
		if step == "commit" { // a has looked the key up and written the rows
			close(held)
			<-release
		}
		return nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := a.Append(context.Background(), storetest.Sample(1))
		done <- err
	}()
	<-held
	if res := storetest.MustAppend(t, b, storetest.Sample(1)); res.Duplicate {
		t.Fatal("b found the batch a had not committed yet")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, srv, db, "batch_apps", ""); n != 2 {
		t.Fatalf("%d commit rows, want 2: both collectors committed", n)
	}
	if n := len(storetest.Trace(t, a, answer.TraceQuery{AppID: storetest.App})); n != storetest.SamplePages {
		t.Fatalf("%d pages, want %d (once)", n, storetest.SamplePages)
	}
	storetest.EqualRows(t, must(b.Numa(context.Background(), storetest.App)), storetest.SampleNuma())
	storetest.EqualRows(t, must(a.Faults(context.Background(), storetest.App)), storetest.SampleFaults())
	over := must(a.Overhead(context.Background(), storetest.App))
	if len(over) != 2 || over[0].GetCounters().GetTaskClockNs() != 1e9 {
		t.Fatalf("overhead = %v, want the sample's counters once", over)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The cluster layout's read and write paths — Distributed tables over
// <name>_local tables, distributed_product_mode=local,
// insert_distributed_sync — give the contract's answers, on a cluster of
// one shard that is the test server itself.
func TestClickHouseContractDistributed(t *testing.T) {
	storetest.Contract(t, storetest.Backend{
		New: func(tb testing.TB, env storetest.Env) (store.Store, func() store.Store) {
			srv := chserver.Shared(tb)
			opts := chOptions(srv, srv.Database(tb), env.Log)
			opts.Now = env.Now
			opts.Cluster = chserver.Cluster
			open := func() store.Store {
				s, err := store.OpenClickHouseOneShard(context.Background(), opts)
				if err != nil {
					tb.Fatalf("open: %v", err)
				}
				tb.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open
		},
		AppendUnchecked: chBackend.AppendUnchecked,
	})
}

// Two collectors claim the same jobs: until the earliest claim is older
// than the settle time nobody is the decided owner; then both see the same
// owner of each job; when the lease runs out the claims are gone.
func TestClickHouseJobClaims(t *testing.T) {
	srv := chserver.Shared(t)
	db := srv.Database(t)
	optsA, optsB := chOptions(srv, db, nil), chOptions(srv, db, nil)
	optsA.Owner, optsB.Owner = "collector-a", "collector-b"
	// The server's clock counts whole seconds, so a claim is decided 1-2 s
	// before ClaimSettle has passed; 3 s keeps "right after claiming"
	// undecided on a loaded machine.
	optsA.ClaimSettle, optsB.ClaimSettle = 3*time.Second, 3*time.Second
	optsA.ClaimLease, optsB.ClaimLease = 6*time.Second, 6*time.Second
	a, b := openCH(t, optsA), openCH(t, optsB)
	ctx := context.Background()
	if err := a.ClaimJobs(ctx, []string{"job_1", "job_2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.ClaimJobs(ctx, []string{"job_2", "job_3"}); err != nil {
		t.Fatal(err)
	}
	ca := must(a.JobClaims(ctx))
	if c := ca["job_1"]; c.Owner != "collector-a" || c.Decided {
		t.Fatalf("job_1 right after claiming: %+v, want a's, undecided", c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ca["job_1"].Decided || !ca["job_2"].Decided || !ca["job_3"].Decided {
		if time.Now().After(deadline) {
			t.Fatalf("claims not decided within 10s: %+v", ca)
		}
		time.Sleep(200 * time.Millisecond)
		ca = must(a.JobClaims(ctx))
	}
	cb := must(b.JobClaims(ctx))
	if ca["job_1"].Owner != "collector-a" || ca["job_3"].Owner != "collector-b" || ca["job_2"] != cb["job_2"] {
		t.Fatalf("a sees %+v, b sees %+v", ca, cb)
	}
	// The claims go once their 6 s lease has run out by the server's
	// whole-second clock; none may outlive it by more than the clock's
	// second and a loaded machine's slack.
	decided := time.Now()
	for c := must(a.JobClaims(ctx)); len(c) != 0; c = must(a.JobClaims(ctx)) {
		if time.Since(decided) > 10*time.Second {
			t.Fatalf("claims 10 s after the decision, past their 6 s lease: %+v", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// FuzzRowReader: whatever bytes the server's answer holds, the reader
// returns rows or an error, never panics, and never reads a string longer
// than the answer.
func FuzzRowReader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xA5, 2, 'h', 'i', 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 7, 3, 1, 2, 3})
	f.Add([]byte("Code: 395, e.displayText() = DB::Exception: Value passed to 'throwIf' function is non zero\n"))
	f.Add([]byte{0xA5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := store.DecodeRows(data)
		if err == nil && n*14 > len(data) {
			t.Fatalf("%d rows from %d bytes", n, len(data))
		}
	})
}

// Size retention on ClickHouse drops whole day partitions: a bound one
// byte below the database's size drops exactly the oldest day, and the
// size falls by that day's parts.
func TestClickHouseRetentionBytes(t *testing.T) {
	open := func(env storetest.Env) store.Store { s, _ := chBackend.New(t, env); return s }
	s, _, r1 := storetest.RetainOneByteLess(t, open, 10)
	if r1.Dropped != 1 {
		t.Fatalf("retain to one byte less dropped %d days, want 1", r1.Dropped)
	}
	if r := must(s.Retain(context.Background(), store.Retention{MaxBytes: r1.BytesAfter})); r.Dropped != 0 {
		t.Fatalf("retain at the size it has dropped %d days", r.Dropped)
	}
}

// BenchmarkInsertFormats inserts the same 2 Mi pages' runs rows into
// ClickHouse as RowBinary (what the store sends) and as JSONEachRow (the
// other format every version reads), and reports rows/s of each and their
// ratio; both are encoded beforehand, so the time is the server's parse
// and write plus the transfer. (JSON also cannot carry the binary
// pfn_deltas column as it is; these rows have none.)
func BenchmarkInsertFormats(b *testing.B) {
	srv := chserver.Shared(b)
	batches, pages, runs := storetest.BenchBatches(20, 100)
	var rb, js [][]byte
	var rbBytes, jsBytes int
	for _, bt := range batches {
		r, j := store.EncodeRuns(bt)
		rb, js = append(rb, r), append(js, j)
		rbBytes, jsBytes = rbBytes+len(r), jsBytes+len(j)
	}
	insert := func(format string, bodies [][]byte) time.Duration {
		s := openCH(b, chOptions(srv, srv.Database(b), nil))
		start := time.Now()
		for _, body := range bodies {
			if err := store.InsertRuns(context.Background(), s, format, body); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	for range b.N {
		tRB, tJS := insert("RowBinary", rb), insert("JSONEachRow", js)
		b.ReportMetric(float64(runs)/tRB.Seconds(), "rowbinary-rows/s")
		b.ReportMetric(float64(runs)/tJS.Seconds(), "json-rows/s")
		b.ReportMetric(tJS.Seconds()/tRB.Seconds(), "json/rowbinary-time")
		b.Logf("clickhouse %s, %d runs rows (%d pages): RowBinary %v (%d bytes), JSONEachRow %v (%d bytes): JSON takes %.1fx the time, %.1fx the bytes",
			srv.Version, runs, pages, tRB.Round(time.Millisecond), rbBytes, tJS.Round(time.Millisecond), jsBytes,
			tJS.Seconds()/tRB.Seconds(), float64(jsBytes)/float64(rbBytes))
	}
}

// Tables the collector created before coverage existed: Open without
// CreateSchema fails naming the ALTER statements an operator runs; with
// it, the store adds the columns itself (storetest.WantMigrated checks
// the store then).
func TestClickHouseAddsCoverageColumns(t *testing.T) {
	ctx := context.Background()
	srv := chserver.Shared(t)
	db := srv.Database(t)
	opts := chOptions(srv, db, nil)
	storePreCoverage(t, srv, db, func() (*store.ClickHouse, error) { return store.OpenClickHouse(ctx, opts) })

	managed := opts
	managed.CreateSchema = false
	if _, err := store.OpenClickHouse(ctx, managed); err == nil ||
		!strings.Contains(err.Error(), "ALTER TABLE "+db+".records ADD COLUMN column_index Int32 DEFAULT -1;") ||
		!strings.Contains(err.Error(), "ALTER TABLE "+db+".records ADD COLUMN cov_detail String DEFAULT '';") {
		t.Fatalf("open without CreateSchema: %v, want the statements that add the columns", err)
	}
	storetest.WantMigrated(t, openCH(t, opts))
}

// storePreCoverage leaves in db what a collector that predates the
// coverage columns stored: PreviousBatch, through the store open returns,
// and records without those columns.
func storePreCoverage(t *testing.T, srv *chserver.Server, db string, open func() (*store.ClickHouse, error)) {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustAppend(t, s, storetest.PreviousBatch())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, col := range store.CoverageColumns() {
		if _, err := srv.Query(context.Background(), "ALTER TABLE "+db+".records DROP COLUMN "+col); err != nil {
			t.Fatal(err)
		}
	}
}
