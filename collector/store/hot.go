package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// HotQuery selects the pages Hot ranks.
type HotQuery struct {
	AppID string
	RDD   *int32
	Limit uint32 // 0 = every page
}

// hotSQL groups an app's fault-sample records ($2 = FAULT, no counters) by
// page and ranks the pages by samples. A sample record holds the one page
// the fault got, resolved right after it; the page's PFN, node and flags are
// those of its latest sample.
const hotSQL = `
SELECT rec.executor_id, rec.pid, rec.rdd_id, rec.partition_id, rec.block_id, rec.hook_block_id,
	r.mem_mode, r.mem_location, r.vaddr,
	count(*)::UBIGINT AS samples,
	count(*) FILTER (WHERE rec.fault_kind = $4)::UBIGINT,
	count(*) FILTER (WHERE rec.fault_kind = $5)::UBIGINT,
	arg_max(r.pfn, rec.time_ns), arg_max(r.numa_node, rec.time_ns), arg_max(r.kpageflags, rec.time_ns),
	count(*) FILTER (WHERE rec.cpu_numa >= 0 AND r.numa_node >= 0 AND r.numa_node <> rec.cpu_numa)::UBIGINT
FROM runs r JOIN records rec USING (batch_id, rec_idx)
WHERE rec.app_id = $1 AND rec.access_kind = $2 AND NOT rec.has_faults
	AND ($3::INTEGER IS NULL OR rec.rdd_id = $3)
GROUP BY rec.executor_id, rec.pid, rec.rdd_id, rec.partition_id, rec.block_id, rec.hook_block_id,
	r.mem_mode, r.mem_location, r.vaddr
ORDER BY samples DESC, rec.pid, r.vaddr
LIMIT $6`

// Hot returns an app's pages ranked by sampled faults; see hotSQL.
func (s *DuckDB) Hot(ctx context.Context, q HotQuery) ([]*stratav1.HotPage, error) {
	if err := s.reader(q.AppID); err != nil {
		return nil, fmt.Errorf("hot: %w", err)
	}
	var rdd any
	if q.RDD != nil {
		rdd = *q.RDD
	}
	limit := int64(q.Limit)
	if limit == 0 {
		limit = 1 << 62
	}
	rows, err := s.db.QueryContext(ctx, hotSQL, q.AppID, int8(stratav1.AccessKind_ACCESS_KIND_FAULT), rdd,
		int8(stratav1.FaultKind_FAULT_KIND_READ), int8(stratav1.FaultKind_FAULT_KIND_WRITE), limit)
	if err != nil {
		return nil, fmt.Errorf("query hot %s: %w", q.AppID, err)
	}
	return collect(rows, func(sc func(...any) error) (*stratav1.HotPage, error) {
		p := &stratav1.HotPage{Block: &stratav1.SparkBlock{AppId: q.AppID}}
		var mode, loc int8
		err := sc(&p.Block.ExecutorId, &p.Pid, &p.Block.RddId, &p.Block.Partition, &p.Block.BlockId, &p.Block.HookBlockId,
			&mode, &loc, &p.Vaddr, &p.Samples, &p.Reads, &p.Writes, &p.Pfn, &p.NumaNode, &p.Kpageflags, &p.CrossNode)
		p.Block.Mode, p.Block.Location = stratav1.MemoryMode(mode), stratav1.MemoryLocation(loc)
		return p, err
	})
}
