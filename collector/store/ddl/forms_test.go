package ddl

import (
	"strings"
	"testing"
)

// Each feature from the release the store takes it from (docs/storage.md
// says why): LowCardinality 19.3, codecs 19.13.
func TestFeaturesOf(t *testing.T) {
	all := Features{LowCardinality: true, Codecs: true}
	for _, c := range []struct {
		version string
		want    Features
		ok      bool
	}{
		{"18.16.1", Features{}, true},
		{"18.14.19", Features{}, true},
		{"19.1.6", Features{}, true},
		{"19.3.3", Features{LowCardinality: true}, true},
		{"19.11.3.11", Features{LowCardinality: true}, true},
		{"19.13.2.19", all, true},
		{"20.3.8.53", all, true},
		{"23.8.2.7-lts", all, true},
		{"26.9.1.1", all, true},
		{" 26.9 ", all, true},
		{"", Features{}, false},
		{"latest", Features{}, false},
		{"26", Features{}, false},
		{"x.9.1", Features{}, false},
	} {
		got, ok := FeaturesOf(c.version)
		if got != c.want || ok != c.ok {
			t.Errorf("FeaturesOf(%q) = %+v, %v; want %+v, %v", c.version, got, ok, c.want, c.ok)
		}
	}
}

// 18.16's forms are the plain columns; a current server's make the
// repeated strings LowCardinality and give the sorted time and address
// columns of records and runs their codecs, elsewhere nothing.
func TestColumnsFor(t *testing.T) {
	for _, tb := range Tables {
		if got := strings.Join(tb.ColumnsFor(Features{}), ", "); got != strings.Join(tb.Columns, ", ") {
			t.Errorf("%s in 18.16's forms: %s", tb.Name, got)
		}
	}
	cur, _ := FeaturesOf("26.9.1.1")
	col := func(table, name string, f Features) string {
		for _, c := range TableByName(table).ColumnsFor(f) {
			if strings.Fields(c)[0] == name {
				return c
			}
		}
		t.Fatalf("%s has no column %s", table, name)
		return ""
	}
	for _, c := range []struct {
		table, name string
		f           Features
		want        string
	}{
		{"runs", "block_id", cur, "block_id String CODEC(ZSTD(3))"},
		{"runs", "pfn_deltas", Features{LowCardinality: true}, "pfn_deltas String"},
		{"runs", "time_ns", cur, "time_ns Int64 CODEC(DoubleDelta, ZSTD(3))"},
		{"runs", "vaddr", cur, "vaddr UInt64 CODEC(Delta, ZSTD(3))"},
		{"runs", "pfn", cur, "pfn UInt64 CODEC(ZSTD(3))"},
		{"runs", "app_id", cur, "app_id LowCardinality(String) CODEC(ZSTD(3))"},
		{"records", "rec_idx", Features{Codecs: true}, "rec_idx UInt32 CODEC(Delta, ZSTD(3))"},
		{"records", "column_name", cur, "column_name LowCardinality(String) CODEC(ZSTD(3))"},
		{"workloads", "executor_id", cur, "executor_id LowCardinality(String)"},
		{"heat", "time_ns", cur, "time_ns Int64"},
		{"job_claims", "owner", cur, "owner LowCardinality(String)"},
		{"job_claims", "claimed", cur, "claimed DateTime DEFAULT now()"},
		{"runs", "app_id", Features{Codecs: true}, "app_id String CODEC(ZSTD(3))"},
		{"workloads", "app_id", Features{Codecs: true}, "app_id String"},
	} {
		if got := col(c.table, c.name, c.f); got != c.want {
			t.Errorf("%s.%s with %v: %q, want %q", c.table, c.name, c.f, got, c.want)
		}
	}
	for _, c := range []struct{ def, dflt, want string }{
		{"cov_bytes UInt64", "0", "cov_bytes UInt64 DEFAULT 0"},
		{"column_name LowCardinality(String) CODEC(ZSTD(3))", "''", "column_name LowCardinality(String) DEFAULT '' CODEC(ZSTD(3))"},
		{"time_ns Int64 CODEC(Delta, ZSTD(3))", "0", "time_ns Int64 DEFAULT 0 CODEC(Delta, ZSTD(3))"},
		{"claimed DateTime DEFAULT now()", "0", "claimed DateTime DEFAULT now()"},
		{"vaddr UInt64", "", "vaddr UInt64"},
	} {
		if got := AddColumn(c.def, c.dflt); got != c.want {
			t.Errorf("AddColumn(%q, %q) = %q, want %q", c.def, c.dflt, got, c.want)
		}
	}
	// The DDL of a layout carries its forms.
	stmts := strings.Join(Layout{Features: cur}.Statements("db"), "\n")
	if !strings.Contains(stmts, "\tnode_name LowCardinality(String),\n") || !strings.Contains(stmts, "\tnode_name LowCardinality(String) CODEC(ZSTD(3)),\n") ||
		strings.Count(stmts, "CODEC(DoubleDelta, ZSTD(3))") != 2 {
		t.Errorf("current forms' DDL:\n%s", stmts)
	}
	if s := strings.Join(SingleSchema("db"), "\n"); strings.Contains(s, "LowCardinality") || strings.Contains(s, "CODEC") {
		t.Errorf("SingleSchema is not in 18.16's forms:\n%s", s)
	}
}
