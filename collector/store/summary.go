package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// CachedPages describes the cached (storage-memory) pages of one RDD on one
// NUMA node, each block buffer as last resolved while it was live (its
// latest registration's last record with pages before any free, as RDDs
// takes them), without de-duplicating overlapping blocks: the input of the
// cross-layer job heuristics. A finished application's blocks are all
// freed, so "as last resolved" is what its RDDs held, not nothing.
type CachedPages struct {
	RDDID   int32
	Node    int32  // -1: not present, or PFN hidden
	Pages   uint64 // every base page of the blocks' ranges on this node, holes (UNMAPPED) excluded
	Present uint64
	Swapped uint64
	THP     uint64
}

var cachedSQL = withStates(lastLiveCTE(cachedScope) + `
SELECT r.rdd_id,
	CASE WHEN r.state & {PRESENT} = 0 OR r.state & {PFN_HIDDEN} <> 0 THEN -1 ELSE r.numa_node END AS node,
	sum(CASE WHEN r.state & {UNMAPPED} = 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & {PRESENT} <> 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & {SWAPPED} <> 0 THEN r.pages ELSE 0 END)::UBIGINT,
	sum(CASE WHEN r.state & {THP} <> 0 THEN r.pages ELSE 0 END)::UBIGINT
FROM last l JOIN runs r USING (batch_id, rec_idx)
GROUP BY 1, 2 ORDER BY 1, 2`)

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
var faultNodesSQL = withStates(`
SELECT coalesce(sum(CASE WHEN r.state & {CROSS_NODE} = 0 AND r.numa_node >= 0 AND r.numa_node = rec.cpu_numa
		THEN r.pages ELSE 0 END), 0)::UBIGINT,
	coalesce(sum(CASE WHEN r.state & {CROSS_NODE} <> 0 OR (r.numa_node >= 0 AND rec.cpu_numa >= 0 AND r.numa_node <> rec.cpu_numa)
		THEN r.pages ELSE 0 END), 0)::UBIGINT
FROM runs r JOIN records rec USING (batch_id, rec_idx)
WHERE rec.app_id = $1 AND rec.access_kind = $2 AND NOT rec.has_faults
	AND r.rdd_id >= 0 AND r.mem_mode <> $3 AND r.state & {PRESENT} <> 0 AND r.state & {PFN_HIDDEN} = 0`)

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

// Machine is one agent's machine (node_name, boot_id) holding records of
// an application, as its batches' NodeInfo describe it. A zero field is
// unknown: the agent did not send it (an older agent, or sysfs unreadable).
type Machine struct {
	NodeName      string
	BootID        string
	NUMANodes     uint32 // NUMA nodes with memory
	PageSize      uint32 // base page size in bytes: NodeInfo's, else the records'
	MemTotalBytes uint64
}

// machinesSQL lists the machines whose batches hold records of app $1,
// with their stored NodeInfo; a machine that never sent one still appears,
// with zeros and the page size its records carry.
const machinesSQL = `
SELECT b.node_name, b.boot_id,
	coalesce(any_value(n.numa_nodes), 0)::UINTEGER,
	coalesce(nullif(any_value(n.page_size), 0), max(r.page_size), 0)::UINTEGER,
	coalesce(any_value(n.mem_total_bytes), 0)::UBIGINT
FROM records r JOIN batches b USING (batch_id)
	LEFT JOIN nodes n ON n.node_name = b.node_name AND n.boot_id = b.boot_id
WHERE r.app_id = $1
GROUP BY b.node_name, b.boot_id ORDER BY 1, 2`

// Machines returns the machines that hold an app's records; see Machine.
func (s *DuckDB) Machines(ctx context.Context, appID string) ([]Machine, error) {
	if err := s.reader(appID); err != nil {
		return nil, fmt.Errorf("machines: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, machinesSQL, appID)
	if err != nil {
		return nil, fmt.Errorf("query machines %s: %w", appID, err)
	}
	return collect(rows, func(sc func(...any) error) (Machine, error) {
		var m Machine
		return m, sc(&m.NodeName, &m.BootID, &m.NUMANodes, &m.PageSize, &m.MemTotalBytes)
	})
}
