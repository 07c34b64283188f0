// Package loadgen plays simulated agents against real collectors over
// gRPC: each agent is the agent's own streamer (agent/streamer: window,
// acks, reconnect with backoff, replay of what was not acknowledged) fed
// from an in-memory source that makes the same batch for the same seq
// every time, so a replay after a collector died carries what the first
// send carried. `strata loadgen` and the collector's load benchmarks use
// it; Verify reads back through a collector's query service what the
// agents were told is stored.
//
// What callers must know:
//   - Every run has its own boot id, so batches of an earlier run (same
//     machine names) are never taken for duplicates.
//   - A batch is RecordsPerBatch records of one block of PagesPerRecord
//     pages each, READ accesses of the agent's blocks in turn, each record
//     at its own time (time = the run's base + seq*RecordsPerBatch + i ns).
//     RunPages 0 lays pages out as agents see them (a quarter of the
//     blocks in 2 MiB THPs, the rest in runs of 1-32 contiguous pages);
//     RunPages n cuts every block into runs of n pages (1: each page its
//     own run, the worst case for the collector).
//   - With several collectors, agents connect to them through one gRPC
//     channel each, pick_first over a shuffled list: an agent whose
//     collector dies fails over to another and replays there.
package loadgen
