package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// The cluster DDL names every table twice: a Replicated*MergeTree
// <name>_local on every shard (its ZooKeeper path per shard, the replica
// macro) and a Distributed <name> over the cluster sharded by machine; the
// single-server DDL has neither.
func TestCHSchema(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"clickhouse-schema", "--clickhouse-database", "traces", "--clickhouse-cluster", "prod"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	ddl := out.String()
	for _, want := range []string{
		"CREATE DATABASE IF NOT EXISTS traces ON CLUSTER prod;",
		"CREATE TABLE IF NOT EXISTS traces.runs_local ON CLUSTER prod (",
		"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/traces/runs', '{replica}')\nPARTITION BY toDate(received)\nORDER BY (app_id, rdd_id, partition_id, time_ns);",
		"CREATE TABLE IF NOT EXISTS traces.runs ON CLUSTER prod AS traces.runs_local\nENGINE = Distributed(prod, traces, runs_local, cityHash64(node_name));",
		"ENGINE = Distributed(prod, traces, jobs_local, cityHash64(job_id));",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("cluster DDL lacks %q", want)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"clickhouse-schema"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "Distributed") || strings.Contains(s, "Replicated") || !strings.Contains(s, "CREATE TABLE IF NOT EXISTS strata.records (") {
		t.Errorf("single-server DDL:\n%s", s)
	}
	if err := run(context.Background(), []string{"clickhouse-schema", "--clickhouse-database", "x;DROP"}, io.Discard, io.Discard); err == nil {
		t.Error("a database name with SQL in it was accepted")
	}
	// --database and --cluster, the former names, print the same DDL and
	// one line each on stderr.
	old, warn, code := call("clickhouse-schema", "--database", "traces", "--cluster", "prod")
	if code != 0 || old != ddl || warn != "strata clickhouse-schema: --database is deprecated: use --clickhouse-database\n"+
		"strata clickhouse-schema: --cluster is deprecated: use --clickhouse-cluster\n" {
		t.Errorf("clickhouse-schema --database --cluster: exit %d, same DDL %v, stderr %q", code, old == ddl, warn)
	}
}

// --server-version picks the column forms the collector creates on that
// server: 18.16's plain types by default, LowCardinality strings and
// compression codecs on a current one; a version it cannot read is a usage
// error.
func TestCHSchemaServerVersion(t *testing.T) {
	current, _, code := call("clickhouse-schema", "--server-version", "26.9")
	if code != 0 {
		t.Fatalf("clickhouse-schema --server-version 26.9: exit %d", code)
	}
	for _, want := range []string{"app_id LowCardinality(String) CODEC(ZSTD(3))", "time_ns Int64 CODEC(DoubleDelta, ZSTD(3))"} {
		if !strings.Contains(current, want) {
			t.Errorf("26.9's DDL lacks %q", want)
		}
	}
	plain, _, code := call("clickhouse-schema")
	if code != 0 || strings.Contains(plain, "LowCardinality") || strings.Contains(plain, "CODEC") {
		t.Errorf("the default (18.16) DDL: exit %d, with LowCardinality or CODEC:\n%s", code, plain)
	}
	if _, stderr, code := call("clickhouse-schema", "--server-version", "foo"); code != 2 {
		t.Errorf("--server-version foo: exit %d, want 2 (usage); stderr %q", code, stderr)
	}
}
