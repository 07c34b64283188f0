// Package query implements strata.v1.QueryService over the store: traces
// streamed page by page, NUMA spread, fault counters, workload overhead and
// analysed jobs. It only registers itself; collector/server owns the
// grpc.Server it shares with ingest, whose interceptors map the store's
// errors to codes:
// a missing app_id is InvalidArgument, an unknown job NotFound, a closed
// store Unavailable. The store's doc says what each answer means.
//
// ResolvedWords, ShareWords, ResolutionWord and HoldsWords say what Strata
// resolved of blocks (RddReport's parts, a record's Coverage) in the words
// both `strata` and the web UI print, so the two never differ.
package query
