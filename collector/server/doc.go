// Package server runs the collector: it loads the configuration (defaults,
// then a JSON file, then STRATA_COLLECTOR_* environment variables, then
// flags, then Validate), checks its preconditions, opens the store, serves
// ingest, query and health on one grpc.Server, and stops gracefully.
//
// Run prints one line, "listening ADDR", to its out writer once the socket
// accepts connections, so scripts and tests can wait for it (with --listen
// 127.0.0.1:0 ADDR carries the chosen port). The health service reports
// SERVING for the server ("") and for each registered service by name.
//
// When ctx ends, health turns NOT_SERVING, agents' Push streams end with
// Unavailable after the batch each is storing (ingest.Service.Drain),
// GracefulStop lets running calls finish for up to ShutdownGrace (then Stop
// cuts the rest), and the store is flushed and checkpointed. Nothing
// acknowledged is lost; what was not acknowledged the agents replay.
//
// The job-history poller (a separate package) is not wired yet; its place
// is jobHistoryPoller in run.go.
package server
