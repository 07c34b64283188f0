// Package ddl is the schema of the collectors' store as data and text:
// the ClickHouse tables with their columns, engines and layouts (one
// server, or a sharded and replicated cluster), the column forms each
// server version accepts (Features, FeaturesOf), their DDL, and the
// coverage columns both backends' records carry. It links no database
// driver, so the user CLI prints the DDL (strata clickhouse-schema)
// without the embedded store; the store builds its tables, inserts and
// migrations from the same lists.
package ddl

import (
	"fmt"
	"strings"
)

// Column is one of the coverage columns both backends' records carry.
type Column struct {
	Name     string
	Duck, CH string // its type in DuckDB and in ClickHouse
	// Def is its value in rows stored before the column existed, an SQL
	// literal both backends read.
	Def string
}

// Coverage are the columns of what a record's pages hold of its block
// (docs/objectgraph.md), in the order rows write them. column_index is
// SparkBlock.column, -1 when absent (a column index is never negative:
// the hook's -1, "every column", means absent too).
var Coverage = []Column{
	{"spark_bytes", "UBIGINT", "UInt64", "0"},
	{"cached_batch", "BOOLEAN", "UInt8", "0"},
	{"column_index", "INTEGER", "Int32", "-1"},
	{"column_name", "VARCHAR", "String", "''"},
	{"resolution", "TINYINT", "Int8", "0"},
	{"cov_bytes", "UBIGINT", "UInt64", "0"},
	{"cov_objects", "UBIGINT", "UInt64", "0"},
	{"cov_shared_objects", "UBIGINT", "UInt64", "0"},
	{"cov_shared_bytes", "UBIGINT", "UInt64", "0"},
	{"cov_opaque_objects", "UBIGINT", "UInt64", "0"},
	{"cov_gc_epoch", "UINTEGER", "UInt32", "0"},
	{"cov_extents", "UINTEGER", "UInt32", "0"},
	{"cov_detail", "VARCHAR", "String", "''"},
}

// CoverageCH are the coverage columns in ClickHouse's schema ("name Type").
func CoverageCH() []string {
	out := make([]string, len(Coverage))
	for i, c := range Coverage {
		out[i] = c.Name + " " + c.CH
	}
	return out
}

// Table is one table of the ClickHouse schema.
type Table struct {
	Name    string
	Columns []string // "name Type", in the order inserts write them
	Engine  string   // MergeTree or ReplacingMergeTree(version)
	// PartitionBy is the partition key, "" for none. Retained tables are
	// partitioned by day of the collector's receipt, so retention drops
	// whole partitions and one batch's rows share one.
	PartitionBy string
	OrderBy     string
	// ShardKey spreads rows over a cluster's shards. A batch's rows, its
	// commit rows and its machine's NodeInfo share node_name, so the
	// visibility subqueries and the per-block groupings stay on one shard.
	ShardKey string
	// Retained: retention drops this table's old partitions.
	Retained bool
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

const TraceOrder = "(app_id, rdd_id, partition_id, time_ns)"

// Tables is the schema. ORDER BY leads with the application, the RDD,
// the partition and the time: every query names an application, and most
// an RDD.
var Tables = []Table{
	{Name: "records", Columns: concat([]string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64", "rec_idx UInt32",
	}, recordCols, []string{
		"tid UInt32", "vaddr UInt64", "length UInt64", "runs UInt32", "pages UInt64",
		"fault_read UInt64", "fault_write UInt64", "fault_exec UInt64", "fault_major UInt64", "fault_unclassified UInt64",
		"free_reason Int8", "resolve_error String",
	}, CoverageCH()), Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: TraceOrder, ShardKey: "cityHash64(node_name)", Retained: true},
	// runs: one row per PageRun. Its batch is known by uid (the
	// visibility test and Trace's order need nothing else); node_name is
	// there for the cluster's sharding key.
	{Name: "runs", Columns: concat([]string{"received DateTime", "uid UInt64", "node_name String", "rec_idx UInt32"}, recordCols, []string{
		"vaddr UInt64", "pages UInt32", "state UInt32", "pfn UInt64", "kpageflags UInt64", "folio_pages UInt32",
		"kpagecount UInt64", "numa_node Int32", "swap_type UInt32", "swap_offset UInt64", "pfn_deltas String",
	}), Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: TraceOrder, ShardKey: "cityHash64(node_name)", Retained: true},
	{Name: "workloads", Columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "start_ns Int64", "end_ns Int64",
		"task_clock_ns UInt64", "context_switches UInt64", "cpu_migrations UInt64", "minor_faults UInt64", "major_faults UInt64",
		"cycles UInt64", "instructions UInt64", "dtlb_misses UInt64", "walk_load UInt64", "walk_store UInt64", "walk_rdd UInt64",
		"hw_mask UInt8", "pmu_status String",
	}, Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: "(app_id, executor_id, pid, start_ns)",
		ShardKey: "cityHash64(node_name)", Retained: true},
	// process_memory: one row per ProcessMemory sample of a hooked
	// process (VmRSS and its parts, VmHWM), for Occupation.
	{Name: "process_memory", Columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "time_ns Int64",
		"rss_bytes UInt64", "rss_anon_bytes UInt64", "rss_file_bytes UInt64", "rss_shmem_bytes UInt64", "hwm_bytes UInt64",
	}, Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: "(app_id, executor_id, pid, time_ns)",
		ShardKey: "cityHash64(node_name)", Retained: true},
	// heat: one row per HeatSample, a block's DAMON access heat at one
	// read (see heatRow for heat_mask and the absent values).
	{Name: "heat", Columns: []string{
		"received DateTime", "uid UInt64", "node_name String", "boot_id String", "seq UInt64",
		"app_id String", "executor_id String", "pid UInt32", "rdd_id Int32", "partition_id Int32", "block_id String",
		"hook_block_id UInt64", "time_ns Int64", "interval_ns Int64", "sample_interval_ns Int64",
		"resolved_bytes UInt64", "monitored_bytes UInt64", "covered_bytes UInt64", "access_rate Float64",
		"cold_bytes UInt64", "cold_age_s Float64", "cold_min_age_s Float64", "heat_mask UInt8",
		"source_kind Int8", "partial UInt8", "source String",
	}, Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: TraceOrder,
		ShardKey: "cityHash64(node_name)", Retained: true},
	// batch_apps is the commit record: one row per application of a
	// stored batch, written after all the batch's rows. A batch's rows are
	// read only through it (see visibleSQL).
	{Name: "batch_apps", Columns: []string{
		"received DateTime", "app_id String", "node_name String", "boot_id String", "seq UInt64", "uid UInt64",
	}, Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: "(app_id, node_name, boot_id, seq)",
		ShardKey: "cityHash64(node_name)", Retained: true},
	// batches answers "is this batch stored?" for Append; written last.
	{Name: "batches", Columns: []string{
		"received DateTime", "node_name String", "boot_id String", "seq UInt64", "uid UInt64", "records UInt32",
	}, Engine: "MergeTree", PartitionBy: "toDate(received)", OrderBy: "(node_name, boot_id, seq)",
		ShardKey: "cityHash64(node_name)", Retained: true},
	// nodes: what agents reported of their machines; a few rows per
	// machine, kept whatever the retention (its records may outlive it).
	{Name: "nodes", Columns: []string{
		"received DateTime", "node_name String", "boot_id String", "numa_nodes UInt32", "page_size UInt32",
		"mem_total_bytes UInt64", "updated_ns Int64",
	}, Engine: "MergeTree", OrderBy: "(node_name, boot_id)", ShardKey: "cityHash64(node_name)"},
	// jobs: one row per analysis (PutJob); the highest version of a job
	// is read. Plain MergeTree, so a job analysed twice stays visible as
	// two rows: the claim tests count them. user_name, queue, job_type and
	// score are the result's, for SearchJobs' filters and order.
	{Name: "jobs", Columns: []string{
		"received DateTime", "job_id String", "severity Int32", "finish_ms Int64", "analyzed_ms Int64", "app_id String",
		"result String", "version UInt64", "user_name String", "queue String", "job_type String", "score Int64",
	}, Engine: "MergeTree", OrderBy: "job_id", ShardKey: "cityHash64(job_id)"},
	// job_claims: collectors' claims on jobs to analyse (see Claims).
	{Name: "job_claims", Columns: []string{
		"claimed DateTime DEFAULT now()", "job_id String", "owner String", "token UInt64",
	}, Engine: "MergeTree", PartitionBy: "toDate(claimed)", OrderBy: "(job_id, claimed)", ShardKey: "cityHash64(job_id)",
		Retained: true},
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// InsertCols is the column list of an insert into t: every column but
// those the server fills (DEFAULT).
func (t Table) InsertCols() string {
	var names []string
	for _, c := range t.Columns {
		if strings.Contains(c, " DEFAULT ") {
			continue
		}
		names = append(names, strings.Fields(c)[0])
	}
	return strings.Join(names, ", ")
}

// TableByName is the table called name; it panics on a name not in
// Tables (a programming error).
func TableByName(name string) Table {
	for _, t := range Tables {
		if t.Name == name {
			return t
		}
	}
	panic("ddl: no ClickHouse table " + name)
}

// Layout says how the schema is laid out on the server(s).
type Layout struct {
	// Cluster, when set, puts each table as <name>_local on every shard
	// behind a Distributed table <name> over the cluster.
	Cluster string
	// OnCluster runs the DDL ON CLUSTER (the servers' distributed DDL
	// queue, which needs ZooKeeper); Replicated makes the local tables
	// Replicated*MergeTree. Both hold in production; a test of the
	// Distributed path on one server without ZooKeeper turns them off.
	OnCluster, Replicated bool
	// Features are the column forms of the tables' DDL (the zero value:
	// 18.16's, which every supported server accepts).
	Features Features
}

// Local names the table that holds t's rows on a server.
func (l Layout) Local(t string) string {
	if l.Cluster == "" {
		return t
	}
	return t + "_local"
}

// On is the ON CLUSTER clause of the layout's DDL, "" for none.
func (l Layout) On() string {
	if l.OnCluster {
		return " ON CLUSTER " + l.Cluster
	}
	return ""
}

// Statements returns the DDL of the schema in database db.
func (l Layout) Statements(db string) []string {
	out := []string{"CREATE DATABASE IF NOT EXISTS " + db + l.On()}
	for _, t := range Tables {
		engine := t.Engine
		if l.Replicated {
			path := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", db, t.Name)
			name, args, _ := strings.Cut(engine, "(")
			if args = strings.TrimSuffix(args, ")"); args != "" {
				path += ", " + args
			}
			engine = "Replicated" + name + "(" + path + ")"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s%s (\n\t%s\n) ENGINE = %s", db, l.Local(t.Name), l.On(),
			strings.Join(t.ColumnsFor(l.Features), ",\n\t"), engine)
		if t.PartitionBy != "" {
			b.WriteString("\nPARTITION BY " + t.PartitionBy)
		}
		b.WriteString("\nORDER BY " + t.OrderBy)
		out = append(out, b.String())
		if l.Cluster != "" {
			out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s.%s\nENGINE = Distributed(%s, %s, %s, %s)",
				db, t.Name, l.On(), db, l.Local(t.Name), l.Cluster, db, l.Local(t.Name), t.ShardKey))
		}
	}
	return out
}

// ClusterSchema returns the DDL of the sharded and replicated layout, in
// 18.16's forms, in database db on the named cluster, for an operator to
// run once (each statement is idempotent): every table as <name>_local, a
// Replicated*MergeTree on every replica of every shard, behind a
// Distributed table <name> that the collectors write and read. The
// servers need the cluster in remote_servers, ZooKeeper, and the {shard}
// and {replica} macros.
func ClusterSchema(db, cluster string) []string {
	return Layout{Cluster: cluster, OnCluster: true, Replicated: true}.Statements(db)
}

// SingleSchema returns the DDL of the single-server layout in 18.16's
// forms; the store (store.OpenClickHouse) runs it, in the forms of the
// server it talks to, when told to create the schema.
func SingleSchema(db string) []string {
	return Layout{}.Statements(db)
}
