package store_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

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
	New: func(tb testing.TB, log *slog.Logger) (store.Store, func() store.Store) {
		srv := chserver.Shared(tb)
		opts := chOptions(srv, srv.Database(tb), log)
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
