// Package annotator joins what the JVM hook reports (hooksrv events) with
// what the resolver reads from the kernel (pages, PFNs, flags, NUMA nodes)
// into strata.v1 Records, batches them by size and time, and hands each
// batch to the spool, which makes it durable before it is streamed.
//
// It keeps the registry of live blocks per process: a REGISTER adds a block,
// MOVE changes its range, FREE removes it, and the end of a hook session
// (the JVM exited or closed its socket) removes all of the process's blocks.
// When a Kernel is attached (agent/faults over the BPF tracer), the registry
// is mirrored into it, each registration naming the process's Spark
// application and executor, so page faults are attributed to the same
// blocks. The kernel side never calls back: its sampled faults, block
// counters and workload counters come in through AddFaults, AddCounters and
// AddWorkload, and become records of the blocks still registered.
//
// Every block event becomes one record. ALLOC, MOVE, READ and WRITE records
// carry the pages of the range they name, resolved at the time the event is
// handled; FREE records carry no pages (the memory may be gone). A repeat
// access to a block within Config.ReuseWindow of its last resolution reuses
// those pages instead of reading pagemap again: Spark reads a cached block
// far more often than its pages change, and a MOVE always re-resolves.
// When the range cannot be resolved at all (the process died, the range is
// not the caller's), the record says why in resolve_error and carries no
// pages rather than zeros.
//
// Every ALLOC, MOVE, READ and WRITE record says what of the block's data
// its runs hold (Record.coverage); every record's block carries Spark's
// size of the whole block, and a cached DataFrame block's column its
// column. A block's own buffer (serialized bytes, a primitive array, a
// Tungsten page) is BUFFERS, the bytes of the record's range. FREE and
// FAULT records carry no coverage. A record over the batch budget goes as
// pieces (agent/fit): a walk's pieces all keep the array's range, and its
// numbers go with the first.
//
// A cached DataFrame block's column (Block.CachedBatch) is its range, the
// column's buffer in the first batch, plus its latest walk: every batch's
// buffer of the column, which the hook sends right after the REGISTER and
// again after each collection that moved one, and which holds until the
// next (no GC epoch, no CHECKED). Its records: ALLOC (and the MOVE of the
// first buffer after a collection) the range's pages, BUFFERS of its
// length, detail "the first batch's buffer; the column's buffers follow";
// a walk, a MOVE record whose runs are the pages that hold the buffers
// (each page once: small buffers share pages), BUFFERS with the walk's
// bytes, its buffers as objects and its extents; READ and WRITE the
// walk's pages likewise. The kernel counts faults in the buffers' bytes
// (Kernel.SetWeakRanges) from the walk's arrival until the next replaces
// it.
//
// A deserialized block (Block.ObjectGraph) is its range, the array of
// references, plus its latest walk (EventWalk), which is usable when it is
// not stale and holds at the session's latest GC epoch: the highest epoch
// any frame of the session named (GC, MOVE, WALK, CHECKED), a walk holding
// at its own epoch until a CHECKED raises it. Between a GC and the CHECKED
// that answers it a walk is unsure, and not used. Its records:
//
//   - ALLOC: the array's pages, REFERENCES, "walk pending" (or the
//     session's walk mode when the hook does not walk);
//   - a complete walk: a MOVE record whose runs are the pages of every
//     extent (one resolver call for all), WALKED or WALK_CUT with the
//     walk's numbers, and vaddr/length still the array;
//   - STALE: a MOVE record of the array's pages, REFERENCES, "stale:
//     objects moved by GC <epoch>, walk pending";
//   - the array's own MOVE: no record while the block's walk stands (the
//     array moves only with its objects, so a STALE follows), else a MOVE
//     record of the array's pages;
//   - READ, WRITE: the usable walk's pages, else the array's, REFERENCES,
//     and why; a record never mixes two walks, and the pages kept for
//     reuse are a walk's only while that walk is the block's.
//
// The kernel counts faults in a usable walk's extents into the block's
// counters (Kernel.SetWeakRanges), from when the walk first holds until
// it is stale or replaced; an unsure walk keeps them meanwhile. The
// latest walk's extents are kept per block (at most hooksrv's caps):
// Stats.WalkExtents and ProcessWalkExtents count them.
//
// Pages come from a Resolver (resolver.Pool in the agent), one batch per
// process. Every batch carries Config.Node, the description of the machine
// (NUMA nodes, page size, memory) the collector needs to judge placement.
//
// HandleEvent is called from hooksrv session goroutines; it is safe for
// concurrent use and never blocks on the network: when the spool refuses a
// batch (full), the batch's records are counted as dropped.
package annotator
