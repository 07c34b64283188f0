// Package server runs the collector: it loads the configuration (defaults,
// then a JSON file, then STRATA_COLLECTOR_* environment variables, then
// flags, then Validate), checks its preconditions, opens the store, serves
// ingest, query and health on one grpc.Server, and stops gracefully.
//
// Run prints one line, "listening ADDR", to its out writer once the socket
// accepts connections, so scripts and tests can wait for it (with --listen
// 127.0.0.1:0 ADDR carries the chosen port). When ctx ends, the health
// service turns NOT_SERVING, GracefulStop lets running calls finish for up
// to ShutdownGrace (then Stop cuts the rest, such as agents' open Push
// streams; nothing acknowledged is lost), and the store is flushed and
// checkpointed.
//
// The job-history poller (a separate package) is not wired yet; its place
// is jobHistoryPoller in run.go.
package server
