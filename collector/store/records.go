package store

import (
	"context"
	"fmt"
	"strings"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// recordsSQL lists an app's records without their pages, oldest first; $2
// and $3 filter RDD and partition, $4 the block name, $5 the access kinds
// (NULL for every one). Older records without mode, location or the hook's
// fields read as unspecified, without coverage as none.
var recordsSQL = `
SELECT time_ns, access_kind, node_name, pid, tid, app_id, executor_id, rdd_id, partition_id, block_id,
	coalesce(mem_mode, 0), coalesce(mem_location, 0), hook_block_id,
	coalesce(block_kind, 0), coalesce(object_graph, false), coalesce(chunk, 0), coalesce(chunks, 0),
	coalesce(stage_id, -1), coalesce(stage_attempt, -1), coalesce(task_attempt, -1),
	vaddr, length, pages, coalesce(free_reason, 0), resolve_error, has_faults,
	fault_read, fault_write, fault_exec, fault_major, fault_unclassified, fault_kind, ` + coverageColNames("") + `
FROM records
WHERE app_id = $1 AND ($2::INTEGER IS NULL OR rdd_id = $2) AND ($3::INTEGER IS NULL OR partition_id = $3)
	AND ($4 = '' OR block_id = $4) AND ($5::TINYINT[] IS NULL OR list_contains($5::TINYINT[], access_kind))
ORDER BY time_ns, batch_id, rec_idx`

// Records lists an app's records without pages, in time order; see
// TraceReader.
func (s *DuckDB) Records(ctx context.Context, q RecordsQuery, fn func(*stratav1.RecordRow) error) error {
	if err := s.reader(q.AppID); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	var rdd, part, kinds any
	if q.RDD != nil {
		rdd = *q.RDD
	}
	if q.Partition != nil {
		part = *q.Partition
	}
	if len(q.Access) > 0 {
		// A list literal: the driver binds no Go slice to TINYINT[].
		parts := make([]string, len(q.Access))
		for i, k := range q.Access {
			parts[i] = fmt.Sprint(int8(k))
		}
		kinds = "[" + strings.Join(parts, ",") + "]"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the query when the limit is reached early
	rows, err := s.db.QueryContext(ctx, recordsSQL, q.AppID, rdd, part, q.BlockID, kinds)
	if err != nil {
		return fmt.Errorf("records %s: %w", q.AppID, err)
	}
	defer rows.Close()
	var sent uint32
	for rows.Next() {
		var (
			r                            stratav1.RecordRow
			b                            stratav1.SparkBlock
			access, mode, loc, kind, why int8
			faultKind                    int8
			hasFaults                    bool
			f                            stratav1.FaultCounts
			cov                          coverageRow
		)
		err := rows.Scan(append([]any{&r.TimeUnixNano, &access, &r.NodeName, &r.Pid, &r.Tid, &b.AppId, &b.ExecutorId, &b.RddId, &b.Partition,
			&b.BlockId, &mode, &loc, &b.HookBlockId, &kind, &b.ObjectGraph, &b.Chunk, &b.Chunks, &b.StageId, &b.StageAttempt,
			&b.TaskAttemptId, &r.Vaddr, &r.Length, &r.Pages, &why, &r.ResolveError, &hasFaults,
			&f.Read, &f.Write, &f.Exec, &f.Major, &f.Unclassified, &faultKind}, cov.dest()...)...)
		if err != nil {
			return fmt.Errorf("scan record row: %w", err)
		}
		r.Access, r.FreeReason, r.FaultKind = stratav1.AccessKind(access), stratav1.FreeReason(why), stratav1.FaultKind(faultKind)
		b.Mode, b.Location, b.Kind = stratav1.MemoryMode(mode), stratav1.MemoryLocation(loc), stratav1.BlockKind(kind)
		cov.setBlock(&b)
		r.Block, r.Coverage = &b, cov.coverage()
		if hasFaults {
			r.Faults = &f
		}
		if err := fn(&r); err != nil {
			return err
		}
		if sent++; q.Limit > 0 && sent >= q.Limit {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read records %s: %w", q.AppID, err)
	}
	return nil
}
