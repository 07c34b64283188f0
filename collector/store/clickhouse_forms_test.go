package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/ddl"
	"github.com/stratatrace/strata/collector/store/storetest"
	"github.com/stratatrace/strata/test/chserver"
	"github.com/stratatrace/strata/test/testenv"
)

// chServers are the two engines the tests run: Debian's 18.16 and the
// current one (chdb). Each subtest skips when its engine is not installed.
var chServers = []struct {
	name  string
	start func(testing.TB) *chserver.Server
}{{"18.16", chserver.Shared}, {"current", chserver.Current}}

// columnOf returns system.columns' type and compression codec ("" where
// the server has no codecs) of db.table.name.
func columnOf(t *testing.T, srv *chserver.Server, f ddl.Features, db, table, name string) (typ, codec string) {
	t.Helper()
	sel := "type"
	if f.Codecs {
		sel += ", compression_codec"
	}
	out, err := srv.Query(context.Background(), "SELECT "+sel+" FROM system.columns WHERE database = '"+db+
		"' AND table = '"+table+"' AND name = '"+name+"' FORMAT TabSeparated")
	if err != nil {
		t.Fatal(err)
	}
	typ, codec, _ = strings.Cut(strings.TrimSuffix(out, "\n"), "\t")
	if typ == "" {
		t.Fatalf("%s.%s has no column %s", db, table, name)
	}
	return typ, codec
}

// The store creates its tables in the forms of the server it talks to:
// plain types on 18.16; on a current server LowCardinality strings where
// values repeat, and in runs and records Delta or DoubleDelta on the
// climbing time and address columns and ZSTD on the others — as
// system.columns shows them.
func TestClickHouseFormsByServer(t *testing.T) {
	for _, sv := range chServers {
		t.Run(sv.name, func(t *testing.T) {
			srv := sv.start(t)
			db := srv.Database(t)
			s := openCH(t, chOptions(srv, db, nil))
			want, ok := ddl.FeaturesOf(srv.Version)
			if !ok || s.Forms() != want {
				t.Fatalf("server %s: forms %v, want %v (version understood: %v)", srv.Version, s.Forms(), want, ok)
			}
			current := sv.name == "current"
			if !current && want != (ddl.Features{}) {
				t.Fatalf("Debian's server %s has forms %v, want 18.16's", srv.Version, want)
			}
			if current && !(want.LowCardinality && want.Codecs) {
				t.Fatalf("current server %s has forms %v, want all", srv.Version, want)
			}
			for _, c := range []struct{ table, name, plain, cur, codec string }{
				{"runs", "app_id", "String", "LowCardinality(String)", "ZSTD"},
				{"runs", "node_name", "String", "LowCardinality(String)", "ZSTD"},
				{"runs", "block_id", "String", "String", "ZSTD"},
				{"runs", "pfn", "UInt64", "UInt64", "ZSTD"},
				{"runs", "time_ns", "Int64", "Int64", "DoubleDelta"},
				{"runs", "vaddr", "UInt64", "UInt64", "Delta"},
				{"records", "executor_id", "String", "LowCardinality(String)", "ZSTD"},
				{"workloads", "executor_id", "String", "LowCardinality(String)", ""},
				{"records", "time_ns", "Int64", "Int64", "DoubleDelta"},
				{"heat", "time_ns", "Int64", "Int64", ""},
			} {
				typ, codec := columnOf(t, srv, want, db, c.table, c.name)
				wantTyp, wantCodec := c.plain, ""
				if current {
					wantTyp, wantCodec = c.cur, c.codec
				}
				if typ != wantTyp || !strings.Contains(codec, wantCodec) || (wantCodec == "" && codec != "") {
					t.Errorf("%s.%s: %s %q, want %s with codec %q", c.table, c.name, typ, codec, wantTyp, wantCodec)
				}
			}
			storetest.MustAppend(t, s, storetest.Sample(1))
			if n := len(storetest.Trace(t, s, answer.TraceQuery{AppID: storetest.App})); n != storetest.SamplePages {
				t.Fatalf("%d pages, want %d", n, storetest.SamplePages)
			}
		})
	}
}

// A database an 18.16 server's collector made (plain columns), opened on a
// current server: its columns keep their forms (no migration; Open says
// so in its log), the columns an older collector lacked are added in the
// current forms, and the store reads the old rows and writes new ones
// beside them.
func TestClickHouseOldFormsOnCurrent(t *testing.T) {
	ctx := context.Background()
	srv := chserver.Current(t)
	db := srv.Database(t)
	opts := chOptions(srv, db, nil)
	storePreCoverage(t, srv, db, func() (*store.ClickHouse, error) {
		return store.OpenClickHouseForms(ctx, opts, ddl.Features{})
	})

	var log testenv.Output
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	s := openCH(t, opts)
	cur, _ := ddl.FeaturesOf(srv.Version)
	if typ, codec := columnOf(t, srv, cur, db, "runs", "app_id"); typ != "String" || codec != "" {
		t.Errorf("runs.app_id became %s %q; an existing column keeps its form", typ, codec)
	}
	if typ, codec := columnOf(t, srv, cur, db, "records", "time_ns"); typ != "Int64" || codec != "" {
		t.Errorf("records.time_ns became %s %q; an existing column keeps its form", typ, codec)
	}
	if typ, _ := columnOf(t, srv, cur, db, "records", "column_name"); typ != "LowCardinality(String)" {
		t.Errorf("added records.column_name is %s, want the current form LowCardinality(String)", typ)
	}
	if l := log.String(); !strings.Contains(l, "tables keep the column forms they were created with") ||
		!strings.Contains(l, "column_forms=LowCardinality+codecs") {
		t.Errorf("Open's log does not say the tables keep their forms:\n%s", l)
	}
	storetest.WantMigrated(t, s)
}

// The whole contract on a current server whose tables an 18.16 server's
// collector created: every question reads and writes plain columns there
// as it does its own forms.
func TestClickHouseContractOldFormsOnCurrent(t *testing.T) {
	srv := chserver.Current(t)
	storetest.Contract(t, storetest.Backend{
		New: func(tb testing.TB, env storetest.Env) (store.Store, func() store.Store) {
			opts := chOptions(srv, srv.Database(tb), env.Log)
			opts.Now = env.Now
			old, err := store.OpenClickHouseForms(context.Background(), opts, ddl.Features{})
			if err != nil {
				tb.Fatalf("create the tables in 18.16's forms: %v", err)
			}
			old.Close()
			open := func() store.Store { return openCH(tb, opts) }
			return open(), open
		},
		AppendUnchecked: chBackend.AppendUnchecked,
	})
}

// BenchmarkForms stores the same 2 Mi pages (storetest.BenchBatches) on
// the current engine twice, once in 18.16's forms and once in the
// server's own, merges each table into one part, and reports the
// compressed bytes of runs and records in each and their ratio (current ÷
// 18.16), with each column's in the log; and the ratios of the appends'
// time and of Trace's over every page.
func BenchmarkForms(b *testing.B) {
	ctx := context.Background()
	srv := chserver.Current(b)
	cur, _ := ddl.FeaturesOf(srv.Version)
	batches, pages, runs := storetest.BenchBatches(20, 100)
	// store writes the batches in forms f and returns the compressed bytes
	// of each column of runs and records ("table.column") and each table,
	// the time the appends took and the time of Trace over every page.
	store1 := func(f ddl.Features) (bytes map[string]int64, appends, trace time.Duration) {
		db := srv.Database(b)
		s, err := store.OpenClickHouseForms(ctx, chOptions(srv, db, nil), f)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		for _, bt := range batches {
			storetest.MustAppend(b, s, bt)
		}
		appends = time.Since(start)
		// One part per table, in the wide format (a file per column, as
		// a store's large parts are), so system.columns has each
		// column's bytes.
		for _, t := range []string{"runs", "records"} {
			for _, q := range []string{"ALTER TABLE " + db + "." + t + " MODIFY SETTING min_bytes_for_wide_part = 0",
				"OPTIMIZE TABLE " + db + "." + t + " FINAL"} {
				if _, err := srv.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		}
		bytes = map[string]int64{}
		read := func(q string, key func(f []string) string) {
			out, err := srv.Query(ctx, q+" FORMAT TabSeparated")
			if err != nil {
				b.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Split(line, "\t")
				n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
				bytes[key(f)] += n
			}
		}
		where := " WHERE database = '" + db + "' AND table IN ('runs', 'records')"
		read("SELECT table, name, data_compressed_bytes FROM system.columns"+where, func(f []string) string { return f[0] + "." + f[1] })
		read("SELECT table, count(), sum(data_compressed_bytes) FROM system.parts"+where+" AND active GROUP BY table",
			func(f []string) string {
				if f[1] != "1" {
					b.Fatalf("%s has %s parts after OPTIMIZE FINAL", f[0], f[1])
				}
				return f[0]
			})
		start = time.Now()
		if n := len(storetest.Trace(b, s, answer.TraceQuery{AppID: "app-bench"})); n != pages {
			b.Fatalf("trace: %d pages, want %d", n, pages)
		}
		return bytes, appends, time.Since(start)
	}
	for range b.N {
		plain, plainAppends, plainTrace := store1(ddl.Features{})
		mine, myAppends, myTrace := store1(cur)
		b.ReportMetric(myAppends.Seconds()/plainAppends.Seconds(), "appends-current/18.16")
		b.ReportMetric(myTrace.Seconds()/plainTrace.Seconds(), "trace-current/18.16")
		b.Logf("appends %v in 18.16's forms, %v in the current; Trace of %d pages %v and %v", plainAppends.Round(time.Millisecond),
			myAppends.Round(time.Millisecond), pages, plainTrace.Round(time.Millisecond), myTrace.Round(time.Millisecond))
		for _, t := range []string{"runs", "records"} {
			b.ReportMetric(float64(mine[t])/float64(plain[t]), t+"-current/18.16")
			b.Logf("%s: %d bytes in 18.16's forms, %d in %s's (%v): %.3f", t, plain[t], mine[t], srv.Version, cur,
				float64(mine[t])/float64(plain[t]))
		}
		var cols []string
		for k := range plain {
			if strings.Contains(k, ".") {
				cols = append(cols, k)
			}
		}
		sort.Slice(cols, func(i, j int) bool { return plain[cols[i]]-mine[cols[i]] > plain[cols[j]]-mine[cols[j]] })
		var sb strings.Builder
		for _, c := range cols {
			fmt.Fprintf(&sb, "\n  %-28s %10d -> %10d", c, plain[c], mine[c])
		}
		b.Logf("%d pages, %d runs rows, %d records; bytes by column:%s", pages, runs, len(batches)*100, sb.String())
	}
}
