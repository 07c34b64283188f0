package store

import (
	"context"
	"fmt"
)

// ClickHouse's row selection: its dialect (without window functions,
// which 18.16 lacks) and the runner of its queries. The questions
// (querier) are written once over these.

// visibleSQL is the condition every read of records, runs, workloads and
// process_memory carries: a row is read only if its write attempt (uid)
// committed — its batch_apps rows exist — and is the batch's canonical
// attempt, the committed one with the least uid. A batch written twice
// (replayed through another collector before its first write was
// acknowledged, or by two collectors racing) is so read once, and rows of
// an attempt that died half-way are never read.
func visibleSQL(app string) string {
	return "uid IN (SELECT min(uid) FROM batch_apps WHERE app_id = " + quote(app) + " GROUP BY node_name, boot_id, seq)"
}

// chDialect spells the questions' SQL for ClickHouse.
type chDialect struct{ spelling }

var chSpelling = spelling{selPrefix: "SELECT " + rowSelect + ", ", recKey: "uid, rec_idx", order: "node_name, boot_id, seq",
	argMaxFn: "argMax", anyFn: "any", leftJoinSQL: "ANY LEFT JOIN",
	allVisible: " AND uid IN (SELECT min(uid) FROM batch_apps GROUP BY node_name, boot_id, seq)",
	uniqT:      "uniqExact(%s)", uniqIfT: "uniqExactIf(%s, %s)", int64T: "toInt64(%s)", limitT: " LIMIT %[2]d, %[1]d",
	bitT: "bitAnd(%s, %d)", asT: " AS %s"}

func (chDialect) lit(s string) string       { return quote(s) }
func (chDialect) visible(app string) string { return " AND " + visibleSQL(app) }

// traceRuns: runs carry their record's columns but not its coverage,
// joined from records.
func (d chDialect) traceRuns(app string, where func(string) string) string {
	return `(SELECT * FROM runs WHERE app_id = ` + quote(app) + where("") + d.visible(app) + `) AS tr
ANY LEFT JOIN (
	SELECT uid, rec_idx, ` + coverageColNames("") + ` FROM records
	WHERE app_id = ` + quote(app) + where("") + d.visible(app) + `
) AS tc USING (uid, rec_idx)`
}

// sampleRuns: runs carry their record's fault columns.
func (d chDialect) sampleRuns(app string) string {
	return `(SELECT * FROM runs WHERE app_id = ` + quote(app) + ` AND access_kind = ` + itoa(accessFault) +
		` AND has_faults = 0` + d.visible(app) + `)`
}

func (chDialect) heldRecords() string { return "records" }

// hwCounters: an unmeasured counter is stored as 0 with its bit of hw_mask
// clear.
func (chDialect) hwCounters() string {
	return "cycles, instructions, dtlb_misses, walk_load, walk_store, walk_rdd, hw_mask"
}

// machines: each machine's latest known NodeInfo (a field sent as 0 keeps
// the value known before); a machine that never sent one appears with
// zeros and the page size its records carry.
func (d chDialect) machines(app string) string {
	return `SELECT ` + rowSelect + `, node_name, boot_id, numa, if(ps > 0, ps, rps), mem FROM (
	SELECT node_name, boot_id, max(page_size) AS rps FROM records
	WHERE app_id = ` + quote(app) + d.visible(app) + ` GROUP BY node_name, boot_id
) AS mr ANY LEFT JOIN (
	SELECT node_name, boot_id,
		argMaxIf(numa_nodes, updated_ns, numa_nodes > 0) AS numa,
		argMaxIf(page_size, updated_ns, page_size > 0) AS ps,
		argMaxIf(mem_total_bytes, updated_ns, mem_total_bytes > 0) AS mem
	FROM nodes GROUP BY node_name, boot_id
) AS mn USING (node_name, boot_id)
ORDER BY node_name, boot_id`
}

func (chDialect) jobs() string { return "(" + latestJobsSQL + " GROUP BY job_id)" }

// selectRows runs query, whose first column is rowSelect.
func (s *ClickHouse) selectRows(ctx context.Context, query string, fn func(row) bool) error {
	return s.c.queryStop(ctx, query, func(r *rowReader) bool { return fn(r) })
}

// physStamp changes with every write attempt of a batch of app that
// commits, through any collector: the count and the sum of the uids of
// its commit rows.
func (s *ClickHouse) physStamp(ctx context.Context, app string) (int64, error) {
	var n, sum uint64
	err := s.c.query(ctx, `SELECT `+rowSelect+`, count(), sum(uid) FROM batch_apps WHERE app_id = `+quote(app),
		func(r *rowReader) { n, sum = r.u64(), r.u64() })
	if err != nil {
		return 0, fmt.Errorf("read batches of %s: %w", app, err)
	}
	return int64(n ^ sum), nil
}
