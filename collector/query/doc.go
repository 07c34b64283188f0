// Package query implements strata.v1.QueryService over the store: traces
// streamed page by page, NUMA spread, fault counters, workload overhead and
// analysed jobs. It only registers itself; collector/server owns the
// grpc.Server it shares with ingest, whose interceptors map the store's
// errors to codes:
// a missing app_id is InvalidArgument, an unknown job NotFound, a closed
// store Unavailable. The store's doc says what each answer means.
package query
