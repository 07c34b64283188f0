// Package server is the collector's composition root: it loads the
// configuration (defaults, then a JSON file, then STRATA_COLLECTOR_*
// environment variables, then flags, then Validate), checks its
// preconditions, opens the store, serves ingest, query and health on one
// grpc.Server, runs the job-history poller, and stops gracefully.
//
// It owns the grpc.Server (NewGRPCServer): keepalive, the receive limit of
// one batch (stratav1.MaxBatchBytes, the limit the agent cuts batches to),
// the health service, and the interceptors that turn the handlers' plain
// errors into gRPC codes through the one table in codes.go. ingest and
// query only register their services.
//
// Run prints one line, "listening ADDR", to its out writer once the socket
// accepts connections, so scripts and tests can wait for it (with --listen
// 127.0.0.1:0 ADDR carries the chosen port). The health service reports
// SERVING for the server ("") and for each registered service by name —
// except while the store's writes fail (disk full, say): from the first
// failed write until the next one succeeds, the server and the ingest
// service report NOT_SERVING and the collector logs the change once each
// way (storehealth.go). The store reports every write's outcome itself
// (store.Options.OnWrite), including those of writes whose caller had
// stopped waiting.
//
// --store selects the backend: duckdb (embedded, in --store-dir) or
// clickhouse (--clickhouse-url, -database, -user, -password, -cluster;
// the password best from STRATA_COLLECTOR_CLICKHOUSE_PASSWORD). Several
// collectors may share one ClickHouse: they keep no state of their own, an
// agent may fail over to any of them, and their history pollers share the
// jobs through claims in the store (each job analysed by one collector,
// --collector-id naming it in the claims). With --retention-max-age or
// --retention-max-bytes a goroutine applies retention at start and every
// --retention-interval (store.Retainer); it stops with the poller.
//
// With --history sources the poller (collector/history) analyses every
// finished job with the heuristics engine (thresholds from --heuristics),
// adding the cross-layer heuristics when the store holds traces of the
// job's application: the analyzer builds their TraceSummary from the
// store's SummaryReader, with the NUMA node count and page size the
// machines' agents reported.
//
// # Who may connect
//
// Every gRPC call and HTTP request is authenticated (package authn) before
// a handler runs: a client certificate verified against --tls-client-ca,
// its role in the subject's OU, or a bearer token from --token-file (role
// client). methodRoles (security.go) says what each role may call: agents
// push, clients query, every identity may ask for health. Refusals are
// Unauthenticated or PermissionDenied through the code table, and counted
// in strata_collector_auth_denied_total. A collector on TCP without a
// client CA or a token file refuses to start unless --insecure; on a Unix
// socket (mode 0600) the file mode is the authentication. Probe is the
// container's health check: it asks this collector for health with the
// collector's own certificate or token.
//
// # The HTTP endpoint
//
// With --http ADDR (over TLS when the collector has a certificate) the
// collector serves /metrics (client role; its own registry, see
// metrics.go), /healthz (any identity; 200 while gRPC health is SERVING,
// 503 while store writes fail or during the drain) and the handlers other
// packages mount with the Run option WithHTTPHandler(pattern, build), all
// behind the same authentication: a mounted handler (the web UI) sees
// only requests of the client role, the identity in the request's context
// (authn.IdentityFrom). build receives HTTPDeps: the query service to call
// in-process, the store, a logger and the metrics registry. Run prints
// "http ADDR" after "listening ADDR"; the endpoint stops after the gRPC
// drain, so probes see NOT_SERVING meanwhile.
//
// # Shutdown
//
// When ctx ends, health turns NOT_SERVING, agents' Push streams end with
// Unavailable after the batch each is storing (ingest.Service.Drain), the
// poller is told to stop, GracefulStop lets running calls finish for up to
// ShutdownGrace (then Stop cuts the rest), and once the poller has
// returned the store is flushed and checkpointed. Nothing acknowledged is
// lost; what was not acknowledged the agents replay.
package server
