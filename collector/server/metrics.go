package server

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/history"
	"github.com/stratatrace/strata/collector/ingest"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Version is the collector's version, set by the build
// (-ldflags "-X github.com/stratatrace/strata/collector/server.Version=...").
var Version = "dev"

// metrics are the collector's own Prometheus metrics, on a registry of
// their own (served at /metrics with the Go runtime's and the process's).
type metrics struct {
	reg *prometheus.Registry

	batches      *prometheus.CounterVec // result: stored, duplicate, refused, error
	records      prometheus.Counter
	bytes        prometheus.Counter
	appendTime   prometheus.Histogram
	storeWrites  *prometheus.CounterVec // result: ok, error
	storeFailing prometheus.Gauge
	rpcs         *prometheus.CounterVec // method, code
	pushStreams  prometheus.Gauge
	denied       *prometheus.CounterVec // endpoint, reason

	polls    *prometheus.CounterVec // result: ok, error
	jobs     *prometheus.CounterVec // outcome
	pollTime prometheus.Histogram
	lastPoll atomic.Int64 // unix nanoseconds of the last poll's end
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_build_info",
		Help: "Always 1; the labels say which build runs."}, []string{"component", "version", "go_version"})
	build.WithLabelValues("collector", Version, runtime.Version()).Set(1)
	f(build)
	m.batches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_ingest_batches_total",
		Help: "Batches received from agents, by result: stored, duplicate (stored before, acked again), refused (invalid), error (store failed)."},
		[]string{"result"})
	m.records = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_collector_ingest_records_total",
		Help: "Records stored from agents' batches (duplicates not counted)."})
	m.bytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_collector_ingest_bytes_total",
		Help: "Encoded bytes of the batches received."})
	m.appendTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_collector_ingest_append_seconds",
		Help: "Time to store one batch durably, from receipt to ack.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	m.storeWrites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_store_writes_total",
		Help: "Store writes (batches, job results) that reached the database, by result: ok or error."}, []string{"result"})
	m.storeFailing = prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_collector_store_writes_failing",
		Help: "1 from a failed store write until one succeeds (ingest is NOT_SERVING meanwhile)."})
	m.rpcs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_grpc_requests_total",
		Help: "gRPC calls finished, by method and status code."}, []string{"method", "code"})
	m.pushStreams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_collector_push_streams",
		Help: "Agents' Push streams open now."})
	m.denied = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_auth_denied_total",
		Help: "Requests refused by authentication, by endpoint (grpc, http) and reason (unauthenticated, forbidden)."},
		[]string{"endpoint", "reason"})
	for _, r := range []string{"stored", "duplicate", "refused", "error"} {
		m.batches.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.storeWrites.WithLabelValues(r)
	}
	for _, e := range []string{"grpc", "http"} {
		for _, r := range []string{"unauthenticated", "forbidden"} {
			m.denied.WithLabelValues(e, r)
		}
	}
	for _, c := range []prometheus.Collector{m.batches, m.records, m.bytes, m.appendTime, m.storeWrites,
		m.storeFailing, m.rpcs, m.pushStreams, m.denied} {
		f(c)
	}
	return m
}

// authDenied counts one refusal.
func (m *metrics) authDenied(endpoint string, err error) {
	reason := "unauthenticated"
	if errors.Is(err, authn.ErrForbidden) || errors.Is(err, authn.ErrNoRole) {
		reason = "forbidden"
	}
	m.denied.WithLabelValues(endpoint, reason).Inc()
}

// storeWrite counts one store write's outcome (store.Options.OnWrite).
func (m *metrics) storeWrite(err error) {
	if err != nil {
		m.storeWrites.WithLabelValues("error").Inc()
		m.storeFailing.Set(1)
		return
	}
	m.storeWrites.WithLabelValues("ok").Inc()
	m.storeFailing.Set(0)
}

// watchHistory registers the poller's metrics and returns its OnPoll.
// Lag is the time since the last poll ended (since start before the
// first): how stale the analyses may be.
func (m *metrics) watchHistory(interval time.Duration) func(history.Stats, error, time.Duration) {
	m.polls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_history_polls_total",
		Help: "Job-history polls, by result: ok, or error (a job could not be analysed or stored; retried next poll)."}, []string{"result"})
	m.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_collector_history_jobs_total",
		Help: "Jobs seen by the history poller, by outcome: analyzed, known, deferred, ignored."}, []string{"outcome"})
	m.pollTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_collector_history_poll_seconds",
		Help: "Duration of one job-history poll.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)})
	m.lastPoll.Store(time.Now().UnixNano())
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_collector_history_lag_seconds",
		Help:        "Seconds since the last job-history poll ended (since start before the first); above the interval the poller is behind.",
		ConstLabels: prometheus.Labels{"interval": interval.String()}},
		func() float64 { return time.Since(time.Unix(0, m.lastPoll.Load())).Seconds() })
	for _, r := range []string{"ok", "error"} {
		m.polls.WithLabelValues(r)
	}
	for _, o := range []string{"analyzed", "known", "deferred", "ignored"} {
		m.jobs.WithLabelValues(o)
	}
	m.reg.MustRegister(m.polls, m.jobs, m.pollTime, lag)
	return func(st history.Stats, err error, took time.Duration) {
		m.lastPoll.Store(time.Now().UnixNano())
		m.pollTime.Observe(took.Seconds())
		if err != nil {
			m.polls.WithLabelValues("error").Inc()
		} else {
			m.polls.WithLabelValues("ok").Inc()
		}
		m.jobs.WithLabelValues("analyzed").Add(float64(st.Analyzed))
		m.jobs.WithLabelValues("known").Add(float64(st.Known))
		m.jobs.WithLabelValues("deferred").Add(float64(st.Deferred))
		m.jobs.WithLabelValues("ignored").Add(float64(st.Ignored))
	}
}

// appender counts what ingest stores.
func (m *metrics) appender(a ingest.Appender) ingest.Appender { return &countingAppender{a: a, m: m} }

type countingAppender struct {
	a ingest.Appender
	m *metrics
}

func (c *countingAppender) Append(ctx context.Context, b *stratav1.Batch) (store.AppendResult, error) {
	c.m.bytes.Add(float64(proto.Size(b)))
	start := time.Now()
	res, err := c.a.Append(ctx, b)
	switch {
	case errors.Is(err, store.ErrInvalidBatch):
		c.m.batches.WithLabelValues("refused").Inc()
	case err != nil:
		c.m.batches.WithLabelValues("error").Inc()
	case res.Duplicate:
		c.m.batches.WithLabelValues("duplicate").Inc()
	default:
		c.m.appendTime.Observe(time.Since(start).Seconds())
		c.m.batches.WithLabelValues("stored").Inc()
		c.m.records.Add(float64(res.Records))
	}
	return res, err
}

// knownMethods starts every method's OK series at zero, so that rates
// exist before the first call.
func (m *metrics) knownMethods(service string, info grpc.ServiceInfo) {
	for _, md := range info.Methods {
		m.rpcs.WithLabelValues(shortMethod("/"+service+"/"+md.Name), "OK")
	}
}

// shortMethod is "Service/Method" of a gRPC full method name.
func shortMethod(full string) string {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full, "."); i >= 0 {
		return full[i+1:]
	}
	return full
}

func (m *metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	m.rpcs.WithLabelValues(shortMethod(info.FullMethod), status.Code(err).String()).Inc()
	return resp, err
}

func (m *metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	push := info.FullMethod == "/"+stratav1.IngestService_ServiceDesc.ServiceName+"/Push"
	if push {
		m.pushStreams.Inc()
		defer m.pushStreams.Dec()
	}
	err := h(srv, ss)
	m.rpcs.WithLabelValues(shortMethod(info.FullMethod), status.Code(err).String()).Inc()
	return err
}
