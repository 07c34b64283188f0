// Package faults is the agent's kernel side: it mirrors the annotator's
// registry of live blocks into the BPF fault tracer (agent/tracer), counts
// each traced process perf-stat style (agent/perfstat), and turns what the
// kernel reports into records: sampled faults, per-block fault counters and
// per-process workload counters.
//
// The annotator owns which blocks are live; Faults keeps no list of its
// own. The annotator calls Faults through its Kernel interface at each
// change of its registry (StartProcess, RegisterBlock, ClaimFill,
// MoveBlock, SetWeakRanges, FreeBlock, ForgetProcess), and a registration names the Spark application
// and executor of the process, so Faults never asks the annotator for
// them. Records go the other way only from Run, into a Sink (the
// annotator's AddFaults, AddCounters and AddWorkload), which keeps what
// concerns the blocks it still has.
//
// What callers must know:
//   - A walked block's objects (SetWeakRanges) count into the block's
//     counters as weak ranges: they never make another block's
//     registration or move fail, they give way to it (agent/tracer says
//     how). FreeBlock drops them with the block.
//   - Every Config.Interval, and once more when Run ends, Run hands the
//     counters of every block the tracer holds to the Sink, which records
//     those that changed since it last did; a block's FREE record carries
//     its final counters.
//   - A process can exit before its hook session ends (a forked child holds
//     the socket, or the session's goroutine is late). The tracer then
//     forgets its blocks at once and reports their final counters: Run sends
//     them while the annotator still knows the blocks, and FreeBlock answers
//     with them when the session's end frees the blocks the tracer no
//     longer has. When the session ends first, FreeBlock reads the tracer
//     and ForgetProcess untracks the process.
//   - Workload counting starts with a process's first block and ends with
//     its session or its exit; the last counters are sent at once.
//   - walk_cycles_rdd is filled only where page-walk cycles are counted and
//     PEBS samples their data addresses (a core PMU with a known model):
//     walk cycles times the share of samples that hit a block. Elsewhere it
//     is absent, never zero.
//   - Fills: Open attaches the fill probes to the hook libraries installed
//     (Config.HookLibraries), StartProcess (a hook session's start) tracks
//     the process and attaches them to the library it maps. ClaimFill
//     hands the annotator, at a block's REGISTER, the faults its put's
//     thread took while Spark filled it (agent/tracer says what counts);
//     the key is FillKey of the block's name, as the hook computes it.
//   - Sampled faults are drained in batches of up to 1024, so the annotator
//     resolves their pages once per process per batch.
//   - Without a tracer (Unavailable: not root, no BPF, --faults off) Kernel
//     is nil, Run only waits, and Status and the Collector say so.
package faults
