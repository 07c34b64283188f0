// Package tracer loads Strata's BPF programs (bpf/strata.bpf.c) and is the
// only package that imports cilium/ebpf.
//
// A Tracer counts the page faults of traced processes per registered RDD
// block, in the kernel:
//
//	t, err := tracer.Load(tracer.Config{Logger: log, OnExit: onExit})
//	defer t.Close()
//	t.Track(pid)                                   // count this thread group
//	t.RegisterBlock(pid, blockID, start, end)      // [start, end) virtual
//	snap, _ := t.Snapshot()                        // every block's counters
//	for ev := range t.Events() { ... }             // 1 in SampleEvery faults
//	t.SetWeakRanges(pid, blockID, ranges)          // more ranges, same counters
//	c, _ := t.FreeBlock(pid, blockID)              // final counters
//
// agent/faults is its one user: it mirrors the annotator's block registry
// into it and turns its counters and events into records.
//
// What the caller must know:
//   - Counters are kept per block from registration; MoveBlock (after a GC)
//     keeps them, FreeBlock returns the final values and forgets the block.
//   - A block's ranges never overlap another's: RegisterBlock and MoveBlock
//     refuse a range over another block's registered one (ErrOverlap).
//     SetWeakRanges gives a block more ranges that count into its counters
//     (the objects a deserialized block's array refers to) but give way:
//     the parts another range holds already are left out, and a range
//     registered or moved over them later takes those pages (the weak
//     range is cut, never refused). Pages a range gives up are not handed
//     back to a weak range. SetWeakRanges replaces the block's weak ranges
//     as a whole (ranges it repeats are not rewritten); MoveBlock keeps
//     them; FreeBlock and the process's end drop them. Stats.WeakRanges
//     counts them.
//   - When a traced process exits, the kernel stops counting at once and the
//     tracer forgets its blocks; Config.OnExit receives their final counters.
//   - Nothing is pinned: every map and link dies with the Tracer (or the
//     agent process), so a restart starts clean and leaks nothing.
//   - Events are sampled and may be dropped (Stats counts both kernel reserve
//     failures and a full channel); counters are exact regardless.
//   - The fault hook is tp_btf/page_fault_user, else raw_tp, else the
//     software page-fault perf event (no read/write split: "unclassified").
//     Major faults come from the software major-fault perf event.
//   - PIDs are host (initial namespace) PIDs: the kernel side compares
//     bpf_get_current_pid_tgid() with them. At most 4096 processes are
//     tracked at once (the tgids map).
//   - Address matching (bpf/strata.h): a hash of 2 MiB buckets per TGID,
//     each listing up to 8 block ranges; a bucket of more blocks is split
//     into 64 KiB granule entries, again up to 8 ranges each; a granule of
//     more blocks lists them as a sorted run in the runs array, with a fence
//     per 4 KiB page so that the binary search covers only the entries that
//     can hold an address of the faulting page. Any number of blocks per
//     granule is matched. A lookup is one hash probe for blocks of a MiB
//     and more, two in a split bucket, and then a few entries of one run;
//     its cost does not grow with the blocks registered elsewhere. An
//     untraced process pays one bit test in an array map (pid_bits) on top
//     of the tracepoint itself. BenchmarkFaultOverhead prints the cost from
//     the kernel's BPF statistics, untraced and traced with 64 to 262,144
//     blocks, pages faulted in order and scattered (dense granules faulted
//     in scattered order cost most: cold cache lines). Alternatives measured
//     with the same faults: a radix of hash cells down to 8-byte cells cost
//     1.3-3.2× more per fault in dense granules, chained 8-range entries
//     grew with the density (5× at 256 blocks per granule), a sorted array
//     per granule without page fences 1.1-1.4×; children of split cells in
//     a preallocated array were cheaper still but need their memory up
//     front, for the densest layout more than the whole budget.
//   - Runs are written through a mapping of the runs array, into segments
//     of a buddy allocator (Config.MaxRunEntries; ErrIndexFull when it is
//     exhausted): a segment is never written while a lookup may read it
//     (entries are appended past what was ever listed, or copied to a new
//     segment), and a freed segment is reused only after an RCU grace
//     period, which the tracer waits for by updating a map-in-map. With
//     the array exhausted, a run that does not grow is rewritten in its
//     own segment after its granule is unlisted and a grace period passed
//     (faults there go unmatched meanwhile), so taking a range out never
//     fails for want of room.
//   - Memory does not grow with the CPU count: block counters are shared by
//     all CPUs (atomic adds), 64 bytes per block; only the fault statistics
//     (64 bytes) and the hash maps' bookkeeping are per CPU.
//     TestMapMemoryPerCPU states each map's memory on this machine and on
//     64 and 128 CPUs: ~44 MiB for 65,536 blocks on 128 CPUs.
//   - Per-CPU perf events (the perf fault hook, major faults, walk samples)
//     follow CPU hotplug: every LivenessInterval the online CPU list
//     (Config.CPUs, /sys/devices/system/cpu/online) is read, CPUs that came
//     online get their events, those gone offline lose them, and an event
//     whose enabled time stopped (its CPU went offline and back between two
//     checks) is reopened.
//
// SampleWalks attaches the walk_sample program to a sampling perf event
// whose samples carry a data address (PEBS STLB-miss loads and stores,
// chosen by agent/perfstat): samples of traced processes are counted per
// process (WalkSampleCounts) and per block (Counters.WalkSamples), the share
// that splits counted page-walk cycles between RDD blocks and the rest.
// Perf-stat counting, PMU detection and the per-model event tables live in
// agent/perfstat, and every read of /proc and /sys in agent/procmem; this
// package is about BPF.
// It is x86-64 only: the fault classifier decodes the x86 error code.
package tracer
