// Package cpupolicy lowers the CPU priority of a Strata process, the agent
// or the collector, so that the work it observes goes first: Set gives
// every thread SCHED_BATCH (its fair share, without preempting the thread
// running on its core each time it wakes) if asked, and at least a nice
// value.
//
// Linux keeps the policy and the nice value per thread, and a new thread
// inherits its creator's: once every thread has them, the threads the Go
// runtime (or a C library) starts later have them too. Call Set early in
// main. A thread started under another policy (chrt: SCHED_IDLE, a
// real-time one) keeps it, and a higher nice value stays.
package cpupolicy
