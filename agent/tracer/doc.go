// Package tracer loads Strata's BPF programs (bpf/strata.bpf.c), counts the
// page faults of traced processes per registered RDD block in the kernel,
// and is the only package that imports cilium/ebpf. It is x86-64 only (the
// fault classifier decodes the x86 error code). agent/faults is its one
// user; Example shows the calls.
//
//	t, err := tracer.Load(tracer.Config{Logger: log, OnExit: onExit})
//	defer t.Close()
//	t.Track(pid)                              // count this thread group
//	t.RegisterBlock(pid, blockID, start, end) // [start, end) virtual
//	snap, _ := t.Snapshot()                   // every block's counters
//	for ev := range t.Events() { ... }        // 1 in SampleEvery faults
//	t.SetWeakRanges(pid, blockID, ranges)     // more ranges, same counters
//	c, _ := t.FreeBlock(pid, blockID)         // final counters
//	t.AttachFills(libPath)                    // the hook's fill marks
//	f, ok, _ := t.TakeFill(pid, key)          // a stored put's faults
//
// What the caller must know:
//   - Counters are exact and kept per block from registration; MoveBlock
//     keeps them, FreeBlock returns the final values and forgets the block.
//     Events are sampled and may be dropped (Stats counts kernel reserve
//     failures and a full channel).
//   - Blocks never overlap: RegisterBlock and MoveBlock refuse a range over
//     another block's (ErrOverlap). Weak ranges (SetWeakRanges, replaced as
//     a whole, kept by MoveBlock) count into their block but give way: a
//     part another range holds is left out, a range registered over one
//     later takes those pages, and pages given up are not handed back.
//   - When a traced process exits the kernel stops counting at once and
//     Config.OnExit receives its blocks' final counters.
//   - Nothing is pinned: every map and link dies with the Tracer or the
//     process, so a restart starts clean.
//   - PIDs are host (initial namespace) PIDs; at most 4096 processes are
//     tracked at once. Any number of blocks per address range is matched,
//     within Config.MaxRunEntries (ErrIndexFull); taking a range out never
//     fails for want of room.
//   - Per-CPU perf events follow CPU hotplug, checked every
//     LivenessInterval against Config.CPUs.
//   - Fills: AttachFills puts uprobes on the hook library's
//     Native.fillBegin(key) and Native.fillEnd(stored), which the JVM hook
//     calls around each MemoryStore put. Every fault a thread takes between
//     the two, whatever its address, counts for that put (a nested put's
//     for the nested one only, up to STRATA_FILL_DEPTH deep); a put that
//     stored its block leaves its counts keyed by {TGID, key} until
//     TakeFill claims them. A process is traced from its first fill begin,
//     before any Track. Fills no claim took are dropped when their process
//     is forgotten or exits, or after fillMaxAge; Stats counts every way a
//     fill ends.
//   - The fault hook is tp_btf/page_fault_user, else raw_tp, else the
//     software page-fault perf event (no read/write split: "unclassified");
//     major faults come from the software major-fault perf event.
//
// SampleWalks counts data-address samples (PEBS STLB misses, chosen by
// agent/perfstat) per process (WalkSampleCounts) and per block
// (Counters.WalkSamples). Perf-stat counting and PMU tables live in
// agent/perfstat and every read of /proc and /sys in agent/procmem.
// docs/agent.md ("agent/tracer") describes the kernel-side index and its
// costs.
package tracer
