package store

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/stratatrace/strata/collector/store/ddl"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// What a record's pages hold of its block (docs/objectgraph.md): the
// SparkBlock fields that say how Spark sizes and stores the block, and
// the record's Coverage. Both backends store them as the same columns of
// records, from one list; runs do not repeat them (a walked block's
// record has a run per extent), and Trace joins them from records.

// coverageColNames lists ddl.Coverage's names for a SELECT, each prefixed
// with p.
func coverageColNames(p string) string {
	names := make([]string, len(ddl.Coverage))
	for i, c := range ddl.Coverage {
		names[i] = p + c.Name
	}
	return strings.Join(names, ", ")
}

// duckCoverageMigrations adds the columns to DuckDB's records.
var duckCoverageMigrations = func() string {
	var b strings.Builder
	for _, c := range ddl.Coverage {
		fmt.Fprintf(&b, "ALTER TABLE records ADD COLUMN IF NOT EXISTS %s %s DEFAULT %s;\n", c.Name, c.Duck, c.Def)
	}
	return b.String()
}()

// coverageColumnIndex is what column_index stores for a block.
func coverageColumnIndex(b *stratav1.SparkBlock) int32 {
	if b.Column == nil || b.GetColumn() < 0 {
		return -1
	}
	return b.GetColumn()
}

// coverageValues are r's values of ddl.Coverage, in order, for DuckDB's
// appenders.
func coverageValues(r *stratav1.Record) []driver.Value {
	b, c := r.GetBlock(), r.GetCoverage()
	return []driver.Value{b.GetSparkBytes(), b.GetCachedBatch(), coverageColumnIndex(b), b.GetColumnName(),
		int8(c.GetResolution()), c.GetBytes(), c.GetObjects(), c.GetSharedObjects(), c.GetSharedBytes(), c.GetOpaqueObjects(),
		c.GetGcEpoch(), c.GetExtents(), c.GetDetail()}
}

// coverage writes r's values of ddl.Coverage to a ClickHouse row.
func (w *rowWriter) coverage(r *stratav1.Record) {
	b, c := r.GetBlock(), r.GetCoverage()
	w.u64(b.GetSparkBytes())
	w.boolean(b.GetCachedBatch())
	w.i32(coverageColumnIndex(b))
	w.str(b.GetColumnName())
	w.i8(int8(c.GetResolution()))
	w.u64(c.GetBytes())
	w.u64(c.GetObjects())
	w.u64(c.GetSharedObjects())
	w.u64(c.GetSharedBytes())
	w.u64(c.GetOpaqueObjects())
	w.u32(c.GetGcEpoch())
	w.u32(c.GetExtents())
	w.str(c.GetDetail())
}

// coverageRow holds one stored row's ddl.Coverage as read back.
type coverageRow struct {
	sparkBytes                                         uint64
	cachedBatch                                        bool
	column                                             int32
	columnName                                         string
	resolution                                         int8
	bytes, objects, sharedObjects, sharedBytes, opaque uint64
	gcEpoch, extents                                   uint32
	detail                                             string
}

// read reads the columns of a row, in order.
func (c *coverageRow) read(r row) {
	c.sparkBytes, c.cachedBatch, c.column, c.columnName = r.u64(), r.boolean(), r.i32(), r.str()
	c.resolution = r.i8()
	c.bytes, c.objects, c.sharedObjects, c.sharedBytes, c.opaque = r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
	c.gcEpoch, c.extents, c.detail = r.u32(), r.u32(), r.str()
}

// setBlock sets b's fields from the row.
func (c *coverageRow) setBlock(b *stratav1.SparkBlock) {
	b.SparkBytes, b.CachedBatch, b.ColumnName = c.sparkBytes, c.cachedBatch, c.columnName
	b.Column = nil
	if c.column >= 0 {
		col := c.column
		b.Column = &col
	}
}

// coverage is the row's Coverage, nil when the record carried none (a free,
// a fault, a record from an agent that predates coverage).
func (c *coverageRow) coverage() *stratav1.Coverage {
	if *c == (coverageRow{sparkBytes: c.sparkBytes, cachedBatch: c.cachedBatch, column: c.column, columnName: c.columnName}) {
		return nil
	}
	return &stratav1.Coverage{Resolution: stratav1.Resolution(c.resolution), Bytes: c.bytes, Objects: c.objects,
		SharedObjects: c.sharedObjects, SharedBytes: c.sharedBytes, OpaqueObjects: c.opaque, GcEpoch: c.gcEpoch,
		Extents: c.extents, Detail: c.detail}
}

// resolvedKinds are the resolutions whose records hold their block's data
// as resolved: the block's own buffers, or its walked objects. A record
// resolved REFERENCES (a walk pending, a STALE mark) or without coverage
// holds the array of references at most.
var resolvedKinds = []stratav1.Resolution{stratav1.Resolution_RESOLUTION_BUFFERS,
	stratav1.Resolution_RESOLUTION_WALKED, stratav1.Resolution_RESOLUTION_WALK_CUT}

// resolvedSQL is true of a record resolved as one of resolvedKinds.
var resolvedSQL = func() string {
	n := make([]string, len(resolvedKinds))
	for i, r := range resolvedKinds {
		n[i] = fmt.Sprint(int32(r))
	}
	return "resolution IN (" + strings.Join(n, ", ") + ")"
}()

// isResolved: r is one of resolvedKinds.
func isResolved(r stratav1.Resolution) bool { return slices.Contains(resolvedKinds, r) }
