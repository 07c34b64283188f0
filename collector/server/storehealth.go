package server

import (
	"log/slog"
	"sync"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// ingestService is the health name of the ingest service.
var ingestService = stratav1.IngestService_ServiceDesc.ServiceName

// storeHealth turns the store's write outcomes (store.Options.OnWrite)
// into the health service's answer: while writes fail, the server ("")
// and the ingest service are NOT_SERVING — a collector that cannot store
// what it receives is not serving, whatever its socket says — and the
// first write that succeeds makes them SERVING again. The query service
// keeps its status: reads may still work. Each change is logged once, the
// failure with its error and the recovery with how many writes failed.
type storeHealth struct {
	log *slog.Logger

	mu       sync.Mutex
	hs       *health.Server // nil until attach
	failing  bool
	failures uint64 // writes failed since the last success
}

func newStoreHealth(log *slog.Logger) *storeHealth {
	return &storeHealth{log: log.With("component", "store-health")}
}

// attach starts reporting to hs, with the state seen so far.
func (h *storeHealth) attach(hs *health.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hs = hs
	h.set()
}

// observe is the store's OnWrite: it runs on the writer goroutine and only
// takes a mutex the health server's own calls never hold.
func (h *storeHealth) observe(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failures++
		if !h.failing {
			h.failing = true
			h.log.Error("store writes failing; ingest NOT_SERVING until one succeeds", "error", err)
			h.set()
		}
		return
	}
	if h.failing {
		h.log.Info("store writes succeed again; ingest SERVING", "failed_writes", h.failures)
		h.failing = false
		h.set()
	}
	h.failures = 0
}

// set publishes the state; after health.Shutdown the server ignores it.
func (h *storeHealth) set() {
	if h.hs == nil {
		return
	}
	st := healthpb.HealthCheckResponse_SERVING
	if h.failing {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	h.hs.SetServingStatus("", st)
	h.hs.SetServingStatus(ingestService, st)
}
