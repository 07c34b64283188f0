// Package tracer loads Strata's BPF programs (bpf/strata.bpf.c) and is the
// only package that imports cilium/ebpf.
//
// A Tracer counts the page faults of traced processes per registered RDD
// block, in the kernel:
//
//	t, err := tracer.Load(tracer.Config{Logger: log})
//	defer t.Close()
//	t.Track(pid)                                   // count this thread group
//	t.RegisterBlock(pid, blockID, start, end)      // [start, end) virtual
//	c, _ := t.BlockCounters(pid, blockID)          // read, write, exec, major
//	for ev := range t.Events() { ... }             // 1 in SampleEvery faults
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
//     of blocks. Program time per fault, kernel BPF statistics, this VM:
//     ~80 ns untraced, ~170-200 ns traced with 64 or with 65,536 blocks,
//     ~265 ns in dense buckets; a sorted range array searched with bpf_loop
//     took 156 ns at 64 ranges and 276 ns at 65,536, and needs the whole
//     array rewritten on every change. An untraced process pays one bit
//     test in an array map (pid_bits) on top of the tracepoint itself.
//
// The package also reads perf-stat style counters of a process (OpenWorkload),
// detects the hardware PMU and picks page-walk events per CPU model
// (SelectWalkEvents), attributes sampled data addresses to blocks
// (SampleWalks), and reports DAMON's availability (DAMONStatus).
// It is x86-64 only: the fault classifier decodes the x86 error code.
package tracer
