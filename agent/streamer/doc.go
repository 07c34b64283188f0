// Package streamer sends the spool's batches to the collector over one
// gRPC IngestService.Push stream and acknowledges them in the spool as the
// collector's acks arrive.
//
// The spool is the source of truth: nothing is removed from it before the
// collector says the batch is stored. When the stream breaks (collector
// restart, network loss) the streamer backs off, reconnects and resends
// everything after the last ack; the collector recognises a batch it already
// stored by (node, boot id, seq) and acks it as a duplicate, so a resend
// never stores a record twice. At most Window batches are in flight.
//
// # Wire limits and refused batches
//
// The collector takes a Batch of at most stratav1.MaxBatchBytes with runs
// of at most stratav1.MaxRunPages pages, and refuses a malformed batch
// whole (InvalidArgument, nothing of it stored, the stream ended). The
// annotator never builds a batch over the limits, but a spool written by an
// older agent may hold one, and one bad record must not take a batch's
// other records with it. So a spooled batch is sent as pieces (split.go)
// when it is over the limits (after the batches before it are
// acknowledged, since the spool's Ack is cumulative) or when the collector
// refused it:
//
//   - node 1 of a bisection tree is the batch with long runs cut and
//     records over the budget split into sub-range records (agent/fit);
//     node k's halves are nodes 2k and 2k+1;
//   - a piece over the limits is halved before it is sent; a piece the
//     collector refuses is halved and both halves sent; a refused piece of
//     one record (or workload) is dropped: counted in
//     Stats.RecordsDropped / WorkloadsDropped and logged (rate limited by
//     the agent's log), once per piece;
//   - each piece goes alone on a stream of its own and must be acked
//     before the next is sent; a refusal costs one stream, not a backoff;
//   - node 1 keeps the spooled batch's seq; node k > 1 carries
//     pieceSeq(seq, k): the top bit set (spool seqs, microseconds since the
//     epoch, never reach it) and a hash of the spooled seq and k. The cut is
//     deterministic, so a piece has the same seq on every attempt: if the
//     stream or the agent dies half-way, the batch is split again the same
//     way and the pieces already stored are acked as duplicates;
//   - only when every piece is stored or dropped is the spooled batch
//     acknowledged in the spool.
//
// A bisection of n records with one bad record costs about 2 log2(n)
// streams; the collector logs each refusal with the reason.
package streamer
