package ingest

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// MaxBatchBytes is the largest message the server accepts. A batch of 10,000
// records with a few runs each is a few MiB; gRPC's 4 MiB default would
// refuse the larger ones an agent sends after a long disconnection.
const MaxBatchBytes = 64 << 20

// NewServer returns the grpc.Server all collector services register on,
// with the health service registered and reporting SERVING for the whole
// server. Stop it with health.Shutdown, then GracefulStop (see server.Run).
func NewServer(log *slog.Logger) (*grpc.Server, *health.Server) {
	srv := grpc.NewServer(
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
		grpc.MaxRecvMsgSize(MaxBatchBytes),
		// Stop and GracefulStop return only after every handler has, so the
		// store can be closed right after them with no call still using it.
		grpc.WaitForHandlers(true),
		grpc.ChainUnaryInterceptor(unaryStatus),
		grpc.ChainStreamInterceptor(streamStatus),
	)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	log.Debug("grpc server built", "max_recv_bytes", MaxBatchBytes)
	return srv, hs
}
