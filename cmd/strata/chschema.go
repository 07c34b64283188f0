package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"

	"github.com/stratatrace/strata/collector/store/ddl"
)

func init() {
	register(command{name: "clickhouse-schema", args: "[--clickhouse-database NAME] [--clickhouse-cluster NAME] [--server-version VERSION]",
		summary: "print the ClickHouse DDL of the collectors' store (one server, or a cluster)", run: runCHSchema,
		help: `Prints the statements that create the collectors' database and tables, for an operator who
manages ClickHouse's schema (the collector creates it itself unless told not to). The flags
--clickhouse-database and --clickhouse-cluster are the collector's of the same names. The columns
take the forms the servers' version accepts (--server-version, what SELECT version() answers):
18.16's plain types by default, which every server reads; LowCardinality strings from 19.3, and
compression codecs on the trace tables from 19.13, as the collector itself creates them on such a
server.`})
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func runCHSchema(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata clickhouse-schema", flag.ContinueOnError)
	db := fs.String("clickhouse-database", "strata", "`NAME` of the database of the tables")
	cluster := fs.String("clickhouse-cluster", "", "`NAME` of the cluster of the sharded, replicated layout (empty: one server)")
	version := fs.String("server-version", "18.16", "`VERSION` of the ClickHouse servers, e.g. 24.8: the column forms they accept")
	oldFlag(fs, stderr, "database", "clickhouse-database")
	oldFlag(fs, stderr, "cluster", "clickhouse-cluster")
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	if !plainName.MatchString(*db) || (*cluster != "" && !plainName.MatchString(*cluster)) {
		return badUsage("clickhouse-schema", "--clickhouse-database %q and --clickhouse-cluster %q must be plain names", *db, *cluster)
	}
	if fs.NArg() > 0 {
		return badUsage("clickhouse-schema", "unexpected arguments %q", fs.Args())
	}
	forms, ok := ddl.FeaturesOf(*version)
	if !ok {
		return badUsage("clickhouse-schema", "server version %q is not MAJOR.MINOR[.PATCH…]", *version)
	}
	l := ddl.Layout{Features: forms}
	if *cluster != "" {
		l = ddl.Layout{Cluster: *cluster, OnCluster: true, Replicated: true, Features: forms}
	}
	stmts := l.Statements(*db)
	for _, s := range stmts {
		if _, err := fmt.Fprintf(stdout, "%s;\n\n", s); err != nil {
			return fmt.Errorf("write schema: %w", err)
		}
	}
	return nil
}
