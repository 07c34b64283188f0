// Package spool is the agent's disk-backed log of batches the collector has
// not acknowledged yet. The annotator appends; the streamer reads, sends and
// acknowledges. A batch that Append returned nil for survives an agent crash
// or restart and a collector that is away for as long as the disk holds it.
// A Spool is safe for concurrent use; Example shows both ends.
//
// # On-disk format
//
// The spool is a directory of segment files named after the sequence number
// of their first batch, zero-padded to 20 digits: 00000000000000000042.seg.
// A segment is a sequence of frames:
//
//	u32 little-endian  payload length n
//	u32 little-endian  CRC-32C (Castagnoli) of the payload
//	n bytes            a protobuf-encoded strata.v1.Batch, its seq set
//
// Frames are appended and fsynced per Append. A new segment starts when the
// current one exceeds the segment size. On open, every segment is scanned; a
// frame cut short by a crash, or one whose CRC does not match, ends its
// segment: the file is truncated there and the loss is reported by Open's
// logger, since the annotator never heard that batch was durable.
//
// A segment is deleted once every batch in it is acknowledged — the one
// being appended too, once it holds nothing pending and has grown to a
// quarter of a segment, or when a write finds the volume full (the write is
// then retried once in a fresh segment). Segments are at most an eighth of
// the volume, so acknowledged bytes never take the space pending ones
// need: on a volume smaller than one default segment only unacknowledged
// batches fill it, and Append fails (ENOSPC) only while they do. The file
// "hwm" holds the highest sequence number ever assigned, so numbers keep
// increasing across restarts even when every segment is gone.
//
// # Sequence numbers
//
// The collector de-duplicates on (node, boot id, seq), so within one boot a
// number must never be reused. Append assigns max(hwm+1, microseconds since
// the epoch at Open): the clock term keeps numbers fresh even if the spool
// directory itself is lost, as long as the wall clock does not step back.
//
// Ack is cumulative and kept in memory: the disk learns of it only when a
// segment is deleted, so after a restart the acknowledged batches of a
// segment still present are pending again, resent, and acked by the
// collector as duplicates. The streamer may send a batch as pieces numbered
// with the top bit set, a range these numbers never reach, and Acks it here
// when every piece is stored or dropped (docs/agent.md, "agent/streamer").
package spool
