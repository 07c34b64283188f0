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
	register(command{name: "clickhouse-schema", summary: "print the ClickHouse DDL of the collectors' store (one server, or a cluster)", run: runCHSchema})
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func runCHSchema(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata clickhouse-schema", flag.ContinueOnError)
	db := fs.String("database", "strata", "database of the tables")
	cluster := fs.String("cluster", "", "cluster of the sharded, replicated layout (empty: one server)")
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if !plainName.MatchString(*db) || (*cluster != "" && !plainName.MatchString(*cluster)) {
		return fmt.Errorf("clickhouse-schema: database %q and cluster %q must be plain names", *db, *cluster)
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
