package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Records: every matching record without its pages, with its coverage,
// oldest first (records of one time in the order their batches were
// stored).

// recordSelect are the columns Records reads, in readRecordRow's order.
var recordSelect = `time_ns, access_kind, node_name, pid, tid, app_id, executor_id, rdd_id, partition_id, block_id,
	mem_mode, mem_location, hook_block_id, block_kind, object_graph, chunk, chunks, stage_id, stage_attempt, task_attempt,
	vaddr, length, pages, free_reason, resolve_error, has_faults,
	fault_read, fault_write, fault_exec, fault_major, fault_unclassified, fault_kind, ` + coverageColNames("")

// Records calls fn for each matching record; see TraceReader.
func (q *querier) Records(ctx context.Context, rq answer.RecordsQuery, fn func(*stratav1.RecordRow) error) error {
	if err := q.check(rq.AppID); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	d := q.src
	where := ""
	if rq.RDD != nil {
		where += " AND rdd_id = " + itoa(*rq.RDD)
	}
	if rq.Partition != nil {
		where += " AND partition_id = " + itoa(*rq.Partition)
	}
	if rq.BlockID != "" {
		where += " AND block_id = " + d.lit(rq.BlockID)
	}
	if len(rq.Access) > 0 {
		kinds := make([]string, len(rq.Access))
		for i, k := range rq.Access {
			kinds[i] = itoa(int8(k))
		}
		where += " AND access_kind IN (" + strings.Join(kinds, ", ") + ")"
	}
	sel := d.sel(recordSelect) + ` FROM records WHERE app_id = ` + d.lit(rq.AppID) + where + d.visible(rq.AppID) +
		` ORDER BY time_ns, ` + d.batchOrder() + `, rec_idx`
	if rq.Limit > 0 {
		sel += " LIMIT " + strconv.FormatUint(uint64(rq.Limit), 10)
	}
	var ferr error
	err := q.src.selectRows(ctx, sel, func(r row) bool {
		rec := readRecordRow(r)
		if r.Err() != nil {
			return false
		}
		ferr = fn(rec)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("records %s: %w", rq.AppID, err)
	}
	return nil
}

// readRecordRow reads recordSelect.
func readRecordRow(r row) *stratav1.RecordRow {
	rec := &stratav1.RecordRow{}
	b := &stratav1.SparkBlock{}
	rec.TimeUnixNano, rec.Access, rec.NodeName, rec.Pid, rec.Tid = r.i64(), stratav1.AccessKind(r.i8()), r.str(), r.u32(), r.u32()
	b.AppId, b.ExecutorId, b.RddId, b.Partition, b.BlockId = r.str(), r.str(), r.i32(), r.i32(), r.str()
	b.Mode, b.Location, b.HookBlockId = stratav1.MemoryMode(r.i8()), stratav1.MemoryLocation(r.i8()), r.u64()
	b.Kind, b.ObjectGraph, b.Chunk, b.Chunks = stratav1.BlockKind(r.i8()), r.boolean(), r.u32(), r.u32()
	b.StageId, b.StageAttempt, b.TaskAttemptId = r.i32(), r.i32(), r.i64()
	rec.Vaddr, rec.Length, rec.Pages = r.u64(), r.u64(), r.u64()
	rec.FreeReason, rec.ResolveError = stratav1.FreeReason(r.i8()), r.str()
	hasFaults := r.boolean()
	f := &stratav1.FaultCounts{Read: r.u64(), Write: r.u64(), Exec: r.u64(), Major: r.u64(), Unclassified: r.u64()}
	rec.FaultKind = stratav1.FaultKind(r.i8())
	var cov coverageRow
	cov.read(r)
	cov.setBlock(b)
	rec.Block, rec.Coverage = b, cov.coverage()
	if hasFaults {
		rec.Faults = f
	}
	return rec
}
