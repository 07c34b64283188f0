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
//	c, _ := t.FreeBlock(pid, blockID)              // final counters
//
// agent/faults is its one user: it mirrors the annotator's block registry
// into it and turns its counters and events into records.
//
// What the caller must know:
//   - Counters are kept per block from registration; MoveBlock (after a GC)
//     keeps them, FreeBlock returns the final values and forgets the block.
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
//   - Address matching: a hash of 2 MiB buckets per TGID, each listing up to
//     8 block ranges; a denser bucket is split into 64 KiB granule entries
//     (see bpf/strata.h). RegisterBlock fails with ErrTooDense when more
//     than 8 blocks share one granule (blocks averaging under 8 KiB).
//     A lookup is one hash probe (two in a dense bucket) whatever the number
//     of blocks, so the program's time per fault does not grow with the
//     blocks registered; BenchmarkFaultOverhead prints it, from the kernel's
//     BPF statistics, untraced and traced with 64 and 65,536 blocks. (A
//     sorted range array searched with bpf_loop grew with the number of
//     ranges and needed the whole array rewritten on every change.) An
//     untraced process pays one bit test in an array map (pid_bits) on top
//     of the tracepoint itself.
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
