package store

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// DuckDB's row selection: its dialect and the reader of its answers. The
// questions (querier) are written once over these.

// duckDialect spells the questions' SQL for DuckDB.
type duckDialect struct{ spelling }

var duckSpelling = spelling{selPrefix: "SELECT ", recKey: "batch_id, rec_idx", order: "batch_id",
	argMaxFn: "arg_max", anyFn: "any_value", leftJoinSQL: "LEFT JOIN",
	uniqT: "count(DISTINCT (%s))", uniqIfT: "count(DISTINCT CASE WHEN %[2]s THEN (%[1]s) END)",
	int64T: "CAST(%s AS BIGINT)", limitT: " LIMIT %d OFFSET %d", bitT: "(%s & %d)", asT: " AS %s"}

// lit quotes s as standard SQL does, doubling its quotes; DuckDB reads a
// backslash as itself.
func (duckDialect) lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// visible: every stored row is read; a batch is written in one
// transaction.
func (duckDialect) visible(string) string { return "" }

// traceRuns joins runs to their records for the coverage columns, which
// DuckDB's runs do not repeat.
func (d duckDialect) traceRuns(app string, where func(string) string) string {
	return `(SELECT r.*, ` + coverageColNames("c.") + `
	FROM runs r JOIN records c ON c.batch_id = r.batch_id AND c.rec_idx = r.rec_idx
	WHERE r.app_id = ` + d.lit(app) + ` AND c.app_id = ` + d.lit(app) + where("r.") + `) AS tr`
}

func (d duckDialect) sampleRuns(app string) string {
	return `(SELECT r.*, c.node_name, c.cpu_numa, c.fault_kind
	FROM runs r JOIN records c ON c.batch_id = r.batch_id AND c.rec_idx = r.rec_idx
	WHERE r.app_id = ` + d.lit(app) + ` AND c.app_id = ` + d.lit(app) + ` AND c.access_kind = ` + itoa(accessFault) +
		` AND NOT c.has_faults) AS sr`
}

func (duckDialect) heldRecords() string {
	return "(SELECT r.*, b.boot_id FROM records r JOIN batches b USING (batch_id)) AS hr"
}

// hwCounters: DuckDB stores an unmeasured counter as NULL.
func (duckDialect) hwCounters() string {
	cols := []string{"cycles", "instructions", "dtlb_misses", "walk_load", "walk_store", "walk_rdd"}
	vals, mask := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		vals[i] = "coalesce(" + c + ", 0)"
		mask[i] = "CASE WHEN " + c + " IS NULL THEN 0 ELSE " + strconv.Itoa(1<<i) + " END"
	}
	return strings.Join(vals, ", ") + ", " + strings.Join(mask, " + ")
}

// machines: a machine that never sent NodeInfo still appears, with zeros
// and the page size its records carry.
func (d duckDialect) machines(app string) string {
	return `SELECT b.node_name, b.boot_id,
	coalesce(any_value(n.numa_nodes), 0)::UINTEGER,
	coalesce(nullif(any_value(n.page_size), 0), max(r.page_size), 0)::UINTEGER,
	coalesce(any_value(n.mem_total_bytes), 0)::UBIGINT
FROM records r JOIN batches b USING (batch_id)
	LEFT JOIN nodes n ON n.node_name = b.node_name AND n.boot_id = b.boot_id
WHERE r.app_id = ` + d.lit(app) + `
GROUP BY b.node_name, b.boot_id ORDER BY 1, 2`
}

// jobs: one row per job; the filter columns of jobs an older collector
// stored are filled at Open (backfillJobs).
func (duckDialect) jobs() string {
	return `(SELECT job_id, severity AS sev, finish_ms AS fin, coalesce(user_name, '') AS usr, coalesce(queue, '') AS que,
	coalesce(job_type, '') AS typ, app_id AS app, coalesce(score, 0) AS scr, result AS res FROM jobs) AS j`
}

// selectRows runs query on the readers' pool.
func (s *DuckDB) selectRows(ctx context.Context, query string, fn func(row) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the query when fn stops early
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	r := &duckRow{vals: make([]any, len(cols)), ptrs: make([]any, len(cols))}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(r.ptrs...); err != nil {
			return fmt.Errorf("scan row: %w", err)
		}
		r.i = 0
		if !fn(r) || r.err != nil {
			return r.err
		}
	}
	return rows.Err()
}

// duckRow reads one row of a DuckDB answer as the questions read
// ClickHouse's: column by column, each converted to the width asked. NULL
// reads as zero.
type duckRow struct {
	vals, ptrs []any
	i          int
	err        error
}

func (r *duckRow) Err() error { return r.err }

func (r *duckRow) next() any {
	if r.err != nil {
		return nil
	}
	if r.i >= len(r.vals) {
		r.err = fmt.Errorf("read row: column %d of %d", r.i+1, len(r.vals))
		return nil
	}
	v := r.vals[r.i]
	r.i++
	return v
}

func (r *duckRow) bad(v any) {
	if r.err == nil {
		r.err = fmt.Errorf("read row: column %d holds %T", r.i, v)
	}
}

func (r *duckRow) signed() int64 {
	switch v := r.next().(type) {
	case nil:
		return 0
	case int64:
		return v
	case int32:
		return int64(v)
	case int16:
		return int64(v)
	case int8:
		return int64(v)
	case uint64:
		return int64(v)
	case uint32:
		return int64(v)
	case uint16:
		return int64(v)
	case uint8:
		return int64(v)
	case bool:
		if v {
			return 1
		}
		return 0
	case *big.Int:
		return v.Int64()
	case float64:
		return int64(v)
	default:
		r.bad(v)
		return 0
	}
}

func (r *duckRow) unsigned() uint64 {
	switch v := r.next().(type) {
	case uint64:
		return v
	case *big.Int:
		return v.Uint64()
	default:
		r.i--
		return uint64(r.signed())
	}
}

func (r *duckRow) i8() int8      { return int8(r.signed()) }
func (r *duckRow) u8() uint8     { return uint8(r.unsigned()) }
func (r *duckRow) i32() int32    { return int32(r.signed()) }
func (r *duckRow) u32() uint32   { return uint32(r.unsigned()) }
func (r *duckRow) i64() int64    { return r.signed() }
func (r *duckRow) u64() uint64   { return r.unsigned() }
func (r *duckRow) boolean() bool { return r.signed() != 0 }
func (r *duckRow) f64() float64 {
	switch v := r.next().(type) {
	case nil:
		return 0
	case float64:
		return v
	case float32:
		return float64(v)
	default:
		r.i--
		return float64(r.signed())
	}
}
func (r *duckRow) str() string {
	switch v := r.next().(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	default:
		r.bad(v)
		return ""
	}
}

func (r *duckRow) blob() []byte {
	switch v := r.next().(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	default:
		r.bad(v)
		return nil
	}
}

// physStamp is the highest batch id: any batch stored since changes it.
func (s *DuckDB) physStamp(ctx context.Context, _ string) (int64, error) {
	var stamp int64
	if err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(batch_id), 0) FROM batches").Scan(&stamp); err != nil {
		return 0, fmt.Errorf("read last batch id: %w", err)
	}
	return stamp, nil
}
