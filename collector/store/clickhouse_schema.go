package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratatrace/strata/collector/store/ddl"
)

func (s *ClickHouse) layout() ddl.Layout {
	if s.opts.Cluster == "" {
		return ddl.Layout{}
	}
	if s.opts.layout != nil {
		return *s.opts.layout
	}
	return ddl.Layout{Cluster: s.opts.Cluster, OnCluster: true, Replicated: true}
}

// SingleSchema is ddl.SingleSchema: the single-server layout's DDL, which
// OpenClickHouse runs itself when CreateSchema is set.
func SingleSchema(db string) []string { return ddl.SingleSchema(db) }

// ClusterSchema is ddl.ClusterSchema: the sharded and replicated layout's
// DDL, for an operator to run once.
func ClusterSchema(db, cluster string) []string { return ddl.ClusterSchema(db, cluster) }

// prepareSchema creates the schema when asked, then checks that every
// table is there.
func (s *ClickHouse) prepareSchema(ctx context.Context) error {
	db := s.opts.Database
	if s.opts.CreateSchema {
		noDB := *s.c
		noDB.database = "" // the first statement creates it; the others name it
		for _, stmt := range s.layout().Statements(db) {
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
	for _, t := range ddl.Tables {
		if !have[t.Name] {
			return fmt.Errorf("table %s.%s is missing: create the schema (strata clickhouse-schema prints it)", db, t.Name)
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
	for _, c := range ddl.Coverage {
		defaults[c.Name] = c.Def
	}
	var stmts []string
	for _, t := range ddl.Tables {
		tables := []string{l.Local(t.Name)}
		if l.Cluster != "" {
			tables = append(tables, t.Name)
		}
		for _, table := range tables {
			for _, col := range t.Columns {
				name := strings.Fields(col)[0]
				if have[[2]string{table, name}] {
					continue
				}
				stmt := fmt.Sprintf("ALTER TABLE %s.%s%s ADD COLUMN %s", db, table, l.On(), col)
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
