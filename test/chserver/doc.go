// Package chserver starts a real clickhouse-server for tests: Debian's
// clickhouse-server (make deps installs it) on loopback, from a private
// configuration in a temporary directory, with a fresh database per test.
//
// What callers must know:
//   - Shared starts one server per test binary, on first use; Main (from a
//     package's TestMain) stops it and removes its directory. Without Main
//     the server still dies with the test binary (PR_SET_PDEATHSIG), but
//     its directory stays in $TMPDIR.
//   - Every test takes its own database (Server.Database): never TRUNCATE
//     and reuse a table — ClickHouse 18.16 can bring truncated parts back
//     after a restart.
//   - $STRATA_CLICKHOUSE_URL (e.g. http://user:pass@host:8123) runs the
//     tests against that server instead, e.g. a current release; nothing is
//     started then, and each test's database is dropped at its end.
//   - A test skips, saying why, only when no server binary is installed.
package chserver
