package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Service is a gRPC service the collector serves (ingest.Service,
// query.Service): it only registers itself.
type Service interface {
	Register(grpc.ServiceRegistrar)
}

// NewGRPCServer returns a grpc.Server of the collector with services
// registered on it: keepalive policy, the receive limit of a batch
// (stratav1.MaxBatchBytes), the interceptors that turn domain errors into
// gRPC codes through codeTable, and the health service, which reports
// SERVING for the server ("") and for every registered service by name.
// Stop it with health.Shutdown, then GracefulStop (see Run).
//
// It has no credentials and authenticates nobody: it is for tests and
// in-process use. Run builds the collector's own with its TLS
// configuration, the authentication interceptors and its metrics.
func NewGRPCServer(log *slog.Logger, services ...Service) (*grpc.Server, *health.Server) {
	return newGRPCServer(log, nil, nil, 0, services...)
}

// newGRPCServer is NewGRPCServer with the collector's security (TLS on
// the listener, every call authenticated; nil for none) and metrics (nil
// for none), and every query call bounded by queryTimeout (0: none).
// Interceptors run metrics, then the status table, then the deadline,
// then authentication, so refusals count under their gRPC code.
func newGRPCServer(log *slog.Logger, sec *security, m *metrics, queryTimeout time.Duration, services ...Service) (*grpc.Server, *health.Server) {
	unary := []grpc.UnaryServerInterceptor{unaryStatus}
	stream := []grpc.StreamServerInterceptor{streamStatus}
	if queryTimeout > 0 {
		d := queryDeadline(queryTimeout)
		unary, stream = append(unary, d.unary), append(stream, d.stream)
	}
	var extra []grpc.ServerOption
	if m != nil {
		unary = append([]grpc.UnaryServerInterceptor{m.unary}, unary...)
		stream = append([]grpc.StreamServerInterceptor{m.stream}, stream...)
	}
	if sec != nil {
		unary, stream = append(unary, sec.unary), append(stream, sec.stream)
		if sec.tls != nil {
			extra = append(extra, grpc.Creds(credentials.NewTLS(sec.tls)))
		}
	}
	srv := grpc.NewServer(append(extra,
		grpc.KeepaliveParams(keepalive.ServerParameters{
			// Ping a connection after 30 s without traffic, so a node that
			// died without closing its socket is noticed within a minute.
			Time: 30 * time.Second,
			// Close the connection when a ping is not answered in 10 s.
			Timeout: 10 * time.Second,
			// MaxConnectionIdle and MaxConnectionAge stay infinite: an agent
			// keeps one Push stream open for its whole life, and forcing it
			// to reconnect would only make it replay its spool.
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			// Agents may ping every 10 s or slower; faster pings are abuse
			// and the connection is closed with ENHANCE_YOUR_CALM.
			MinTime: 10 * time.Second,
			// Agents ping between batches too, while no stream is open.
			PermitWithoutStream: true,
		}),
		// The agent cuts batches to this size; gRPC's 4 MiB default would
		// refuse the larger ones it sends after a long disconnection.
		grpc.MaxRecvMsgSize(stratav1.MaxBatchBytes),
		// Stop and GracefulStop return only after every handler has, so the
		// store can be closed right after them with no call still using it.
		grpc.WaitForHandlers(true),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	)...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	for _, s := range services {
		s.Register(srv)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for name, info := range srv.GetServiceInfo() {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
		if m != nil {
			m.knownMethods(name, info)
		}
	}
	log.Debug("grpc server built", "max_recv_bytes", stratav1.MaxBatchBytes)
	return srv, hs
}

// queryDeadline bounds every call of the query service by its duration:
// past it the call's context ends and the call returns DeadlineExceeded,
// so no client keeps the store busy longer. Ingest is not bounded: an
// agent's Push stream lives as long as the agent.
type queryDeadline time.Duration

// isQuery reports whether a full method name is the query service's.
func isQuery(method string) bool {
	return strings.HasPrefix(method, "/"+stratav1.QueryService_ServiceDesc.ServiceName+"/")
}

func (d queryDeadline) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !isQuery(info.FullMethod) {
		return h(ctx, req)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(d))
	defer cancel()
	resp, err := h(ctx, req)
	return resp, d.cause(ctx, err)
}

func (d queryDeadline) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !isQuery(info.FullMethod) {
		return h(srv, ss)
	}
	ctx, cancel := context.WithTimeout(ss.Context(), time.Duration(d))
	defer cancel()
	return d.cause(ctx, h(srv, deadlineStream{ServerStream: ss, ctx: ctx}))
}

// cause names the deadline as the reason of a call's error when it
// passed: a store interrupted by it says only that it was interrupted. A
// call that ends without an error after its deadline (a store that finished
// its last rows before it looked at the context) fails all the same, so
// that whether a call past its deadline fails does not depend on timing.
func (d queryDeadline) cause(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err == nil {
		return fmt.Errorf("%w: the collector's query timeout of %v passed", context.DeadlineExceeded, time.Duration(d))
	}
	return fmt.Errorf("%w: the collector's query timeout of %v passed: %v", context.DeadlineExceeded, time.Duration(d), err)
}

// deadlineStream is a ServerStream whose context carries the deadline.
type deadlineStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s deadlineStream) Context() context.Context { return s.ctx }

// withDeadline bounds every request of h by d (0: none), as queryDeadline
// bounds gRPC query calls.
func withDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
