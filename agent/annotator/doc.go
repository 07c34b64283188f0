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
// Pages come from a Resolver (resolver.Pool in the agent), one batch per
// process. Every batch carries Config.Node, the description of the machine
// (NUMA nodes, page size, memory) the collector needs to judge placement.
//
// HandleEvent is called from hooksrv session goroutines; it is safe for
// concurrent use and never blocks on the network: when the spool refuses a
// batch (full), the batch's records are counted as dropped.
package annotator
