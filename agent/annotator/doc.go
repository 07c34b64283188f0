// Package annotator joins what the JVM hook reports (hooksrv events) with
// what the resolver reads from the kernel (pages, PFNs, flags, NUMA nodes)
// into strata.v1 Records, batches them (by records, runs, bytes and
// Config.FlushInterval) and hands each batch to a Sink, the spool, which
// makes it durable before it is streamed.
//
//	a := annotator.New(res, spool, annotator.Config{NodeName: n, Node: info})
//	go a.Run(ctx) // flushes batches as they age; once more at the end
//	srv, _ := hooksrv.Listen(cfg, a, log)
//
// It keeps the registry of live blocks per process (REGISTER adds, MOVE
// moves, FREE and the session's end remove), keyed by BlockKey, and, when
// Config.Kernel is set, mirrors it into the kernel's fault attribution; the
// kernel side never calls back, its faults and counters come in through
// AddFaults, AddCounters and AddWorkload and become records of blocks still
// registered. LiveRuns lists the live blocks with the pages it keeps for
// each (agent/damon joins them with DAMON's regions), and AddHeat queues
// the heat samples that come back, which ride in batches beside the
// records like workload counters.
//
// The registry is the agent's one owner of live-block state: which blocks
// are live in which session, their current range, latest walk and last
// recorded fault counters. agent/faults subscribes to it through Kernel (each
// change is one call) and asks it through AddFaults and AddCounters, which
// decide whose faults and which changed counters become records;
// agent/hooksrv keeps only the admission state it checks frames against and
// reads nothing back from it.
//
// What callers get: every block event becomes one record; ALLOC, MOVE, READ
// and WRITE carry the pages of their range as resolved when the event is
// handled (an access within Config.ReuseWindow of the last resolution reuses
// them) and say what of the block's data their runs hold (Record.coverage);
// FREE carries no pages. A REGISTER whose put the kernel side measured is
// followed by a FILL record: the faults the putting thread took while
// Spark filled the block (Kernel.ClaimFill), no pages. A range that cannot be resolved gives a record with
// resolve_error and no pages, never zeros. A record over the batch budget
// goes as pieces (agent/fit). Every batch carries Config.Node. HandleEvent is
// safe for concurrent use and never blocks on the network: a batch the sink
// refuses is counted in Stats.Dropped. docs/agent.md ("agent/annotator") gives
// the records of object graphs and cached columns, walk by walk.
package annotator
