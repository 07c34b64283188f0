package store

import (
	"context"
	"fmt"
)

// The cross-layer summary of one app (SummaryReader): cached pages per RDD
// and node, each block buffer as last resolved while it was live (as RDDs
// takes them; a finished app's blocks are all freed), without
// de-duplicating overlaps; sampled faults split local and remote (hot.go);
// and the machines holding the app's records with their NodeInfo.

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

// lastPages sums the runs of each cached block buffer as last resolved
// while live (lastRecsWhere) per RDD and node (nodeExpr): the pages Cached
// counts and RDDs splits by node.
type lastPages struct {
	CachedPages
	thpPresent uint64 // present pages of a THP (RDDs' thp; Cached counts THP in any state)
}

func (q *querier) lastPages(ctx context.Context, app string) ([]lastPages, error) {
	d := q.src
	present := stateBit(d, pgPresent) + ` != 0`
	thp := stateBit(d, pgTHP) + ` != 0`
	sel := d.sel(`rdd_id, node,
	sum(CASE WHEN `+stateBit(d, pgUnmapped)+` = 0 THEN pages ELSE 0 END), sum(CASE WHEN `+present+` THEN pages ELSE 0 END),
	sum(CASE WHEN `+stateBit(d, pgSwapped)+` != 0 THEN pages ELSE 0 END), sum(CASE WHEN `+thp+` THEN pages ELSE 0 END),
	sum(CASE WHEN `+present+` AND `+thp+` THEN pages ELSE 0 END)`) + ` FROM (` +
		runsOf(d, app, "rdd_id, "+nodeExpr(d)+" AS node, state, pages", "", lastRecsWhere(d, cachedScope(d, app))) + `)
GROUP BY rdd_id, node ORDER BY rdd_id, node`
	var out []lastPages
	err := q.each(ctx, sel, func(r row) {
		var p lastPages
		p.RDDID, p.Node, p.Pages, p.Present, p.Swapped, p.THP, p.thpPresent = r.i32(), r.i32(), r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
		out = append(out, p)
	})
	if err != nil {
		return nil, fmt.Errorf("query last pages %s: %w", app, err)
	}
	return out, nil
}

// Cached returns an app's cached pages per RDD per node; see CachedPages.
func (q *querier) Cached(ctx context.Context, appID string) ([]CachedPages, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("cached pages: %w", err)
	}
	rows, err := q.lastPages(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]CachedPages, len(rows))
	for i, r := range rows {
		out[i] = r.CachedPages
	}
	return out, nil
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

// Machines returns the machines that hold an app's records, by name and
// boot; see Machine.
func (q *querier) Machines(ctx context.Context, appID string) ([]Machine, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("machines: %w", err)
	}
	var out []Machine
	err := q.each(ctx, q.src.machines(appID), func(r row) {
		out = append(out, Machine{NodeName: r.str(), BootID: r.str(), NUMANodes: r.u32(), PageSize: r.u32(), MemTotalBytes: r.u64()})
	})
	if err != nil {
		return nil, fmt.Errorf("query machines %s: %w", appID, err)
	}
	return out, nil
}
