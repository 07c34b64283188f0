package store

import (
	"context"
	"fmt"
	"strings"
)

// chTable is one table of the ClickHouse schema.
type chTable struct {
	name    string
	columns []string // "name Type", in the order inserts write them
	engine  string   // MergeTree or ReplacingMergeTree(version)
	// partitionBy is the partition key, "" for none. Retained tables are
	// partitioned by day of the collector's receipt, so retention drops
	// whole partitions and one batch's rows share one.
	partitionBy string
	orderBy     string
	// shardKey spreads rows over a cluster's shards. A batch's rows, its
	// commit rows and its machine's NodeInfo share node_name, so the
	// visibility subqueries and the per-block groupings stay on one shard.
	shardKey string
	// retained: retention drops this table's old partitions.
	retained bool
}

// recordCols are the columns of a record and its block that records and
// runs both carry, so that page queries need no join (but for the
// coverage columns, which records alone carry).
var recordCols = []string{
	"time_ns Int64", "access_kind Int8", "pid UInt32",
	"app_id String", "executor_id String", "rdd_id Int32", "partition_id Int32", "block_id String", "hook_block_id UInt64",
	"mem_mode Int8", "mem_location Int8", "block_kind Int8", "object_graph UInt8", "chunk UInt32", "chunks UInt32",
	"stage_id Int32", "stage_attempt Int32", "task_attempt Int64",
	"page_size UInt32", "cpu_numa Int32", "has_faults UInt8", "fault_kind Int8",
}

const traceOrder = "(app_id, rdd_id, partition_id, time_ns)"

// chTables is the schema. ORDER BY leads with the application, the RDD,
// the partition and the time: every query names an application, and most
// an RDD.
var chTables = []chTable{
	{name: "records", columns: concat([]string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64", "rec_idx UInt32",
	}, recordCols, []string{
		"tid UInt32", "vaddr UInt64", "length UInt64", "runs UInt32", "pages UInt64",
		"fault_read UInt64", "fault_write UInt64", "fault_exec UInt64", "fault_major UInt64", "fault_unclassified UInt64",
		"free_reason Int8", "resolve_error String",
	}, chCoverageCols), engine: "MergeTree", partitionBy: "toDate(received)", orderBy: traceOrder, shardKey: "cityHash64(node_name)", retained: true},
	// runs: one row per PageRun. Its batch is known by uid (the
	// visibility test and Trace's order need nothing else); node_name is
	// there for the cluster's sharding key.
	{name: "runs", columns: concat([]string{"received DateTime", "uid UInt64", "node_name String", "rec_idx UInt32"}, recordCols, []string{
		"vaddr UInt64", "pages UInt32", "state UInt32", "pfn UInt64", "kpageflags UInt64", "folio_pages UInt32",
		"kpagecount UInt64", "numa_node Int32", "swap_type UInt32", "swap_offset UInt64", "pfn_deltas String",
	}), engine: "MergeTree", partitionBy: "toDate(received)", orderBy: traceOrder, shardKey: "cityHash64(node_name)", retained: true},
	{name: "workloads", columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "start_ns Int64", "end_ns Int64",
		"task_clock_ns UInt64", "context_switches UInt64", "cpu_migrations UInt64", "minor_faults UInt64", "major_faults UInt64",
		"cycles UInt64", "instructions UInt64", "dtlb_misses UInt64", "walk_load UInt64", "walk_store UInt64", "walk_rdd UInt64",
		"hw_mask UInt8", "pmu_status String",
	}, engine: "MergeTree", partitionBy: "toDate(received)", orderBy: "(app_id, executor_id, pid, start_ns)",
		shardKey: "cityHash64(node_name)", retained: true},
	// process_memory: one row per ProcessMemory sample of a hooked
	// process (VmRSS and its parts, VmHWM), for Occupation.
	{name: "process_memory", columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "time_ns Int64",
		"rss_bytes UInt64", "rss_anon_bytes UInt64", "rss_file_bytes UInt64", "rss_shmem_bytes UInt64", "hwm_bytes UInt64",
	}, engine: "MergeTree", partitionBy: "toDate(received)", orderBy: "(app_id, executor_id, pid, time_ns)",
		shardKey: "cityHash64(node_name)", retained: true},
	// heat: one row per HeatSample, a block's DAMON access heat at one
	// read (see heatRow for heat_mask and the absent values).
	{name: "heat", columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "rdd_id Int32", "partition_id Int32", "block_id String",
		"hook_block_id UInt64", "time_ns Int64", "interval_ns Int64", "sample_interval_ns Int64",
		"resolved_bytes UInt64", "monitored_bytes UInt64", "covered_bytes UInt64", "access_rate Float64",
		"cold_bytes UInt64", "cold_age_s Float64", "cold_min_age_s Float64", "heat_mask UInt8",
		"source_kind Int8", "partial UInt8", "source String",
	}, engine: "MergeTree", partitionBy: "toDate(received)", orderBy: traceOrder,
		shardKey: "cityHash64(node_name)", retained: true},
	// batch_apps is the commit record: one row per application of a
	// stored batch, written after all the batch's rows. A batch's rows are
	// read only through it (see visibleSQL).
	{name: "batch_apps", columns: []string{
		"received DateTime", "app_id String", "node_name String", "boot_id String", "seq UInt64", "uid UInt64",
	}, engine: "MergeTree", partitionBy: "toDate(received)", orderBy: "(app_id, node_name, boot_id, seq)",
		shardKey: "cityHash64(node_name)", retained: true},
	// batches answers "is this batch stored?" for Append; written last.
	{name: "batches", columns: []string{
		"received DateTime", "node_name String", "boot_id String", "seq UInt64", "uid UInt64", "records UInt32",
	}, engine: "MergeTree", partitionBy: "toDate(received)", orderBy: "(node_name, boot_id, seq)",
		shardKey: "cityHash64(node_name)", retained: true},
	// nodes: what agents reported of their machines; a few rows per
	// machine, kept whatever the retention (its records may outlive it).
	{name: "nodes", columns: []string{
		"received DateTime", "node_name String", "boot_id String", "numa_nodes UInt32", "page_size UInt32",
		"mem_total_bytes UInt64", "updated_ns Int64",
	}, engine: "MergeTree", orderBy: "(node_name, boot_id)", shardKey: "cityHash64(node_name)"},
	// jobs: one row per analysis (PutJob); the highest version of a job
	// is read. Plain MergeTree, so a job analysed twice stays visible as
	// two rows: the claim tests count them. user_name, queue, job_type and
	// score are the result's, for SearchJobs' filters and order.
	{name: "jobs", columns: []string{
		"received DateTime", "job_id String", "severity Int32", "finish_ms Int64", "analyzed_ms Int64", "app_id String",
		"result String", "version UInt64", "user_name String", "queue String", "job_type String", "score Int64",
	}, engine: "MergeTree", orderBy: "job_id", shardKey: "cityHash64(job_id)"},
	// job_claims: collectors' claims on jobs to analyse (see Claims).
	{name: "job_claims", columns: []string{
		"claimed DateTime DEFAULT now()", "job_id String", "owner String", "token UInt64",
	}, engine: "MergeTree", partitionBy: "toDate(claimed)", orderBy: "(job_id, claimed)", shardKey: "cityHash64(job_id)",
		retained: true},
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// insertCols is the column list of an insert into t: every column but
// those the server fills (DEFAULT).
func (t chTable) insertCols() string {
	var names []string
	for _, c := range t.columns {
		if strings.Contains(c, " DEFAULT ") {
			continue
		}
		names = append(names, strings.Fields(c)[0])
	}
	return strings.Join(names, ", ")
}

func tableByName(name string) chTable {
	for _, t := range chTables {
		if t.name == name {
			return t
		}
	}
	panic("store: no ClickHouse table " + name)
}

// chLayout says how the schema is laid out on the server(s).
type chLayout struct {
	// cluster, when set, puts each table as <name>_local on every shard
	// behind a Distributed table <name> over the cluster.
	cluster string
	// onCluster runs the DDL ON CLUSTER (the servers' distributed DDL
	// queue, which needs ZooKeeper); replicated makes the local tables
	// Replicated*MergeTree. Both hold in production; a test of the
	// Distributed path on one server without ZooKeeper turns them off.
	onCluster, replicated bool
}

// local names the table that holds t's rows on a server.
func (l chLayout) local(t string) string {
	if l.cluster == "" {
		return t
	}
	return t + "_local"
}

func (l chLayout) on() string {
	if l.onCluster {
		return " ON CLUSTER " + l.cluster
	}
	return ""
}

// statements returns the DDL of the schema in database db.
func (l chLayout) statements(db string) []string {
	out := []string{"CREATE DATABASE IF NOT EXISTS " + db + l.on()}
	for _, t := range chTables {
		engine := t.engine
		if l.replicated {
			path := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", db, t.name)
			name, args, _ := strings.Cut(engine, "(")
			if args = strings.TrimSuffix(args, ")"); args != "" {
				path += ", " + args
			}
			engine = "Replicated" + name + "(" + path + ")"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s%s (\n\t%s\n) ENGINE = %s", db, l.local(t.name), l.on(),
			strings.Join(t.columns, ",\n\t"), engine)
		if t.partitionBy != "" {
			b.WriteString("\nPARTITION BY " + t.partitionBy)
		}
		b.WriteString("\nORDER BY " + t.orderBy)
		out = append(out, b.String())
		if l.cluster != "" {
			out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s.%s\nENGINE = Distributed(%s, %s, %s, %s)",
				db, t.name, l.on(), db, l.local(t.name), l.cluster, db, l.local(t.name), t.shardKey))
		}
	}
	return out
}

// ClusterSchema returns the DDL of the sharded and replicated layout in
// database db on the named cluster, for an operator to run once (each
// statement is idempotent): every table as <name>_local, a
// Replicated*MergeTree on every replica of every shard, behind a
// Distributed table <name> that the collectors write and read. The
// servers need the cluster in remote_servers, ZooKeeper, and the {shard}
// and {replica} macros.
func ClusterSchema(db, cluster string) []string {
	return chLayout{cluster: cluster, onCluster: true, replicated: true}.statements(db)
}

// SingleSchema returns the DDL of the single-server layout, which
// OpenClickHouse runs itself when CreateSchema is set.
func SingleSchema(db string) []string {
	return chLayout{}.statements(db)
}

func (s *ClickHouse) layout() chLayout {
	if s.opts.Cluster == "" {
		return chLayout{}
	}
	if s.opts.layout != nil {
		return *s.opts.layout
	}
	return chLayout{cluster: s.opts.Cluster, onCluster: true, replicated: true}
}

// prepareSchema creates the schema when asked, then checks that every
// table is there.
func (s *ClickHouse) prepareSchema(ctx context.Context) error {
	db := s.opts.Database
	if s.opts.CreateSchema {
		noDB := *s.c
		noDB.database = "" // the first statement creates it; the others name it
		for _, stmt := range s.layout().statements(db) {
			err := noDB.exec(ctx, stmt)
			// Two collectors creating the schema at once: IF NOT EXISTS
			// does not always hold on old servers; the table is there.
			if err != nil && !isCode(err, chTableExists, chDatabaseExists) {
				return fmt.Errorf("create schema: %w", err)
			}
		}
	}
	have := map[string]bool{}
	err := s.c.query(ctx, "SELECT "+rowSelect+", name FROM system.tables WHERE database = "+quote(db),
		func(r *rowReader) { have[r.str()] = true })
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	for _, t := range chTables {
		if !have[t.name] {
			return fmt.Errorf("table %s.%s is missing: create the schema (strata clickhouse-schema prints it)", db, t.name)
		}
	}
	return s.addColumns(ctx)
}

// addColumns brings tables an older collector created up to the schema:
// it adds the columns they lack (the local table first, then the
// Distributed one), old rows reading each column's default (coverageCols'
// def, else the type's zero). With CreateSchema the store runs the
// statements itself; otherwise Open fails and names them, for the
// operator to run. ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, so
// what is missing is read from system.columns.
func (s *ClickHouse) addColumns(ctx context.Context) error {
	db, l := s.opts.Database, s.layout()
	have := map[[2]string]bool{}
	err := s.c.query(ctx, "SELECT "+rowSelect+", table, name FROM system.columns WHERE database = "+quote(db),
		func(r *rowReader) { have[[2]string{r.str(), r.str()}] = true })
	if err != nil {
		return fmt.Errorf("list columns: %w", err)
	}
	defaults := map[string]string{}
	for _, c := range coverageCols {
		defaults[c.name] = c.def
	}
	var stmts []string
	for _, t := range chTables {
		tables := []string{l.local(t.name)}
		if l.cluster != "" {
			tables = append(tables, t.name)
		}
		for _, table := range tables {
			for _, col := range t.columns {
				name := strings.Fields(col)[0]
				if have[[2]string{table, name}] {
					continue
				}
				stmt := fmt.Sprintf("ALTER TABLE %s.%s%s ADD COLUMN %s", db, table, l.on(), col)
				if d, ok := defaults[name]; ok && !strings.Contains(col, " DEFAULT ") {
					stmt += " DEFAULT " + d
				}
				stmts = append(stmts, stmt)
			}
		}
	}
	if len(stmts) == 0 {
		return nil
	}
	if !s.opts.CreateSchema {
		return fmt.Errorf("tables of %s lack columns this collector writes: run\n%s", db, strings.Join(stmts, ";\n")+";")
	}
	for _, stmt := range stmts {
		if err := s.c.exec(ctx, stmt); err != nil && !isCode(err, chDuplicateColumn) {
			return fmt.Errorf("add column: %w", err)
		}
	}
	s.log.Info("added columns", "database", db, "statements", len(stmts))
	return nil
}
