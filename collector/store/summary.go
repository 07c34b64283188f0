package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// CachedPages describes the cached (storage-memory) pages of one RDD on one
// NUMA node, from each block's latest lifecycle record, as Numa counts them
// but without de-duplicating overlapping blocks: the input of the
// cross-layer job heuristics.
type CachedPages struct {
	RDDID   int32
	Node    int32  // -1: not present, or PFN hidden
	Pages   uint64 // every base page of the blocks' ranges on this node, holes (UNMAPPED) excluded
	Present uint64
	Swapped uint64
	THP     uint64
}

const cachedSQL = latestLifecycleCTE + `
SELECT r.rdd_id,
	CASE WHEN r.state & 1 = 0 OR r.state & 128 <> 0 THEN -1 ELSE r.numa_node END AS node,
	sum(CASE WHEN r.state & 64 = 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & 1 <> 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & 2 <> 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & 32 <> 0 THEN r.pages ELSE 0 END)::UBIGINT
FROM runs r JOIN latest USING (batch_id, rec_idx)
WHERE r.app_id = $1 AND r.rdd_id >= 0 AND r.mem_mode <> $7
GROUP BY 1, 2 ORDER BY 1, 2`

// Cached returns an app's cached pages per RDD per node; see CachedPages.
func (s *DuckDB) Cached(ctx context.Context, appID string) ([]CachedPages, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("cached pages: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, cachedSQL, appID, accessAlloc, accessRead, accessWrite, accessFree, accessMove,
		int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION))
	if err != nil {
		return nil, fmt.Errorf("query cached pages %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (CachedPages, error) {
		var c CachedPages
		return c, sc(&c.RDDID, &c.Node, &c.Pages, &c.Present, &c.Swapped, &c.THP)
	})
}

// faultNodesSQL counts the sampled faults ($2 = FAULT records without
// counters) in an app's cached blocks by where the faulted page was: on the
// faulting CPU's node (local), or elsewhere - by node numbers, or by the
// agent's CROSS_NODE mark (remote). Each sample record holds the one page
// it faulted.
const faultNodesSQL = `
SELECT coalesce(sum(CASE WHEN r.state & 1024 = 0 AND r.numa_node >= 0 AND r.numa_node = rec.cpu_numa
		THEN r.pages ELSE 0 END), 0)::UBIGINT,
	coalesce(sum(CASE WHEN r.state & 1024 <> 0 OR (r.numa_node >= 0 AND rec.cpu_numa >= 0 AND r.numa_node <> rec.cpu_numa)
		THEN r.pages ELSE 0 END), 0)::UBIGINT
FROM runs r JOIN records rec USING (batch_id, rec_idx)
WHERE rec.app_id = $1 AND rec.access_kind = $2 AND NOT rec.has_faults
	AND r.rdd_id >= 0 AND r.mem_mode <> $3 AND r.state & 1 <> 0 AND r.state & 128 = 0`

// FaultNodes returns how many sampled faults in an app's cached blocks hit
// a page on the faulting CPU's own node (local) or on another (remote).
func (s *DuckDB) FaultNodes(ctx context.Context, appID string) (local, remote uint64, err error) {
	if err := s.reader(appID); err != nil {
		return 0, 0, fmt.Errorf("fault nodes: %w", err)
	}
	row := s.db.QueryRowContext(ctx, faultNodesSQL, appID, int8(stratav1.AccessKind_ACCESS_KIND_FAULT),
		int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION))
	if err := row.Scan(&local, &remote); err != nil {
		return 0, 0, fmt.Errorf("query fault nodes %s: %w", appID, err)
	}
	return local, remote, nil
}
