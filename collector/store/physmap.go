package store

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/stratatrace/strata/collector/answer"
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
// The index is built (pfnIndexBuilder) from the runs physRuns selects,
// kept for the latest few (app, machine) pairs and rebuilt when a batch
// may have been stored since: the backend's stamp changed (source.physStamp).
// An index over maxCachedSegments segments (24 bytes each) is not kept: it
// is rebuilt for every window.

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
	blocks  []answer.BlockRef
	rdds    []answer.RDDPages // by RDD id
	nodes   []answer.NodeSpan // by node
	maxPFN  uint64            // highest PFN + 1
	pages   uint64
	runs    uint64
	hidden  uint64 // present pages whose PFN the agent could not see
	stamp   int64
	touched uint64
}

// physMapCache keeps the latest pfnIndexes.
type physMapCache struct {
	mu      sync.Mutex
	entries map[physMapKey]*pfnIndex
	clock   uint64
}

// physMapKey names one cached index: an app's map on one machine at one
// moment (0: now).
type physMapKey struct {
	app, machine string
	at           int64
}

func (c *physMapCache) get(key physMapKey, stamp int64) *pfnIndex {
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

func (c *physMapCache) put(key physMapKey, idx *pfnIndex) {
	if len(idx.segs) > maxCachedSegments {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[physMapKey]*pfnIndex{}
	}
	c.clock++
	idx.touched = c.clock
	c.entries[key] = idx
	for len(c.entries) > physMapCacheEntries {
		var oldest physMapKey
		first := true
		for k, e := range c.entries {
			if first || e.touched < c.entries[oldest].touched {
				oldest, first = k, false
			}
		}
		delete(c.entries, oldest)
	}
}

// PhysMap returns the app's physical memory map on one machine; see
// PhysMapQuery and the comment at the top of this file.
func (q *querier) PhysMap(ctx context.Context, pq answer.PhysMapQuery) (*answer.PhysMap, error) {
	if err := q.check(pq.AppID); err != nil {
		return nil, fmt.Errorf("physical map: %w", err)
	}
	if pq.Buckets > maxMapBuckets {
		return nil, fmt.Errorf("physical map: %w: %d buckets (at most %d)", ErrInvalidQuery, pq.Buckets, maxMapBuckets)
	}
	machines, err := q.Machines(ctx, pq.AppID)
	if err != nil {
		return nil, err
	}
	if len(machines) == 0 {
		return nil, fmt.Errorf("physical map %s: %w: no records", pq.AppID, ErrNotFound)
	}
	m := machines[0]
	names := make([]string, 0, len(machines))
	found := pq.Machine == ""
	for _, mm := range machines {
		names = append(names, mm.NodeName)
		if mm.NodeName == pq.Machine && !found {
			m, found = mm, true
		}
	}
	if !found {
		return nil, fmt.Errorf("physical map %s: %w: no records from machine %q", pq.AppID, ErrInvalidQuery, pq.Machine)
	}
	names = slices.Compact(names) // a machine rebooted is listed once per boot
	stamp, err := q.src.physStamp(ctx, pq.AppID)
	if err != nil {
		return nil, fmt.Errorf("physical map %s: %w", pq.AppID, err)
	}
	key := physMapKey{app: pq.AppID, machine: m.NodeName, at: pq.At}
	idx := q.physMaps.get(key, stamp)
	if idx == nil {
		b := newPFNIndexBuilder(q.log, pq.AppID)
		if err := q.physRuns(ctx, pq.AppID, m.NodeName, pq.At, b.add); err != nil {
			return nil, fmt.Errorf("query physical map %s: %w", pq.AppID, err)
		}
		idx = b.finish()
		idx.stamp = stamp
		q.physMaps.put(key, idx)
	}
	out := &answer.PhysMap{Machine: m.NodeName, Machines: names, PageSize: m.PageSize, Nodes: idx.nodes, RDDs: idx.rdds,
		Pages: idx.pages, Runs: idx.runs, Hidden: idx.hidden, Limit: idx.maxPFN}
	if m.PageSize > 0 {
		out.Limit = max(out.Limit, m.MemTotalBytes/uint64(m.PageSize))
	}
	out.From, out.To = pq.From, pq.To
	if out.To == 0 {
		out.To = max(out.Limit, out.From+1)
	}
	if out.To <= out.From {
		return nil, fmt.Errorf("physical map: %w: window [%d, %d) is empty", ErrInvalidQuery, pq.From, pq.To)
	}
	n := uint64(pq.Buckets)
	if n == 0 {
		n = defaultMapBuckets
	}
	out.BucketPages = max((out.To-out.From+n-1)/n, 1)
	hot, err := q.hotSamples(ctx, pq.AppID, m.NodeName, out.From, out.To, pq.At)
	if err != nil {
		return nil, fmt.Errorf("query fault samples %s: %w", pq.AppID, err)
	}
	heat, err := q.physHeat(ctx, pq.AppID, m.NodeName, pq.At, idx.blocks)
	if err != nil {
		return nil, err
	}
	out.Buckets = idx.bucket(out.From, out.To, out.BucketPages, hot, heat)
	return out, nil
}

// physRun is one stored run of a live block.
type physRun struct {
	ref          answer.BlockRef
	state, pages uint32
	pfn          uint64
	deltas       []byte
	node         int32
}

// physRuns calls fn with each run of app's blocks live at moment at on
// machine (their buffers' records that hold then: momentRecsWhere; at 0,
// now, as Numa takes them) that holds pages: present or swapped.
func (q *querier) physRuns(ctx context.Context, app, machine string, at int64, fn func(physRun)) error {
	d := q.src
	cols := "rdd_id, executor_id, block_id, state, pfn, pages, pfn_deltas, numa_node"
	sel := d.sel(cols) + ` FROM (` + runsOf(d, app, cols,
		` AND `+d.bit("state", int(pgPresent|pgSwapped))+` != 0`+
			` AND pages BETWEEN 1 AND `+strconv.Itoa(stratav1.MaxRunPages),
		momentRecsWhere(d, lifecycleScope(d, app), at)+` AND node_name = `+d.lit(machine)) + `)`
	return q.each(ctx, sel, func(r row) {
		var p physRun
		p.ref.RDDID, p.ref.ExecutorID, p.ref.BlockID = r.i32(), r.str(), r.str()
		p.state, p.pfn, p.pages, p.deltas, p.node = r.u32(), r.u64(), r.u32(), r.blob(), r.i32()
		if r.Err() == nil {
			fn(p)
		}
	})
}

// pfnIndexBuilder builds a pfnIndex from the runs of live blocks.
type pfnIndexBuilder struct {
	log      *slog.Logger
	app      string
	idx      *pfnIndex
	blockIDs map[answer.BlockRef]uint32
	rdds     map[int32]*answer.RDDPages
	nodes    map[int32]*answer.NodeSpan
}

func newPFNIndexBuilder(log *slog.Logger, app string) *pfnIndexBuilder {
	return &pfnIndexBuilder{log: log, app: app, idx: &pfnIndex{}, blockIDs: map[answer.BlockRef]uint32{},
		rdds: map[int32]*answer.RDDPages{}, nodes: map[int32]*answer.NodeSpan{}}
}

// add takes one run into the index.
func (bd *pfnIndexBuilder) add(r physRun) {
	idx := bd.idx
	idx.runs++
	rp := bd.rdds[r.ref.RDDID]
	if rp == nil {
		rp = &answer.RDDPages{RDDID: r.ref.RDDID}
		bd.rdds[r.ref.RDDID] = rp
	}
	switch {
	case r.state&uint32(pgSwapped) != 0:
		rp.Swapped += uint64(r.pages)
		return
	case r.state&uint32(pgHidden) != 0 || r.pfn == 0:
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
	thp := r.state&uint32(pgTHP) != 0
	add := func(start uint64, n uint32) {
		idx.segs = append(idx.segs, segment{pfn: start, n: n, block: b, node: int16(r.node), thp: thp})
		idx.maxSeg = max(idx.maxSeg, uint64(n))
		idx.maxPFN = max(idx.maxPFN, start+uint64(n))
		ns := bd.nodes[r.node]
		if ns == nil {
			ns = &answer.NodeSpan{Node: r.node, FirstPFN: start}
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
	run := stratav1.PageRun{Pfn: r.pfn, Count: r.pages, PfnDeltas: steps}
	run.ForEachPFNSpan(func(first uint64, n uint32) bool {
		add(first, n)
		return true
	})
}

// finish sorts the segments and lists the RDDs and nodes.
func (bd *pfnIndexBuilder) finish() *pfnIndex {
	idx := bd.idx
	sort.Slice(idx.segs, func(i, j int) bool { return idx.segs[i].pfn < idx.segs[j].pfn })
	for _, r := range bd.rdds {
		idx.rdds = append(idx.rdds, *r)
	}
	slices.SortFunc(idx.rdds, func(a, b answer.RDDPages) int { return int(a.RDDID) - int(b.RDDID) })
	for _, n := range bd.nodes {
		idx.nodes = append(idx.nodes, *n)
	}
	slices.SortFunc(idx.nodes, func(a, b answer.NodeSpan) int { return int(a.Node) - int(b.Node) })
	return idx
}

// bucketAcc accumulates one bucket.
type bucketAcc struct {
	rdds       []answer.RDDCount
	thp, hot   uint64
	nodes      uint64
	block      int64 // -1 none yet, -2 several
	start, end uint64
	heatPages  uint64  // pages of blocks with a heat figure
	heatSum    float64 // their figures × pages
}

// bucket cuts [from, to) into buckets of width pages and sums the
// segments inside each; hot holds sampled faults per PFN, heat the
// accesses per second per GiB of each of idx.blocks (NaN: none).
func (idx *pfnIndex) bucket(from, to, width uint64, hot map[uint64]uint64, heat []float64) []answer.PFNBucket {
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
			ba.add(idx.blocks[sg.block], sg, n, heat[sg.block])
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
	out := make([]answer.PFNBucket, 0, len(keys))
	for _, k := range keys {
		a := accs[k]
		slices.SortFunc(a.rdds, func(x, y answer.RDDCount) int {
			if x.Pages != y.Pages {
				if x.Pages > y.Pages {
					return -1
				}
				return 1
			}
			return int(x.RDDID) - int(y.RDDID)
		})
		pb := answer.PFNBucket{Start: a.start, End: a.end, RDDs: a.rdds, THP: a.thp, Hot: a.hot, Nodes: a.nodes}
		if a.heatPages > 0 {
			v := a.heatSum / float64(a.heatPages)
			pb.Heat = &v
		}
		if a.block >= 0 {
			ref := idx.blocks[a.block]
			pb.Block = &ref
		}
		out = append(out, pb)
	}
	return out
}

func (a *bucketAcc) add(ref answer.BlockRef, sg segment, n uint64, heat float64) {
	if !math.IsNaN(heat) {
		a.heatPages += n
		a.heatSum += heat * float64(n)
	}
	found := false
	for i := range a.rdds {
		if a.rdds[i].RDDID == ref.RDDID {
			a.rdds[i].Pages += n
			found = true
			break
		}
	}
	if !found {
		a.rdds = append(a.rdds, answer.RDDCount{RDDID: ref.RDDID, Pages: n})
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
