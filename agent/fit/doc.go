// Package fit cuts what the agent sends to the shape the collector accepts.
// The collector refuses a PageRun of more than stratav1.MaxRunPages pages
// and a Batch larger than stratav1.MaxBatchBytes (both in
// proto/strata/v1/limits.go, which the collector imports too); the agent
// must never build either.
//
//   - Runs splits runs longer than MaxRunPages at that many pages (an
//     untouched 2 GiB block is one run of 524288 pages as the resolver
//     folds it).
//   - Record splits a record whose encoding exceeds a byte budget into
//     several records over consecutive sub-ranges of its range, each with
//     the runs of its sub-range and its coverage counting the sub-range's
//     bytes; only the first keeps the fault counters, so sums stay right.
//     A walked record (coverage WALKED or WALK_CUT), whose runs lie outside
//     its range, is split by its runs: every piece keeps the range (the
//     block's array) and the coverage's resolution, GC epoch and detail;
//     the walk's counts (bytes, objects, shared, opaque, extents) go with
//     the first piece only.
//   - RecordSize and Fits measure with the encoded (proto) size, the one
//     the gRPC limit applies to.
//   - Halve splits a batch's records and workloads into two batches with
//     the same header: the streamer bisects a batch the collector refused
//     with it, so only the bad record is lost.
//
// Every function is pure and deterministic: the same input always splits
// the same way, which is what lets the streamer give the pieces stable
// sequence numbers across restarts. Inputs are never modified; runs that
// need no split are shared between input and output.
package fit
