// Package store keeps what the collector receives and answers the questions
// asked of it.
//
// Store is the interface the rest of the collector uses, and it holds every
// question the collector asks: BatchAppender (ingest), TraceReader (the
// query service), SummaryReader (the cross-layer job heuristics), JobStore
// (the job-history poller and the query service), UIReader (the web UI:
// job search and timeline, applications, occupancy over time, the
// physical memory map) and Retainer (retention); ingest, query and web
// each declare the narrower part they need. Two backends satisfy it, and
// storetest.Contract holds them to the same answers for the same batches:
//
//   - DuckDB (Open): embedded, one database file, strata.duckdb, in the
//     store directory; one collector per store.
//   - ClickHouse (OpenClickHouse): a server that several stateless
//     collectors share, on one server or a sharded, replicated cluster;
//     see "ClickHouse" below.
//
// Adding a question means adding a method to the interface (or a small
// interface of its own, embedded in Store), one query per backend
// (duckdb_*.go, clickhouse_*.go; on ClickHouse every read of records, runs
// or workloads carries visibleSQL(app), and "each block's latest records"
// is latestRunsSQL) and its expectations as a test in storetest.Contract,
// which runs it against DuckDB, ClickHouse and the Distributed layout.
//
// # DuckDB: writes
//
// One writer goroutine owns the write connection and its four appenders.
// Append validates a batch (ValidateBatch; refusals wrap ErrInvalidBatch)
// against everything the queries rely on — PFN steps, page sizes, address,
// PFN and swap ranges, folio sizes, NUMA node ids, enum values, states that
// contradict each other — so one bad record is refused whole and can never
// poison the application's earlier records; FuzzValidateRun holds that
// whatever it accepts expands as Trace expands it. Then, on the writer, looks up its key (node_name, boot_id, seq): a stored
// key makes the batch a duplicate and nothing is written. Otherwise the
// batch's records, runs, workloads and process memory samples go through the appenders, its
// NodeInfo into nodes (when it differs from what was last written for the
// machine) and its key row into batches, all in one transaction; Append
// returns after COMMIT, so an acknowledged batch is durable and a failed
// one left nothing behind. Close stops the writer, closes the appenders,
// runs CHECKPOINT and closes the database. Every method returns ErrClosed
// once Close has begun.
//
// The caller's context decides only whether a write is handed to the
// writer and how long the caller waits for it. The writer's statements
// never run under it (DuckDB's driver interrupts a statement whose context
// ends, and an interrupted COMMIT can go through yet report an error), so
// a write once begun commits or rolls back on its own, and a caller that
// stopped waiting learns its outcome by replaying the batch: a duplicate,
// or stored then. batch_id is not a counter that can drift from the
// table: it is read as max(batch_id)+1 at Open and again inside the first
// transaction after any failed write, and only a COMMIT that returned nil
// advances it. Options.OnWrite hears every write's outcome, including
// those whose caller had gone; collector/server turns it into health.
//
// # DuckDB: tables
//
//   - batches: one row per stored batch, unique on (node_name, boot_id, seq).
//   - nodes: one row per machine (node_name, boot_id): its NUMA node count,
//     page size and memory as its agent reported them; a field the agent
//     sent as 0 (unknown) keeps the value stored before.
//   - records: one row per record, with its block's Spark columns, fault
//     counters (has_faults says whether they were sent), resolve_error,
//     and what its pages hold of the block (coverage.go: Spark's size,
//     the cached-batch column, Record.coverage; -1 is "no column").
//   - runs: one row per PageRun, carrying the block's Spark columns and the
//     record's time, access and pid, so page queries need no join (Trace
//     joins the coverage columns). Runs are expanded into pages only when
//     a query asks for pages.
//   - workloads: one row per WorkloadCounters; absent hardware counters are
//     NULL.
//   - process_memory: one row per ProcessMemory sample (VmRSS, RssAnon,
//     RssFile, RssShmem, VmHWM of a hooked process at a time).
//   - jobs: one row per analysed job, the JobResult kept as protobuf bytes.
//
// The SQL names PageRun.state bits ({PRESENT}, {SWAPPED}); withStates puts
// in the numbers of the stratav1.PageState enum.
//
// Retention deletes the batches received before the cutoff with their
// rows in one transaction, then checkpoints; DuckDB reuses the freed
// blocks (the file keeps its size), and size is its used blocks, which
// fall once whole row groups (122,880 rows) are deleted.
//
// # Query semantics (both backends)
//
// A buffer of a block (executor, pid, block_id, chunk: a serialized
// block's buffer, a cached batch's column buffer, a deserialized block)
// is, wherever a question takes "its latest record with pages", its
// latest record that holds (holdsSQL, one definition for both backends):
// pages resolved, not a free, and resolved BUFFERS, WALKED or WALK_CUT
// unless no record of its registration is. So a walked block is its
// latest walk's objects, never a STALE mark's or a pending walk's array
// of references; a block never walked is its array (docs/objectgraph.md).
//
//   - Trace: records are a time series of accesses, so Trace lists every page
//     of every matching record, oldest record first, expanded with
//     PageRun.Page; a page covered by three records appears three times. A
//     stored run that cannot be expanded (left by a collector that
//     validated less) is skipped, and one warning per query counts the
//     skipped runs: a corrupt row costs only itself.
//   - Records: every record without its pages, with its coverage.
//   - Numa: for each live buffer (its latest lifecycle records do not
//     include a free), of its latest registration, its latest records that
//     hold are taken; a freed buffer holds nothing. Its pages are counted once per
//     (executor, pid, page address) under their NUMA node, -1 when not known
//     (not present, or the PFN hidden). Fault records are not life-cycle
//     records: they cover one page, not the block. Runs are expanded into
//     pages (in SQL) only for processes whose latest runs overlap; otherwise
//     run lengths are summed, which spares expanding every page.
//   - Faults: counters are cumulative since a block's registration, so the
//     latest record carrying them wins per registration (executor, block,
//     pid, hook_block_id); registrations of one Spark block are summed.
//     Sums here and in Overhead saturate at 2^64-1 rather than fail.
//   - Overhead: per (executor, pid); snapshots sharing a start are
//     cumulative (latest wins), different starts are summed as successive
//     intervals. A hardware counter is reported only when every snapshot
//     measured it; walk percentages need a non-zero cycle count.
//   - Cached, FaultNodes, Machines: the cross-layer summary of one app —
//     cached pages per RDD and node, each block buffer as last resolved
//     while it was live (as RDDs takes them; a finished app's blocks are all
//     freed), without de-duplicating overlaps; sampled faults split local
//     and remote; and the machines holding the app's records with their
//     NodeInfo.
//   - RDDs (report.go; `strata report` and the web UI's RDD table): per
//     cached RDD, its blocks and hook accesses over every registration (a
//     read or write counted once per block, not per buffer; a move once per
//     buffer), the blocks still live (a buffer's latest record is not a
//     free), each buffer's pages as last resolved while it was live (its
//     latest registration's last record that holds), pages per NUMA node,
//     evictions, fault counters and samples; and what those buffers hold
//     (resolved.go): their coverage bytes per resolution against Spark's
//     size of each block, counted once however many buffers it has.
//     Execution memory (Tungsten pages carry their task's RDD) is never an
//     RDD's. Blocks (the UI's RDD page) lists the same buffers per block.
//   - Occupation and Occupancy share one definition of what cached blocks
//     hold (heldStepsCTE): a buffer holds the present bytes its latest
//     record that holds resolved, nothing after its free. Occupation is the
//     running sum per process, its maximum set against the largest VmHWM
//     the agent sampled (process_memory) and the node's MemTotal; Occupancy
//     is the running sum per RDD, cut into equal time buckets.
//   - SearchJobs, JobTimeline: the jobs table keeps user, queue, type and
//     score beside the result (filled from stored results at Open for jobs
//     an older collector wrote), so filters, order and paging run in SQL.
//   - PhysMap: the live blocks' latest runs on one machine, as a PFN index
//     of consecutive-frame segments (physmap.go), cached per (app,
//     machine) until the next batch; a window is a binary search plus a
//     walk over the segments inside it.
//
// # ClickHouse
//
// The store talks to the server over its HTTP interface with plain
// net/http: statements in the POST body, inserts as INSERT … FORMAT
// RowBinary with the rows streamed in the body, and every answer read back
// as RowBinary (rowbinary.go). Those bytes mean the same to Debian's
// clickhouse-server 18.16 (the one installable here, which the current Go
// client cannot write to) and to current releases. Literals are quoted by
// quote(): 18.16 has no query parameters. Every SELECT starts with the
// byte 0xA5, so an error the server appends to an answer already begun
// (it does so behind a 200 status) is told from a row.
//
// Schema (clickhouse_schema.go; `strata clickhouse-schema` prints it):
// records and runs are MergeTree tables ordered by (app_id, rdd_id,
// partition_id, time_ns) and partitioned by the day the collector received
// them; runs carry their record's and block's columns, so page queries
// need no join. workloads, process_memory, batch_apps (commit rows),
// batches (keys), nodes, jobs and job_claims complete it. No CODEC or LowCardinality: 18.16 has
// neither, and plain types read the same everywhere. Tables an older
// collector created gain the columns they lack at Open (ALTER TABLE … ADD
// COLUMN, found missing in system.columns: 18.16 has no ADD COLUMN IF NOT
// EXISTS) when CreateSchema is set; otherwise Open fails naming the
// statements to run.
//
// Writes are group commits (clickhouse_write.go): Append validates and
// encodes its batch on the caller's goroutine, and one committer writes
// every batch that arrived within FlushInterval of the previous commit in
// one insert per table, so the server sees a few large inserts per second
// however many agents send. A commit looks the group's keys up in batches
// (those found are Duplicates), inserts the rows of records, runs,
// workloads and process_memory (the four at once), changed NodeInfo, then one batch_apps row
// per application of each batch — the commit record — and last the keys.
// Append returns when that is done; MaxPendingBytes bounds what waits.
//
// Exactly once without transactions: every row carries its write
// attempt's random uid, and every query reads only the rows of each
// batch's canonical attempt: the committed one (its batch_apps rows exist)
// with the least uid (visibleSQL). Rows of an attempt that died before its
// commit rows are never read; a batch written twice — replayed through
// another collector before the first write was acknowledged, or raced by
// two collectors — is read once, whichever commit lands first. So
// collectors keep no state, and an agent may fail over to any of them.
// Rows no query reads stay until retention drops their day.
//
// Job claims (clickhouse_jobs.go): collectors polling the same histories
// insert claims stamped by the server's clock; the earliest live claim
// wins (ties: the smaller random token), is decided once ClaimSettle old
// (every claim that could beat it is visible by then), and holds for
// ClaimLease, after which another collector's claim can win.
//
// Queries (clickhouse_query.go, clickhouse_ui.go, clickhouse_report.go)
// have DuckDB's answers without window functions, which 18.16 lacks: each
// buffer as last resolved while live (lastLiveCTE: RDDs, Cached) is a
// chain of IN subqueries, its latest registration by argMax
// (chLastRecsWhere), and of live buffers (latestRunsSQL: Numa, PhysMap)
// the same with the freed ones left out; RDDs' accesses and live blocks group in nested
// subqueries; and Occupancy and Occupation take heldStepsCTE's state, one
// row per buffer and time, from the server and keep the changes and
// running sums in Go. PhysMap builds the same PFN index as DuckDB
// (physmap.go); its cache is stamped by the count and sum of uids of the
// app's commit rows, which any collector's commit changes. jobs keeps
// user, queue, type and score beside each result for SearchJobs; a job's
// latest version is read (argMax by version).
//
// Retention drops whole day partitions (clickhouse_retention.go), ON
// CLUSTER in the cluster layout. 18.16 has no TTL clause, and dropping
// partitions is what TTL with ttl_only_drop_parts does on newer servers;
// the collector also bounds size, which TTL cannot.
//
// The cluster layout (ClusterSchema, ClickHouseOptions.Cluster): every
// table <name>_local is a Replicated*MergeTree on each replica of each
// shard, behind a Distributed table <name> sharded by node_name, so a
// batch's rows, its commit rows and its block's records share a shard; the
// store inserts with insert_distributed_sync=1 (an acknowledged batch is
// on its shard) and reads with distributed_product_mode=local (each shard
// resolves visibility locally). Tests run the contract through Distributed
// tables on a one-shard cluster of the test server; ON CLUSTER and
// replication need ZooKeeper and are not run here.
//
// # Cost
//
// The benchmarks measure what these choices cost on the machine they run
// on (make bench), each against a baseline of the same run:
// BenchmarkIngest stores 2 Mi pages as runs and then one row per page, and
// reports pages/s, bytes per page and the bytes and insert-time ratios of
// the two; BenchmarkQueries reports Trace's pages/s and the time of Numa and
// Faults over those pages; ingest's BenchmarkPush adds gRPC.
package store
