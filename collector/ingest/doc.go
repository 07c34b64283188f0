// Package ingest is the collector's gRPC edge.
//
// Service implements strata.v1.IngestService: Push reads an agent's batches
// from one bidirectional stream, appends each to the store and answers each
// with an Ack carrying its seq, in the order received. An Ack is sent only
// after the store reports the batch durable; a batch the store already holds
// (same node_name, boot_id and seq, e.g. replayed from the agent's spool) is
// acknowledged with duplicate set and not written again.
//
// A malformed batch ends the stream with InvalidArgument and a message that
// names the batch and the reason; everything acknowledged before it is
// stored, and nothing of the refused batch is. The agent must not replay a
// refused batch unchanged.
//
// A stream that ends while its batch is being stored (the agent killed,
// the client cancelled) does not stop the write: the store commits or
// rolls it back on its own, and the replay of the batch is acknowledged as
// a duplicate or stored then. A store whose writes fail turns the ingest
// service NOT_SERVING on the health service until a write succeeds (see
// collector/server).
//
// The service only registers itself (Register); the grpc.Server it runs on,
// with its keepalive policy, message limit, health service and the
// interceptors that turn domain errors into gRPC codes, belongs to
// collector/server. Handlers return plain errors (ErrDraining, the store's
// sentinels); they never build statuses themselves.
package ingest
