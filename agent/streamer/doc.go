// Package streamer sends the spool's batches to the collector over one
// gRPC IngestService.Push stream and acknowledges them in the spool as the
// collector's acks arrive.
//
//	st, err := streamer.New(sp, streamer.Config{Target: addr, DialOptions: creds})
//	err = st.Run(ctx) // reconnects with backoff; nil when ctx is cancelled
//
// The spool is the source of truth: nothing leaves it before the collector
// says the batch is stored. When the stream breaks the streamer backs off,
// reconnects and resends everything after the last ack; the collector acks
// a batch it already stored, known by (node, boot id, seq), as a duplicate,
// so a resend never stores a record twice. At most Config.Window batches are
// in flight.
//
// A spooled batch over the wire limits (stratav1.MaxBatchBytes,
// stratav1.MaxRunPages) or refused by the collector is sent as pieces,
// halved until each is stored or is one record the collector refuses, which
// is dropped, logged and counted in Stats.RecordsDropped or
// WorkloadsDropped. Pieces are cut the same way on every attempt and
// numbered with the top bit of seq set, a range spool numbers never reach;
// the spooled batch is acknowledged only when every piece is stored or
// dropped. docs/agent.md ("agent/streamer") describes the bisection.
package streamer
