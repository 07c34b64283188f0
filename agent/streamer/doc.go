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
package streamer
