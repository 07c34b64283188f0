// Package perfstat counts what `perf stat -p PID` would of one process:
// task clock, context switches, CPU migrations, minor and major faults
// (software events, always available), and, where the node exposes a
// hardware PMU, cycles, instructions, dTLB load misses and the page-walk
// cycles of the CPU model (Open, Workload.Read). It also holds the tables
// that pick those model-specific events (SelectWalkEvents) and the PMU
// detection they depend on (DetectPMU).
//
// What callers must know:
//   - Counting is per thread: Open opens one perf event per thread listed in
//     /proc/PID/task under Options.FS (the agent's --proc), each inherited
//     by the threads that thread creates later. Threads that exist at Open
//     but were started by a thread that had already exited are not counted.
//     Every context switch of a counted thread then switches its perf
//     context too, which the process pays for; Options.Software =
//     SoftwareProcfs reads the software counts from /proc instead (free for
//     the process; task clock in 10 ms ticks; switches and migrations of a
//     thread as last read before it exits) and opens perf events only for
//     hardware counters.
//   - Hardware fields of Counts are nil when they were not measured, and
//     PMUStatus says why ("unavailable: no hardware PMU" on most VMs);
//     nothing is ever estimated into them. A PMU that sysfs lists but the
//     kernel refuses is reported the same way.
//   - A hardware counter the kernel multiplexed is scaled by its enabled
//     over running time, as perf stat does.
//   - The walk-event encodings come from the kernel's perf JSON event tables
//     for each microarchitecture; they could not be checked on hardware
//     where this package was written (no PMU), which is why only CPUs in
//     the table get walk figures and others get ErrUnknownCPU.
//   - Nothing here loads BPF; agent/tracer does, and samples page-walk data
//     addresses with the SampleLoads/SampleStores events chosen here.
//   - It reads /proc and /sys only through procmem.FS and never logs.
package perfstat
