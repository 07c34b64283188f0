package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The physical memory map (PhysMap) is drawn from a PFN index of one app on
// one machine: the present pages of its live blocks (each buffer's latest
// records that hold, as Numa takes them) cut into segments of consecutive
// PFNs that share block, NUMA node and THP backing, sorted by PFN. A
// stored run is one segment when its PFNs are consecutive; a run with PFN
// steps is walked page by page and merged back into segments. A zoom
// window is then answered by a binary search and a walk over the segments
// inside it, in time proportional to those segments plus the buckets,
// whatever the size of the executor.
//
// Both backends build it (physMap, pfnIndexBuilder) from the runs their
// physMapSource returns. The index is kept for the latest few (app,
// machine) pairs and rebuilt when a batch may have been stored since: the
// backend's stamp changed (DuckDB: the highest batch id; ClickHouse: the
// count and uids of the app's commit rows). An index over
// maxCachedSegments segments (24 bytes each) is not kept: it is rebuilt for
// every window.

const (
	physMapCacheEntries = 4
	maxCachedSegments   = 4 << 20
	defaultMapBuckets   = 1024
	maxMapBuckets       = 4096
)

// segment is a range of consecutive PFNs of one block.
type segment struct {
	pfn   uint64
	n     uint32
	block uint32 // index into pfnIndex.blocks
	node  int16
	thp   bool
}

// pfnIndex is the map's data for one (app, machine).
type pfnIndex struct {
	segs    []segment // by pfn
	maxSeg  uint64    // longest segment, for the window search
	blocks  []BlockRef
	rdds    []RDDPages // by RDD id
	nodes   []NodeSpan // by node
	maxPFN  uint64     // highest PFN + 1
	pages   uint64
	runs    uint64
	hidden  uint64 // present pages whose PFN the agent could not see
	stamp   int64
	touched uint64
}

// physMapCache keeps the latest pfnIndexes.
type physMapCache struct {
	mu      sync.Mutex
	entries map[[2]string]*pfnIndex
	clock   uint64
}

func (c *physMapCache) get(key [2]string, stamp int64) *pfnIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.entries[key]
	if idx == nil || idx.stamp != stamp {
		return nil
	}
	c.clock++
	idx.touched = c.clock
	return idx
}

func (c *physMapCache) put(key [2]string, idx *pfnIndex) {
	if len(idx.segs) > maxCachedSegments {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[2]string]*pfnIndex{}
	}
	c.clock++
	idx.touched = c.clock
	c.entries[key] = idx
	for len(c.entries) > physMapCacheEntries {
		var oldest [2]string
		first := true
		for k, e := range c.entries {
			if first || e.touched < c.entries[oldest].touched {
				oldest, first = k, false
			}
		}
		delete(c.entries, oldest)
	}
}

// physRunsSQL lists the runs of app $1's live blocks on machine $7 that
// hold pages: present or swapped.
var physRunsSQL = withStates(latestLifecycleCTE + `
SELECT r.rdd_id, r.executor_id, r.block_id, r.state, r.pfn, r.pages, r.pfn_deltas, r.numa_node
FROM runs r JOIN latest USING (batch_id, rec_idx) JOIN batches b USING (batch_id)
WHERE r.app_id = $1 AND b.node_name = $7 AND r.state & ({PRESENT} | {SWAPPED}) <> 0
	AND r.pages BETWEEN 1 AND {MAX_RUN_PAGES}`)

// hotSamplesSQL counts app $1's sampled page faults on machine $2 per PFN
// in [$4, $5) ($3 = FAULT records without counters: one page each).
var hotSamplesSQL = withStates(`
SELECT r.pfn, count(*)::UBIGINT
FROM runs r JOIN records rec USING (batch_id, rec_idx)
WHERE rec.app_id = $1 AND rec.node_name = $2 AND rec.access_kind = $3 AND NOT rec.has_faults
	AND r.state & {PRESENT} <> 0 AND r.state & {PFN_HIDDEN} = 0 AND r.pfn >= $4 AND r.pfn < $5
GROUP BY r.pfn`)

// physMapSource is what a backend gives physMap: its machines, a stamp
// that changes whenever a batch of the app may have been stored, the runs
// of the app's live blocks on one machine, and the sampled faults per PFN.
type physMapSource interface {
	Machines(ctx context.Context, appID string) ([]Machine, error)
	physStamp(ctx context.Context, app string) (int64, error)
	// physRuns calls fn with each run of app's live blocks on machine
	// that holds pages (present or swapped), as physRunsSQL selects them.
	physRuns(ctx context.Context, app, machine string, fn func(physRun)) error
	hotSamples(ctx context.Context, app, machine string, from, to uint64) (map[uint64]uint64, error)
}

// physRun is one stored run of a live block.
type physRun struct {
	ref          BlockRef
	state, pages uint32
	pfn          uint64
	deltas       []byte
	node         int32
}

// PhysMap returns the app's physical memory map on one machine; see
// PhysMapQuery and the comment at the top of this file.
func (s *DuckDB) PhysMap(ctx context.Context, q PhysMapQuery) (*PhysMap, error) {
	if err := s.reader(q.AppID); err != nil {
		return nil, fmt.Errorf("physical map: %w", err)
	}
	return physMap(ctx, s, &s.physMaps, s.log, q)
}

// physMap answers q from src, with the PFN index from cache when src's
// stamp has not changed since it was built.
func physMap(ctx context.Context, src physMapSource, cache *physMapCache, log *slog.Logger, q PhysMapQuery) (*PhysMap, error) {
	if q.Buckets > maxMapBuckets {
		return nil, fmt.Errorf("physical map: %w: %d buckets (at most %d)", ErrInvalidQuery, q.Buckets, maxMapBuckets)
	}
	machines, err := src.Machines(ctx, q.AppID)
	if err != nil {
		return nil, err
	}
	if len(machines) == 0 {
		return nil, fmt.Errorf("physical map %s: %w: no records", q.AppID, ErrNotFound)
	}
	m := machines[0]
	names := make([]string, 0, len(machines))
	found := q.Machine == ""
	for _, mm := range machines {
		names = append(names, mm.NodeName)
		if mm.NodeName == q.Machine && !found {
			m, found = mm, true
		}
	}
	if !found {
		return nil, fmt.Errorf("physical map %s: %w: no records from machine %q", q.AppID, ErrInvalidQuery, q.Machine)
	}
	names = slices.Compact(names) // a machine rebooted is listed once per boot
	stamp, err := src.physStamp(ctx, q.AppID)
	if err != nil {
		return nil, fmt.Errorf("physical map %s: %w", q.AppID, err)
	}
	key := [2]string{q.AppID, m.NodeName}
	idx := cache.get(key, stamp)
	if idx == nil {
		b := newPFNIndexBuilder(log, q.AppID)
		if err := src.physRuns(ctx, q.AppID, m.NodeName, b.add); err != nil {
			return nil, fmt.Errorf("query physical map %s: %w", q.AppID, err)
		}
		idx = b.finish()
		idx.stamp = stamp
		cache.put(key, idx)
	}
	out := &PhysMap{Machine: m.NodeName, Machines: names, PageSize: m.PageSize, Nodes: idx.nodes, RDDs: idx.rdds,
		Pages: idx.pages, Runs: idx.runs, Hidden: idx.hidden, Limit: idx.maxPFN}
	if m.PageSize > 0 {
		out.Limit = max(out.Limit, m.MemTotalBytes/uint64(m.PageSize))
	}
	out.From, out.To = q.From, q.To
	if out.To == 0 {
		out.To = max(out.Limit, out.From+1)
	}
	if out.To <= out.From {
		return nil, fmt.Errorf("physical map: %w: window [%d, %d) is empty", ErrInvalidQuery, q.From, q.To)
	}
	n := uint64(q.Buckets)
	if n == 0 {
		n = defaultMapBuckets
	}
	out.BucketPages = max((out.To-out.From+n-1)/n, 1)
	hot, err := src.hotSamples(ctx, q.AppID, m.NodeName, out.From, out.To)
	if err != nil {
		return nil, fmt.Errorf("query fault samples %s: %w", q.AppID, err)
	}
	out.Buckets = idx.bucket(out.From, out.To, out.BucketPages, hot)
	return out, nil
}

func (s *DuckDB) hotSamples(ctx context.Context, app, machine string, from, to uint64) (map[uint64]uint64, error) {
	rows, err := s.db.QueryContext(ctx, hotSamplesSQL, app, machine, int8(stratav1.AccessKind_ACCESS_KIND_FAULT), from, to)
	if err != nil {
		return nil, err
	}
	type hit struct{ pfn, n uint64 }
	hits, err := collect(rows, func(sc func(...any) error) (hit, error) {
		var h hit
		return h, sc(&h.pfn, &h.n)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]uint64, len(hits))
	for _, h := range hits {
		out[h.pfn] = h.n
	}
	return out, nil
}

// physStamp is the highest batch id: any batch stored since changes it.
func (s *DuckDB) physStamp(ctx context.Context, _ string) (int64, error) {
	var stamp int64
	if err := s.db.QueryRowContext(ctx, "SELECT coalesce(max(batch_id), 0) FROM batches").Scan(&stamp); err != nil {
		return 0, fmt.Errorf("read last batch id: %w", err)
	}
	return stamp, nil
}

func (s *DuckDB) physRuns(ctx context.Context, app, machine string, fn func(physRun)) error {
	rows, err := s.db.QueryContext(ctx, physRunsSQL, app, accessAlloc, accessRead, accessWrite, accessFree, accessMove, machine)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r physRun
		if err := rows.Scan(&r.ref.RDDID, &r.ref.ExecutorID, &r.ref.BlockID, &r.state, &r.pfn, &r.pages, &r.deltas, &r.node); err != nil {
			return fmt.Errorf("scan physical map row: %w", err)
		}
		fn(r)
	}
	return rows.Err()
}

// pfnIndexBuilder builds a pfnIndex from the runs of live blocks.
type pfnIndexBuilder struct {
	log      *slog.Logger
	app      string
	idx      *pfnIndex
	blockIDs map[BlockRef]uint32
	rdds     map[int32]*RDDPages
	nodes    map[int32]*NodeSpan
}

func newPFNIndexBuilder(log *slog.Logger, app string) *pfnIndexBuilder {
	return &pfnIndexBuilder{log: log, app: app, idx: &pfnIndex{}, blockIDs: map[BlockRef]uint32{},
		rdds: map[int32]*RDDPages{}, nodes: map[int32]*NodeSpan{}}
}

// add takes one run into the index.
func (bd *pfnIndexBuilder) add(r physRun) {
	idx := bd.idx
	idx.runs++
	rp := bd.rdds[r.ref.RDDID]
	if rp == nil {
		rp = &RDDPages{RDDID: r.ref.RDDID}
		bd.rdds[r.ref.RDDID] = rp
	}
	switch {
	case r.state&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0:
		rp.Swapped += uint64(r.pages)
		return
	case r.state&uint32(stratav1.PageState_PAGE_STATE_PFN_HIDDEN) != 0 || r.pfn == 0:
		idx.hidden += uint64(r.pages)
		return
	}
	b, ok := bd.blockIDs[r.ref]
	if !ok {
		b = uint32(len(idx.blocks))
		bd.blockIDs[r.ref] = b
		idx.blocks = append(idx.blocks, r.ref)
	}
	rp.Present += uint64(r.pages)
	idx.pages += uint64(r.pages)
	thp := r.state&uint32(stratav1.PageState_PAGE_STATE_THP) != 0
	add := func(start uint64, n uint32) {
		idx.segs = append(idx.segs, segment{pfn: start, n: n, block: b, node: int16(r.node), thp: thp})
		idx.maxSeg = max(idx.maxSeg, uint64(n))
		idx.maxPFN = max(idx.maxPFN, start+uint64(n))
		ns := bd.nodes[r.node]
		if ns == nil {
			ns = &NodeSpan{Node: r.node, FirstPFN: start}
			bd.nodes[r.node] = ns
		}
		ns.FirstPFN = min(ns.FirstPFN, start)
		ns.LastPFN = max(ns.LastPFN, start+uint64(n)-1)
		ns.Pages += uint64(n)
	}
	steps, err := decodeDeltas(r.deltas, r.pages)
	if err != nil {
		// Only a row ValidateBatch would have refused gets here.
		bd.log.Warn("physical map skipped a stored run that cannot be expanded", "app_id", bd.app, "block", r.ref.BlockID, "error", err)
		return
	}
	if len(steps) == 0 {
		add(r.pfn, r.pages)
		return
	}
	start, n, cur := r.pfn, uint32(1), r.pfn
	for _, d := range steps {
		next := cur + uint64(d)
		if next == cur+1 {
			n++
		} else {
			add(start, n)
			start, n = next, 1
		}
		cur = next
	}
	add(start, n)
}

// finish sorts the segments and lists the RDDs and nodes.
func (bd *pfnIndexBuilder) finish() *pfnIndex {
	idx := bd.idx
	sort.Slice(idx.segs, func(i, j int) bool { return idx.segs[i].pfn < idx.segs[j].pfn })
	for _, r := range bd.rdds {
		idx.rdds = append(idx.rdds, *r)
	}
	slices.SortFunc(idx.rdds, func(a, b RDDPages) int { return int(a.RDDID) - int(b.RDDID) })
	for _, n := range bd.nodes {
		idx.nodes = append(idx.nodes, *n)
	}
	slices.SortFunc(idx.nodes, func(a, b NodeSpan) int { return int(a.Node) - int(b.Node) })
	return idx
}

// bucketAcc accumulates one bucket.
type bucketAcc struct {
	rdds       []RDDCount
	thp, hot   uint64
	nodes      uint64
	block      int64 // -1 none yet, -2 several
	start, end uint64
}

// bucket cuts [from, to) into buckets of width pages and sums the
// segments inside each; hot holds sampled faults per PFN.
func (idx *pfnIndex) bucket(from, to, width uint64, hot map[uint64]uint64) []PFNBucket {
	accs := map[uint64]*bucketAcc{}
	acc := func(b uint64) *bucketAcc {
		a := accs[b]
		if a == nil {
			start := from + b*width
			a = &bucketAcc{block: -1, start: start, end: min(start+width, to)}
			accs[b] = a
		}
		return a
	}
	// The first segment that can reach from: none before it starts later
	// than from - maxSeg.
	lo := uint64(0)
	if from > idx.maxSeg {
		lo = from - idx.maxSeg
	}
	i := sort.Search(len(idx.segs), func(i int) bool { return idx.segs[i].pfn >= lo })
	for ; i < len(idx.segs) && idx.segs[i].pfn < to; i++ {
		sg := idx.segs[i]
		a, e := max(sg.pfn, from), min(sg.pfn+uint64(sg.n), to)
		for a < e {
			b := (a - from) / width
			ba := acc(b)
			n := min(e, ba.end) - a
			ba.add(idx.blocks[sg.block], sg, n)
			a += n
		}
	}
	// A sampled fault marks a bucket that holds pages; one on a page no
	// live block holds any more (freed, or faulted and moved since) makes
	// no bucket of its own.
	for pfn, n := range hot {
		if pfn >= from && pfn < to {
			if a := accs[(pfn-from)/width]; a != nil {
				a.hot += n
			}
		}
	}
	keys := make([]uint64, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]PFNBucket, 0, len(keys))
	for _, k := range keys {
		a := accs[k]
		slices.SortFunc(a.rdds, func(x, y RDDCount) int {
			if x.Pages != y.Pages {
				if x.Pages > y.Pages {
					return -1
				}
				return 1
			}
			return int(x.RDDID) - int(y.RDDID)
		})
		pb := PFNBucket{Start: a.start, End: a.end, RDDs: a.rdds, THP: a.thp, Hot: a.hot, Nodes: a.nodes}
		if a.block >= 0 {
			ref := idx.blocks[a.block]
			pb.Block = &ref
		}
		out = append(out, pb)
	}
	return out
}

func (a *bucketAcc) add(ref BlockRef, sg segment, n uint64) {
	found := false
	for i := range a.rdds {
		if a.rdds[i].RDDID == ref.RDDID {
			a.rdds[i].Pages += n
			found = true
			break
		}
	}
	if !found {
		a.rdds = append(a.rdds, RDDCount{RDDID: ref.RDDID, Pages: n})
	}
	if sg.thp {
		a.thp += n
	}
	if sg.node >= 0 && sg.node < 63 {
		a.nodes |= 1 << uint(sg.node)
	} else {
		a.nodes |= 1 << 63
	}
	switch {
	case a.block == -1:
		a.block = int64(sg.block)
	case a.block >= 0 && a.block != int64(sg.block):
		a.block = -2
	}
}
