package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// DBFile is the database file's name inside Options.Dir.
const DBFile = "strata.duckdb"

// Options configure the embedded store.
type Options struct {
	// Dir holds the database file; it is created if missing.
	Dir string
	// MemoryLimit is DuckDB's memory_limit, e.g. "1GB". Empty = DuckDB's
	// default (80% of RAM), which a collector sharing a node should not take.
	MemoryLimit string
	// Threads caps DuckDB's worker threads; 0 = DuckDB's default (all cores).
	Threads int
	// Logger receives open/close events; nil discards them.
	Logger *slog.Logger
	// OnWrite, when set, is told the outcome of every write that reached
	// the database (Append, PutJob): nil when it committed or found its
	// batch already stored, else the error. It runs on the writer
	// goroutine, whatever became of the caller, and must not block. The
	// collector turns it into its health status.
	OnWrite func(err error)
	// Now is the collector's clock (received times, retention); default
	// time.Now. Tests move it.
	Now func() time.Time
}

const schema = `
CREATE TABLE IF NOT EXISTS batches (
	batch_id    BIGINT PRIMARY KEY,
	node_name   VARCHAR NOT NULL,
	boot_id     VARCHAR NOT NULL,
	seq         UBIGINT NOT NULL,
	records     UINTEGER NOT NULL,
	received_ns BIGINT NOT NULL,
	UNIQUE (node_name, boot_id, seq)
);
CREATE TABLE IF NOT EXISTS records (
	batch_id      BIGINT NOT NULL,
	rec_idx       INTEGER NOT NULL,
	node_name     VARCHAR NOT NULL,
	time_ns       BIGINT NOT NULL,
	access_kind   TINYINT NOT NULL,
	pid           UINTEGER NOT NULL,
	tid           UINTEGER NOT NULL,
	app_id        VARCHAR NOT NULL,
	executor_id   VARCHAR NOT NULL,
	rdd_id        INTEGER NOT NULL,
	partition_id  INTEGER NOT NULL,
	block_id      VARCHAR NOT NULL,
	hook_block_id UBIGINT NOT NULL,
	vaddr         UBIGINT NOT NULL,
	length        UBIGINT NOT NULL,
	page_size     UINTEGER NOT NULL,
	cpu_numa      INTEGER NOT NULL,
	runs          UINTEGER NOT NULL,
	pages         UBIGINT NOT NULL,
	has_faults    BOOLEAN NOT NULL,
	fault_read    UBIGINT NOT NULL,
	fault_write   UBIGINT NOT NULL,
	fault_exec    UBIGINT NOT NULL,
	fault_major   UBIGINT NOT NULL,
	resolve_error VARCHAR NOT NULL,
	fault_unclassified UBIGINT NOT NULL,
	fault_kind    TINYINT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
	batch_id      BIGINT NOT NULL,
	rec_idx       INTEGER NOT NULL,
	time_ns       BIGINT NOT NULL,
	access_kind   TINYINT NOT NULL,
	pid           UINTEGER NOT NULL,
	app_id        VARCHAR NOT NULL,
	executor_id   VARCHAR NOT NULL,
	rdd_id        INTEGER NOT NULL,
	partition_id  INTEGER NOT NULL,
	block_id      VARCHAR NOT NULL,
	mem_mode      TINYINT NOT NULL,
	mem_location  TINYINT NOT NULL,
	hook_block_id UBIGINT NOT NULL,
	page_size     UINTEGER NOT NULL,
	vaddr         UBIGINT NOT NULL,
	pages         UINTEGER NOT NULL,
	state         UINTEGER NOT NULL,
	pfn           UBIGINT NOT NULL,
	kpageflags    UBIGINT NOT NULL,
	folio_pages   UINTEGER NOT NULL,
	kpagecount    UBIGINT NOT NULL,
	numa_node     INTEGER NOT NULL,
	swap_type     UINTEGER NOT NULL,
	swap_offset   UBIGINT NOT NULL,
	pfn_deltas    BLOB
);
CREATE TABLE IF NOT EXISTS workloads (
	batch_id         BIGINT NOT NULL,
	node_name        VARCHAR NOT NULL,
	app_id           VARCHAR NOT NULL,
	executor_id      VARCHAR NOT NULL,
	pid              UINTEGER NOT NULL,
	start_ns         BIGINT NOT NULL,
	end_ns           BIGINT NOT NULL,
	task_clock_ns    UBIGINT NOT NULL,
	context_switches UBIGINT NOT NULL,
	cpu_migrations   UBIGINT NOT NULL,
	minor_faults     UBIGINT NOT NULL,
	major_faults     UBIGINT NOT NULL,
	cycles           UBIGINT,
	instructions     UBIGINT,
	dtlb_misses      UBIGINT,
	walk_load        UBIGINT,
	walk_store       UBIGINT,
	walk_rdd         UBIGINT,
	pmu_status       VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS process_memory (
	batch_id        BIGINT NOT NULL,
	node_name       VARCHAR NOT NULL,
	app_id          VARCHAR NOT NULL,
	executor_id     VARCHAR NOT NULL,
	pid             UINTEGER NOT NULL,
	time_ns         BIGINT NOT NULL,
	rss_bytes       UBIGINT NOT NULL,
	rss_anon_bytes  UBIGINT NOT NULL,
	rss_file_bytes  UBIGINT NOT NULL,
	rss_shmem_bytes UBIGINT NOT NULL,
	hwm_bytes       UBIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS heat (
	batch_id           BIGINT NOT NULL,
	node_name          VARCHAR NOT NULL,
	app_id             VARCHAR NOT NULL,
	executor_id        VARCHAR NOT NULL,
	pid                UINTEGER NOT NULL,
	rdd_id             INTEGER NOT NULL,
	partition_id       INTEGER NOT NULL,
	block_id           VARCHAR NOT NULL,
	hook_block_id      UBIGINT NOT NULL,
	time_ns            BIGINT NOT NULL,
	interval_ns        BIGINT NOT NULL,
	sample_interval_ns BIGINT NOT NULL,
	resolved_bytes     UBIGINT NOT NULL,
	monitored_bytes    UBIGINT NOT NULL,
	covered_bytes      UBIGINT NOT NULL,
	access_rate        DOUBLE NOT NULL,
	cold_bytes         UBIGINT NOT NULL,
	cold_age_s         DOUBLE NOT NULL,
	cold_min_age_s     DOUBLE NOT NULL,
	heat_mask          UTINYINT NOT NULL,
	source_kind        TINYINT NOT NULL,
	partial            BOOLEAN NOT NULL,
	source             VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
	node_name       VARCHAR NOT NULL,
	boot_id         VARCHAR NOT NULL,
	numa_nodes      UINTEGER NOT NULL,
	page_size       UINTEGER NOT NULL,
	mem_total_bytes UBIGINT NOT NULL,
	updated_ns      BIGINT NOT NULL,
	PRIMARY KEY (node_name, boot_id)
);
CREATE TABLE IF NOT EXISTS jobs (
	job_id      VARCHAR PRIMARY KEY,
	severity    INTEGER NOT NULL,
	finish_ms   BIGINT NOT NULL,
	analyzed_ms BIGINT NOT NULL,
	app_id      VARCHAR NOT NULL,
	result      BLOB NOT NULL
);`

// migrations add the columns later versions need, at the ends of their
// tables, so that a store created by an older collector and a new one have
// the same column order (the appenders write every column in table order).
// Each statement is a no-op when it has run before; append only, after
// duckCoverageMigrations (the records' and runs' coverage columns, which
// run after these).
const migrations = `
ALTER TABLE records ADD COLUMN IF NOT EXISTS block_kind TINYINT DEFAULT 0;
ALTER TABLE records ADD COLUMN IF NOT EXISTS object_graph BOOLEAN DEFAULT false;
ALTER TABLE records ADD COLUMN IF NOT EXISTS chunk UINTEGER DEFAULT 0;
ALTER TABLE records ADD COLUMN IF NOT EXISTS chunks UINTEGER DEFAULT 0;
ALTER TABLE records ADD COLUMN IF NOT EXISTS stage_id INTEGER DEFAULT -1;
ALTER TABLE records ADD COLUMN IF NOT EXISTS stage_attempt INTEGER DEFAULT -1;
ALTER TABLE records ADD COLUMN IF NOT EXISTS task_attempt BIGINT DEFAULT -1;
ALTER TABLE records ADD COLUMN IF NOT EXISTS free_reason TINYINT DEFAULT 0;
ALTER TABLE records ADD COLUMN IF NOT EXISTS mem_mode TINYINT DEFAULT 0;
ALTER TABLE records ADD COLUMN IF NOT EXISTS mem_location TINYINT DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS block_kind TINYINT DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS object_graph BOOLEAN DEFAULT false;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS chunk UINTEGER DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS chunks UINTEGER DEFAULT 0;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS stage_id INTEGER DEFAULT -1;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS stage_attempt INTEGER DEFAULT -1;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS task_attempt BIGINT DEFAULT -1;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS user_name VARCHAR;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS queue VARCHAR;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS job_type VARCHAR;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS score BIGINT;`

// DuckDB is the embedded Store. One writer goroutine owns the write
// connection and its appenders; queries use a separate connection pool.
type DuckDB struct {
	querier // the questions, over duckDialect
	duckDialect

	log       *slog.Logger
	onWrite   func(error)
	now       func() time.Time
	connector *duckdb.Connector
	db        *sql.DB // readers
	reqs      chan writeReq
	quit      chan struct{}
	done      chan struct{} // closed when the writer has returned
	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*DuckDB)(nil)

// writeReq is one unit of work for the writer goroutine.
type writeReq struct {
	fn   func(w *writer) error
	done chan error
}

// writer is the state only the writer goroutine touches.
type writer struct {
	conn      driver.Conn
	exec      driver.ExecerContext
	query     driver.QueryerContext
	records   *duckdb.Appender
	runs      *duckdb.Appender
	workloads *duckdb.Appender
	memory    *duckdb.Appender // process_memory
	heat      *duckdb.Appender
	// nextBatch is the batch_id the next batch gets. It comes from the
	// database: read (max(batch_id)+1) at Open and again inside the first
	// transaction after any failed write, whose COMMIT may have gone
	// through though it reported an error; only a COMMIT that returned
	// nil advances it. 0 means "read it".
	nextBatch int64
	// hook, set only by tests (export_test.go), runs before each step of
	// a write; its error fails the write at that step, as the database
	// would.
	hook func(step string) error
	// nodes is the NodeInfo last committed per (node_name, boot_id), so a
	// batch repeating it writes nothing; empty after Open, so the first
	// batch of each machine writes its row again (an idempotent upsert).
	nodes map[nodeKey]nodeInfo
	// lastSeq is the highest seq committed per (node_name, boot_id), read
	// from the batches table at a machine's first batch and again after
	// any failed write: a batch above it is new without a lookup, one at
	// or below it is looked up.
	lastSeq map[nodeKey]uint64
	// now is the store's clock.
	now func() time.Time
}

type nodeKey struct{ name, boot string }

type nodeInfo struct {
	numaNodes, pageSize uint32
	memTotal            uint64
}

// Open opens (creating if needed) the database in opts.Dir and starts its
// writer goroutine. Close must be called to flush and checkpoint.
func Open(ctx context.Context, opts Options) (*DuckDB, error) {
	if opts.Dir == "" {
		return nil, errors.New("open store: empty directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("create store dir: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	params := url.Values{}
	if opts.MemoryLimit != "" {
		params.Set("memory_limit", opts.MemoryLimit)
	}
	if opts.Threads > 0 {
		params.Set("threads", fmt.Sprint(opts.Threads))
	}
	dsn := filepath.Join(opts.Dir, DBFile)
	if len(params) > 0 {
		dsn += "?" + params.Encode()
	}
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("open duckdb %s: %w", opts.Dir, err)
	}
	w, err := openWriter(ctx, connector)
	if err != nil {
		connector.Close()
		return nil, err
	}
	onWrite := opts.OnWrite
	if onWrite == nil {
		onWrite = func(error) {}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &DuckDB{
		duckDialect: duckDialect{duckSpelling},
		log:         log.With("component", "store"),
		onWrite:     onWrite,
		now:         now,
		connector:   connector,
		db:          sql.OpenDB(connector),
		reqs:        make(chan writeReq),
		quit:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	s.querier = querier{src: s, log: s.log}
	w.now = now
	go s.writeLoop(w)
	s.log.Info("store open", "path", filepath.Join(opts.Dir, DBFile), "memory_limit", opts.MemoryLimit, "next_batch", w.nextBatch)
	return s, nil
}

func openWriter(ctx context.Context, connector *duckdb.Connector) (w *writer, err error) {
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect duckdb: %w", err)
	}
	nw := &writer{conn: conn, nodes: map[nodeKey]nodeInfo{}, lastSeq: map[nodeKey]uint64{}}
	w = nw
	defer func() {
		if err != nil {
			nw.close() // w is nil by now
		}
	}()
	var ok bool
	if w.exec, ok = conn.(driver.ExecerContext); !ok {
		return nil, errors.New("connect duckdb: connection cannot exec")
	}
	if w.query, ok = conn.(driver.QueryerContext); !ok {
		return nil, errors.New("connect duckdb: connection cannot query")
	}
	if _, err := w.exec.ExecContext(ctx, schema, nil); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	if _, err := w.exec.ExecContext(ctx, migrations+duckCoverageMigrations, nil); err != nil {
		return nil, fmt.Errorf("migrate schema: %w", err)
	}
	if err := w.backfillJobs(ctx); err != nil {
		return nil, err
	}
	if err := w.readNextBatch(ctx); err != nil {
		return nil, err
	}
	for _, a := range []struct {
		dst   **duckdb.Appender
		table string
	}{{&w.records, "records"}, {&w.runs, "runs"}, {&w.workloads, "workloads"}, {&w.memory, "process_memory"}, {&w.heat, "heat"}} {
		if *a.dst, err = duckdb.NewAppenderFromConn(conn, "", a.table); err != nil {
			return nil, fmt.Errorf("create %s appender: %w", a.table, err)
		}
	}
	return w, nil
}

// appenders are the writer's appenders, every one a table a batch fills.
func (w *writer) appenders() []*duckdb.Appender {
	return []*duckdb.Appender{w.records, w.runs, w.workloads, w.memory, w.heat}
}

// readNextBatch sets nextBatch from the batches table.
func (w *writer) readNextBatch(ctx context.Context) error {
	var maxID int64
	if err := w.scanOne(ctx, "SELECT coalesce(max(batch_id), 0) FROM batches", nil, &maxID); err != nil {
		return fmt.Errorf("read last batch id: %w", err)
	}
	w.nextBatch = maxID + 1
	return nil
}

// step runs the test hook, if any, before the named step of a write.
func (w *writer) step(name string) error {
	if w.hook == nil {
		return nil
	}
	return w.hook(name)
}

// scanOne runs a query on the writer's connection and scans its first row.
func (w *writer) scanOne(ctx context.Context, q string, args []driver.NamedValue, dst ...any) error {
	rows, err := w.query.QueryContext(ctx, q, args)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(vals); err != nil {
		return err
	}
	for i, d := range dst {
		switch p := d.(type) {
		case *int64:
			v, ok := vals[i].(int64)
			if !ok {
				return fmt.Errorf("scan column %d: got %T", i, vals[i])
			}
			*p = v
		case *uint32:
			v, ok := vals[i].(uint32)
			if !ok {
				return fmt.Errorf("scan column %d: got %T", i, vals[i])
			}
			*p = v
		case *sql.NullInt64: // NULL allowed
			*p = sql.NullInt64{}
			if vals[i] != nil {
				if err := p.Scan(vals[i]); err != nil {
					return fmt.Errorf("scan column %d: %w", i, err)
				}
			}
		default:
			return fmt.Errorf("scan column %d: unsupported %T", i, d)
		}
	}
	return nil
}

func (w *writer) close() error {
	var errs []error
	for _, a := range w.appenders() {
		if a != nil {
			errs = append(errs, a.Close())
		}
	}
	if w.exec != nil {
		if _, err := w.exec.ExecContext(context.Background(), "CHECKPOINT", nil); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: %w", err))
		}
	}
	errs = append(errs, w.conn.Close())
	return errors.Join(errs...)
}

func (s *DuckDB) writeLoop(w *writer) {
	defer close(s.done)
	for {
		select {
		case r := <-s.reqs:
			r.done <- r.fn(w)
		case <-s.quit:
			if err := w.close(); err != nil {
				s.closeErr = fmt.Errorf("close writer: %w", err)
			}
			return
		}
	}
}

// submit hands fn to the writer goroutine and waits for its outcome, or
// for ctx to end. The caller's ctx decides only whether fn is handed over
// and how long the caller waits: fn itself runs with a context of the
// store's own (writeCtx), so once a write has begun it commits or rolls
// back on its own terms, whatever becomes of the caller, and the store
// reports that outcome (OnWrite). A caller that stopped waiting learns
// nothing; a batch it replays is then found stored or not.
func (s *DuckDB) submit(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := writeReq{fn: fn, done: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeCtx is the context of every statement the writer runs. It is never
// the caller's: DuckDB's driver interrupts a statement whose context ends,
// and an interrupted COMMIT can report an error after it went through.
var writeCtx = context.Background()

// Close stops the writer, closes its appenders, checkpoints the WAL into the
// database file and closes it. Later calls return the first call's result.
func (s *DuckDB) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.done
		errs := []error{s.closeErr, s.db.Close(), s.connector.Close()}
		s.closeErr = errors.Join(errs...)
		s.log.Info("store closed", "error", s.closeErr)
	})
	return s.closeErr
}

func (s *DuckDB) closed() bool { return isClosed(s.quit) }

// Append stores b in one transaction: its key row in batches, then its
// records, runs, workloads, process memory and heat samples through the
// appenders. It returns after
// COMMIT, or when ctx ends; see submit for what a caller that stopped
// waiting may assume.
func (s *DuckDB) Append(ctx context.Context, b *stratav1.Batch) (AppendResult, error) {
	if err := ValidateBatch(b); err != nil {
		return AppendResult{}, err
	}
	var res AppendResult
	err := s.submit(ctx, func(w *writer) error {
		var err error
		res, err = w.append(b)
		s.onWrite(err)
		return err
	})
	if err != nil {
		return AppendResult{}, fmt.Errorf("append batch %s/%d: %w", b.GetNodeName(), b.GetSeq(), err)
	}
	return res, nil
}

func (w *writer) append(b *stratav1.Batch) (res AppendResult, err error) {
	ctx := writeCtx
	key := []driver.NamedValue{
		{Ordinal: 1, Value: b.GetNodeName()},
		{Ordinal: 2, Value: b.GetBootId()},
		{Ordinal: 3, Value: b.GetSeq()},
	}
	if err := w.step("lookup"); err != nil {
		return res, err
	}
	nk := nodeKey{b.GetNodeName(), b.GetBootId()}
	last, known := w.lastSeq[nk]
	if !known {
		var top int64
		if err := w.scanOne(ctx, "SELECT coalesce(max(seq), 0)::BIGINT FROM batches WHERE node_name = $1 AND boot_id = $2",
			key[:2], &top); err != nil {
			return res, fmt.Errorf("look up last batch: %w", err)
		}
		last = uint64(top)
		w.lastSeq[nk] = last
	}
	if b.GetSeq() <= last {
		var prev uint32
		err = w.scanOne(ctx, "SELECT records FROM batches WHERE node_name = $1 AND boot_id = $2 AND seq = $3", key, &prev)
		switch {
		case err == nil:
			return AppendResult{Duplicate: true, Records: prev}, nil
		case !errors.Is(err, io.EOF):
			return res, fmt.Errorf("look up batch: %w", err)
		}
	}
	if err := w.step("begin"); err != nil {
		return res, err
	}
	if _, err := w.exec.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
		return res, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	if w.nextBatch == 0 {
		if err := w.readNextBatch(ctx); err != nil {
			return res, err
		}
	}
	id := w.nextBatch
	if err := w.step("rows"); err != nil {
		return res, err
	}
	if err := w.appendRows(id, b); err != nil {
		return res, err
	}
	for _, a := range w.filled(b) {
		if err := a.Flush(); err != nil {
			return res, fmt.Errorf("flush appender: %w", err)
		}
	}
	if err := w.step("key"); err != nil {
		return res, err
	}
	n := uint32(len(b.GetRecords()))
	keyRow := append(key, driver.NamedValue{Ordinal: 4, Value: id}, driver.NamedValue{Ordinal: 5, Value: n},
		driver.NamedValue{Ordinal: 6, Value: w.now().UnixNano()})
	if _, err := w.exec.ExecContext(ctx, `INSERT INTO batches (node_name, boot_id, seq, batch_id, records, received_ns)
		VALUES ($1, $2, $3, $4, $5, $6)`, keyRow); err != nil {
		return res, fmt.Errorf("insert batch key: %w", err)
	}
	if err := w.step("node"); err != nil {
		return res, err
	}
	_, node, changed, err := w.putNode(ctx, b)
	if err != nil {
		return res, err
	}
	if err := w.step("commit"); err != nil {
		return res, err
	}
	if _, err := w.exec.ExecContext(ctx, "COMMIT", nil); err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	// A failure reported from here on leaves the batch stored: the
	// transaction is over, so abort's ROLLBACK finds nothing to undo, and
	// the next write reads its id from the table.
	if err := w.step("committed"); err != nil {
		return res, err
	}
	w.nextBatch++
	w.lastSeq[nk] = max(last, b.GetSeq())
	if changed {
		w.nodes[nk] = node
	}
	return AppendResult{Records: n}, nil
}

// abort undoes a failed write: it drops what the appenders buffered and the
// transaction, and forgets the next batch id, which is read from the table
// again inside the next transaction (a COMMIT that reported an error may
// have gone through). ROLLBACK fails harmlessly when no transaction is
// open; if it fails with one open, the next BEGIN fails too, and every
// write reports it until the collector restarts.
func (w *writer) abort() {
	for _, a := range w.appenders() {
		_ = a.Clear()
	}
	_, _ = w.exec.ExecContext(writeCtx, "ROLLBACK", nil)
	w.nextBatch = 0
	clear(w.lastSeq)
}

// filled are the appenders b puts rows in: flushing an empty one still
// costs a call into the database.
func (w *writer) filled(b *stratav1.Batch) []*duckdb.Appender {
	var out []*duckdb.Appender
	if len(b.GetRecords()) > 0 {
		out = append(out, w.records)
		for _, r := range b.GetRecords() {
			if len(r.GetRuns()) > 0 {
				out = append(out, w.runs)
				break
			}
		}
	}
	if len(b.GetWorkloads()) > 0 {
		out = append(out, w.workloads)
	}
	if len(b.GetProcesses()) > 0 {
		out = append(out, w.memory)
	}
	if len(b.GetHeat()) > 0 {
		out = append(out, w.heat)
	}
	return out
}

// nodeUpsertSQL stores a machine's NodeInfo; a zero field ("unknown")
// keeps the value stored before.
const nodeUpsertSQL = `INSERT INTO nodes (node_name, boot_id, numa_nodes, page_size, mem_total_bytes, updated_ns)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (node_name, boot_id) DO UPDATE SET
		numa_nodes = CASE WHEN excluded.numa_nodes > 0 THEN excluded.numa_nodes ELSE nodes.numa_nodes END,
		page_size = CASE WHEN excluded.page_size > 0 THEN excluded.page_size ELSE nodes.page_size END,
		mem_total_bytes = CASE WHEN excluded.mem_total_bytes > 0 THEN excluded.mem_total_bytes ELSE nodes.mem_total_bytes END,
		updated_ns = excluded.updated_ns`

// putNode writes b's NodeInfo, inside the batch's transaction, unless it
// is absent, all unknown, or what was last committed for the machine.
// changed says whether the caller should remember node after COMMIT.
func (w *writer) putNode(ctx context.Context, b *stratav1.Batch) (key nodeKey, node nodeInfo, changed bool, err error) {
	ni := b.GetNode()
	key = nodeKey{b.GetNodeName(), b.GetBootId()}
	node = nodeInfo{ni.GetNumaNodes(), ni.GetPageSize(), ni.GetMemTotalBytes()}
	if node == (nodeInfo{}) || w.nodes[key] == node {
		return key, node, false, nil
	}
	args := []driver.NamedValue{
		{Ordinal: 1, Value: key.name}, {Ordinal: 2, Value: key.boot},
		{Ordinal: 3, Value: node.numaNodes}, {Ordinal: 4, Value: node.pageSize}, {Ordinal: 5, Value: node.memTotal},
		{Ordinal: 6, Value: w.now().UnixNano()},
	}
	if _, err := w.exec.ExecContext(ctx, nodeUpsertSQL, args); err != nil {
		return key, node, false, fmt.Errorf("store node info: %w", err)
	}
	return key, node, true, nil
}

func (w *writer) appendRows(id int64, b *stratav1.Batch) error {
	node := b.GetNodeName()
	for i, r := range b.GetRecords() {
		blk := r.GetBlock()
		f := r.GetFaults()
		var pages uint64
		for _, run := range r.GetRuns() {
			pages += uint64(run.GetCount())
		}
		cov := coverageValues(r)
		err := w.records.AppendRow(append([]driver.Value{id, int32(i), node, r.GetTimeUnixNano(), int8(r.GetAccess()), r.GetPid(), r.GetTid(),
			blk.GetAppId(), blk.GetExecutorId(), blk.GetRddId(), blk.GetPartition(), blk.GetBlockId(), blk.GetHookBlockId(),
			r.GetVaddr(), r.GetLength(), r.GetPageSize(), r.GetCpuNumaNode(), uint32(len(r.GetRuns())), pages,
			f != nil, f.GetRead(), f.GetWrite(), f.GetExec(), f.GetMajor(), r.GetResolveError(),
			f.GetUnclassified(), int8(r.GetFaultKind()),
			int8(blk.GetKind()), blk.GetObjectGraph(), blk.GetChunk(), blk.GetChunks(), blk.GetStageId(), blk.GetStageAttempt(),
			blk.GetTaskAttemptId(), int8(r.GetFreeReason()), int8(blk.GetMode()), int8(blk.GetLocation())}, cov...)...)
		if err != nil {
			return fmt.Errorf("append record %d: %w", i, err)
		}
		for j, run := range r.GetRuns() {
			err := w.runs.AppendRow(id, int32(i), r.GetTimeUnixNano(), int8(r.GetAccess()), r.GetPid(),
				blk.GetAppId(), blk.GetExecutorId(), blk.GetRddId(), blk.GetPartition(), blk.GetBlockId(),
				int8(blk.GetMode()), int8(blk.GetLocation()), blk.GetHookBlockId(), r.GetPageSize(),
				run.GetVaddr(), run.GetCount(), run.GetState(), run.GetPfn(), run.GetKpageflags(), run.GetFolioPages(),
				run.GetKpagecount(), run.GetNumaNode(), run.GetSwapType(), run.GetSwapOffset(), encodeDeltas(run.GetPfnDeltas()),
				int8(blk.GetKind()), blk.GetObjectGraph(), blk.GetChunk(), blk.GetChunks(), blk.GetStageId(), blk.GetStageAttempt(),
				blk.GetTaskAttemptId())
			if err != nil {
				return fmt.Errorf("append record %d run %d: %w", i, j, err)
			}
		}
	}
	for i, wl := range b.GetWorkloads() {
		err := w.workloads.AppendRow(id, node, wl.GetAppId(), wl.GetExecutorId(), wl.GetPid(),
			wl.GetStartUnixNano(), wl.GetEndUnixNano(), wl.GetTaskClockNs(), wl.GetContextSwitches(), wl.GetCpuMigrations(),
			wl.GetMinorFaults(), wl.GetMajorFaults(), optional(wl.Cycles), optional(wl.Instructions), optional(wl.DtlbMisses),
			optional(wl.WalkCyclesLoad), optional(wl.WalkCyclesStore), optional(wl.WalkCyclesRdd), wl.GetPmuStatus())
		if err != nil {
			return fmt.Errorf("append workload %d: %w", i, err)
		}
	}
	for i, m := range b.GetProcesses() {
		err := w.memory.AppendRow(id, node, m.GetAppId(), m.GetExecutorId(), m.GetPid(), m.GetTimeUnixNano(),
			m.GetRssBytes(), m.GetRssAnonBytes(), m.GetRssFileBytes(), m.GetRssShmemBytes(), m.GetHwmBytes())
		if err != nil {
			return fmt.Errorf("append process memory %d: %w", i, err)
		}
	}
	for i, h := range b.GetHeat() {
		v := heatValuesOf(h)
		err := w.heat.AppendRow(id, node, h.GetAppId(), h.GetExecutorId(), h.GetPid(), h.GetRddId(), h.GetPartition(),
			h.GetBlockId(), h.GetHookBlockId(), h.GetTimeUnixNano(), h.GetIntervalNs(), h.GetSampleIntervalNs(),
			h.GetResolvedBytes(), v.monitored, h.GetCoveredBytes(), v.rate, h.GetColdBytes(), v.coldAge, v.coldMinAge,
			v.mask, int8(h.GetSourceKind()), h.GetPartial(), h.GetSource())
		if err != nil {
			return fmt.Errorf("append heat sample %d: %w", i, err)
		}
	}
	return nil
}

// optional turns an absent proto3 optional into SQL NULL.
func optional(p *uint64) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

// putJobSQL stores one job with the columns SearchJobs filters on.
const putJobSQL = `INSERT OR REPLACE INTO jobs (job_id, severity, finish_ms, analyzed_ms, app_id, result,
	user_name, queue, job_type, score) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// PutJob stores r, replacing an earlier result for the same job id.
func (s *DuckDB) PutJob(ctx context.Context, r *stratav1.JobResult) error {
	if r.GetJobId() == "" {
		return fmt.Errorf("put job: %w: empty job_id", ErrInvalidQuery)
	}
	blob, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("marshal job %s: %w", r.GetJobId(), err)
	}
	args := []driver.NamedValue{
		{Ordinal: 1, Value: r.GetJobId()},
		{Ordinal: 2, Value: int32(r.GetSeverity())},
		{Ordinal: 3, Value: r.GetFinishUnixMs()},
		{Ordinal: 4, Value: r.GetAnalyzedUnixMs()},
		{Ordinal: 5, Value: r.GetAppId()},
		{Ordinal: 6, Value: blob},
		{Ordinal: 7, Value: r.GetUser()},
		{Ordinal: 8, Value: r.GetQueue()},
		{Ordinal: 9, Value: r.GetType()},
		{Ordinal: 10, Value: r.GetScore()},
	}
	err = s.submit(ctx, func(w *writer) error {
		_, err := w.exec.ExecContext(writeCtx, putJobSQL, args)
		s.onWrite(err)
		return err
	})
	if err != nil {
		return fmt.Errorf("put job %s: %w", r.GetJobId(), err)
	}
	return nil
}
