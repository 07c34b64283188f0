// Package store keeps what the collector receives and answers the questions
// asked of it.
//
// Store is every write and every question: BatchAppender (ingest),
// TraceReader (the query service), SummaryReader (the job heuristics),
// JobStore, UIReader (the web UI) and Retainer. TraceReader and UIReader,
// their questions and their answers are package answer's, which links no
// backend; callers spell them answer.X. Two backends satisfy it:
// DuckDB (Open), one embedded database file per collector, and ClickHouse
// (OpenClickHouse), a server — or a sharded, replicated cluster — shared by
// stateless collectors. Both promise the same things, and
// storetest.Contract holds them to the same answers for the same batches on
// DuckDB, ClickHouse and ClickHouse's Distributed layout:
//
//   - Append stores a batch once: it returns after the batch is durable,
//     refuses a malformed batch whole (ErrInvalidBatch; see ValidateBatch),
//     and reports a batch whose (node_name, boot_id, seq) is stored already
//     as Duplicate, across collectors too. A write once begun commits or
//     fails on its own, whatever becomes of the caller's context.
//   - Every question names its application (else ErrInvalidQuery) and every
//     method returns ErrClosed once Close has begun. An unknown job is
//     ErrNotFound.
//   - A question reads whole batches: never part of one, never one twice.
//     A stored row that cannot be expanded (written by
//     a collector that validated less) costs only itself, with a warning.
//   - Sums of counters saturate at 2^64-1; a buffer's "latest record with
//     pages" is its latest record that holds (holdsSQL), so a walked block
//     is its latest walk's objects, never a STALE mark's array.
//
// Each question is one file (trace.go, records.go, numa.go, faults.go,
// overhead.go, hot.go, report.go, summary.go, held.go, physmap.go,
// moment.go, heat.go, jobs.go, apps.go) with a method on querier, which both backends embed: it builds
// its SQL once from the backend's dialect, reads the rows the backend
// selects, and computes the answer in Go; retention's policy is written
// once too (retention.go). A backend's own files keep its schema, its
// writes, its retention steps and its dialect (duckdb_select.go,
// clickhouse_select.go): how it spells a few functions and the relations
// its tables hold differently.
//
// Adding a question: one file here with its method on querier (and the
// method on the Store interface it belongs to); when the rows it reads are
// laid out differently in the two backends, one relation per dialect; and
// its expectations in storetest.Contract. docs/storage.md describes the
// tables, the write paths and what they cost.
package store
