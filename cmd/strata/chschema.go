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
	register(command{name: "clickhouse-schema", args: "[--clickhouse-database NAME] [--clickhouse-cluster NAME]",
		summary: "print the ClickHouse DDL of the collectors' store (one server, or a cluster)", run: runCHSchema,
		help: `Prints the statements that create the collectors' database and tables, for an operator who
manages ClickHouse's schema (the collector creates it itself unless told not to). The flags are
the collector's of the same names.`})
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func runCHSchema(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata clickhouse-schema", flag.ContinueOnError)
	db := fs.String("clickhouse-database", "strata", "`NAME` of the database of the tables")
	cluster := fs.String("clickhouse-cluster", "", "`NAME` of the cluster of the sharded, replicated layout (empty: one server)")
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
	stmts := ddl.SingleSchema(*db)
	if *cluster != "" {
		stmts = ddl.ClusterSchema(*db, *cluster)
	}
	for _, s := range stmts {
		if _, err := fmt.Fprintf(stdout, "%s;\n\n", s); err != nil {
			return fmt.Errorf("write schema: %w", err)
		}
	}
	return nil
}
