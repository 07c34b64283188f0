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
	// Codecs: per-column CODEC(...) with Delta, DoubleDelta and ZSTD. They
	// arrived in 19.1 (DoubleDelta in 19.11); the store uses them from
	// 19.13, released after the fixes of Delta's memory corruption and of
	// DoubleDelta's encoding of large Int64 steps were merged.
	Codecs bool
}

// featureSince lists the release from which the store uses each feature,
// oldest first.
var featureSince = []struct {
	major, minor int
	set          func(*Features)
}{
	{19, 3, func(f *Features) { f.LowCardinality = true }},
	{19, 13, func(f *Features) { f.Codecs = true }},
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

// deltaCodecs are the codecs of the columns of records and runs whose
// values climb: rows are sorted by application, RDD, partition and time,
// so a block's records and runs sit together, their times climb in small
// steps, their addresses by the run before and rec_idx by one. Every
// other column of the two tables, which hold most of a store's bytes, is
// CODEC(ZSTD(3)): level 3, since level 1 compresses the tables' repeated
// values worse than the default LZ4 (docs/storage.md).
var deltaCodecs = map[string]string{
	"time_ns": "CODEC(DoubleDelta, ZSTD(3))",
	"vaddr":   "CODEC(Delta, ZSTD(3))",
	"rec_idx": "CODEC(Delta, ZSTD(3))",
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
	if f.Codecs && codecTables[t.Name] {
		if c, ok := deltaCodecs[name]; ok {
			out += " " + c
		} else {
			out += " CODEC(ZSTD(3))"
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
