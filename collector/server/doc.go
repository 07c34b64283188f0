// Package server is the collector's composition root. Load builds a Config
// (defaults, then the --config JSON file, then STRATA_COLLECTOR_*
// variables, then flags, then Validate); Run checks its preconditions
// (Preflight), opens the store, serves ingest, query and health on one
// grpc.Server, runs the job-history poller and, with --http, serves
// /metrics, /healthz and the handlers mounted with WithHTTPHandler. The
// grpc.Server is NewGRPCServer's: keepalive, the receive limit of one batch
// (stratav1.MaxBatchBytes) and the one table (codes.go) that turns the
// handlers' errors into gRPC codes. Probe is the container's health check.
//
// What callers must know: Run prints "listening ADDR" to out once the
// socket accepts connections, then "http ADDR" once the HTTP endpoint is
// on; scripts and tests wait for these lines. Every gRPC call and HTTP
// request is authenticated (package authn) before a handler runs; a
// collector on TCP without a client CA or token file refuses to start
// unless --insecure. Health reports NOT_SERVING while the store's writes
// fail. When ctx ends: health turns NOT_SERVING, agents' streams end after
// the batch each is storing, GracefulStop waits up to ShutdownGrace, and
// the store is flushed and checkpointed once the poller has returned — nothing
// acknowledged is lost. Run returns the error that stopped it.
//
//	cfg, err := server.Load(os.Args[1:], os.Getenv, os.Stderr)
//	if err != nil { … }
//	err = server.Run(ctx, cfg, log, os.Stdout)
//
// docs/collector.md#collectorserver describes the configuration, health,
// several collectors on one ClickHouse, authentication, the HTTP endpoint
// and the shutdown order in full.
package server
