package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratatrace/strata/collector/store/ddl"
)

// layout is the store's tables' layout, in the forms of its server.
func (s *ClickHouse) layout() ddl.Layout {
	l := ddl.Layout{}
	switch {
	case s.opts.Cluster == "":
	case s.opts.layout != nil:
		l = *s.opts.layout
	default:
		l = ddl.Layout{Cluster: s.opts.Cluster, OnCluster: true, Replicated: true}
	}
	l.Features = s.forms
	return l
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
// Distributed one), in the forms of this server, old rows reading each
// column's default (coverageCols' def, else the type's zero). With
// CreateSchema the store runs the statements itself; otherwise Open fails
// and names them, for the operator to run. ClickHouse 18.16 has no ADD
// COLUMN IF NOT EXISTS, so what is missing is read from system.columns.
//
// Columns that exist keep the forms they were created in: a database made
// on 18.16 and opened on a current server keeps its plain types and
// default compression, and the store reads and writes it as before (the
// wire format is the same). Open logs how many columns differ from this
// server's forms; it changes none.
func (s *ClickHouse) addColumns(ctx context.Context) error {
	db, l := s.opts.Database, s.layout()
	type column struct{ typ, codec string }
	have := map[[2]string]column{}
	q := "SELECT " + rowSelect + ", table, name, type"
	if l.Features.Codecs { // 18.16's system.columns has no compression_codec
		q += ", compression_codec"
	}
	err := s.c.query(ctx, q+" FROM system.columns WHERE database = "+quote(db),
		func(r *rowReader) {
			k, c := [2]string{r.str(), r.str()}, column{typ: r.str()}
			if l.Features.Codecs {
				c.codec = r.str()
			}
			have[k] = c
		})
	if err != nil {
		return fmt.Errorf("list columns: %w", err)
	}
	defaults := map[string]string{}
	for _, c := range ddl.Coverage {
		defaults[c.Name] = c.Def
	}
	var stmts, otherForms []string
	for _, t := range ddl.Tables {
		tables := []string{l.Local(t.Name)}
		if l.Cluster != "" {
			tables = append(tables, t.Name)
		}
		for _, table := range tables {
			for _, col := range t.ColumnsFor(l.Features) {
				f := strings.Fields(col)
				got, ok := have[[2]string{table, f[0]}]
				if !ok {
					stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s.%s%s ADD COLUMN %s", db, table, l.On(),
						ddl.AddColumn(col, defaults[f[0]])))
					continue
				}
				// A Distributed table shows no codecs of its own.
				if got.typ != f[1] || (strings.Contains(col, " CODEC(") && got.codec == "" && table == l.Local(t.Name)) {
					otherForms = append(otherForms, table+"."+f[0])
				}
			}
		}
	}
	if len(otherForms) > 0 {
		s.log.Info("tables keep the column forms they were created with; the store reads and writes them as they are",
			"database", db, "server_forms", l.Features.String(), "columns_in_other_forms", len(otherForms),
			"first", otherForms[0])
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
