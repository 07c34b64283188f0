package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/test/chserver"
)

// FuzzQuote: whatever bytes a name holds, the literal the store writes
// into SQL reads back on the server as exactly those bytes — on 18.16 and
// on the current engine — so a caller's string is never SQL. Plain `go
// test` runs the seeds; -fuzz FuzzQuote explores further on both servers.
func FuzzQuote(f *testing.F) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{"", "app-1", `rdd_7_3' OR '1'='1 \' \\`, `\`, `'`, `\'`, "a\x00b", "\n\r\t\b\f\v",
		"'; DROP DATABASE strata; --", "\xff\xfe invalid UTF-8", "{name:String}", "ü €", string(all)} {
		f.Add(s)
	}
	var stores []*store.ClickHouse
	for _, srv := range installedServers(f) {
		s, err := store.OpenClickHouse(context.Background(), chOptions(srv, srv.Database(f), nil))
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	if len(stores) == 0 {
		f.Skip("skipping: neither clickhouse-server nor chdb-core is installed (make deps installs both)")
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, s := range stores {
			got, err := store.EchoLiteral(context.Background(), s, v)
			if err != nil || got != v {
				t.Fatalf("server %s read %q as %q (%v)", s.ServerVersion(), v, got, err)
			}
		}
	})
}

// installedServers starts those of the two engines that are installed.
func installedServers(tb testing.TB) []*chserver.Server {
	var out []*chserver.Server
	if chserver.Binary() != "" || os.Getenv("STRATA_CLICKHOUSE_URL") != "" {
		out = append(out, chserver.Shared(tb))
	}
	if _, err := os.Stat(filepath.Join(chserver.CHDBDir(), "chdb", "__init__.py")); err == nil {
		out = append(out, chserver.Current(tb))
	}
	return out
}
