package ddl

import (
	"strconv"
	"strings"
)

// Features are the column forms a ClickHouse server accepts beyond those of
// 18.16, the oldest server the store supports. The zero value is 18.16's:
// plain types, the server's default compression. FeaturesOf derives them
// from the server's version; the schema's statements (Layout.Features)
// use each one only where the server has it.
type Features struct {
	// LowCardinality: LowCardinality(String) columns without an
	// experimental setting (19.3 on).
	LowCardinality bool
	// Codecs: per-column CODEC(...) with the Delta and ZSTD codecs (19.1 on).
	Codecs bool
	// DoubleDelta: the DoubleDelta codec (19.11 on).
	DoubleDelta bool
}

// featureSince lists the release that brought each feature, oldest first.
var featureSince = []struct {
	major, minor int
	set          func(*Features)
}{
	{19, 1, func(f *Features) { f.Codecs = true }},
	{19, 3, func(f *Features) { f.LowCardinality = true }},
	{19, 11, func(f *Features) { f.DoubleDelta = true }},
}

// FeaturesOf returns the features of a server whose version() answered
// version ("18.16.1", "26.9.1.1", "23.8.2.7-lts"). ok is false, and the
// features 18.16's, when version does not start with major.minor.
func FeaturesOf(version string) (f Features, ok bool) {
	major, minor, ok := majorMinor(version)
	if !ok {
		return Features{}, false
	}
	for _, s := range featureSince {
		if major > s.major || (major == s.major && minor >= s.minor) {
			s.set(&f)
		}
	}
	return f, true
}

func majorMinor(version string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimSpace(version), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}

// String names the forms, for logs: "18.16" for the zero value, else the
// features present.
func (f Features) String() string {
	var on []string
	if f.LowCardinality {
		on = append(on, "LowCardinality")
	}
	if f.Codecs {
		on = append(on, "codecs")
	}
	if f.DoubleDelta {
		on = append(on, "DoubleDelta")
	}
	if len(on) == 0 {
		return "18.16"
	}
	return strings.Join(on, "+")
}

// lowCardinality are the String columns, in every table that has them,
// whose values repeat across many rows: an application, a machine and its
// boot, an executor, a process's PMU status, a heat sample's source, a
// job's user, queue and type, a claim's owner, a cached batch's column
// name, a record's resolve error (mostly empty). block_id is not one: an
// application has a block per cached partition.
var lowCardinality = map[string]bool{
	"app_id": true, "node_name": true, "boot_id": true, "executor_id": true,
	"pmu_status": true, "source": true, "user_name": true, "queue": true, "job_type": true,
	"owner": true, "column_name": true, "resolve_error": true,
}

// codecs are the codecs of columns of records and runs, the tables that
// hold most of a store's bytes, by column name. Rows are sorted by
// application, RDD, partition and time, so a block's records and runs sit
// together: their times climb in small steps and their addresses climb by
// the run before. The first codec needs DoubleDelta, the second only the
// codecs.
var codecs = map[string][2]string{
	"time_ns": {"CODEC(DoubleDelta, ZSTD)", "CODEC(Delta, ZSTD)"},
	"vaddr":   {"CODEC(Delta, ZSTD)", "CODEC(Delta, ZSTD)"},
}

// codecTables are the tables whose columns take codecs.
var codecTables = map[string]bool{"records": true, "runs": true}

// ColumnsFor returns t's column definitions in the forms f allows, in
// Columns' order: each "name Type[ DEFAULT expr][ CODEC(...)]".
func (t Table) ColumnsFor(f Features) []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = t.columnFor(c, f)
	}
	return out
}

func (t Table) columnFor(def string, f Features) string {
	name, rest, _ := strings.Cut(def, " ")
	typ, tail, _ := strings.Cut(rest, " ")
	if f.LowCardinality && typ == "String" && lowCardinality[name] {
		typ = "LowCardinality(String)"
	}
	out := name + " " + typ
	if tail != "" {
		out += " " + tail
	}
	if c, ok := codecs[name]; ok && f.Codecs && codecTables[t.Name] {
		if f.DoubleDelta {
			out += " " + c[0]
		} else {
			out += " " + c[1]
		}
	}
	return out
}

// AddColumn is the definition an ALTER TABLE … ADD COLUMN of def (one of
// ColumnsFor's) gives: with def's default, else with dflt ("" for none),
// which must precede any CODEC.
func AddColumn(def, dflt string) string {
	if dflt == "" || strings.Contains(def, " DEFAULT ") {
		return def
	}
	if head, codec, ok := strings.Cut(def, " CODEC("); ok {
		return head + " DEFAULT " + dflt + " CODEC(" + codec
	}
	return def + " DEFAULT " + dflt
}
