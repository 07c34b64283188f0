package ingest_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/ingest"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// transports are the two ways every scenario runs: a real loopback TCP
// socket, and in-process bufconn.
var transports = map[string]func(t testing.TB) (net.Listener, []grpc.DialOption, string){
	"tcp": func(t testing.TB) (net.Listener, []grpc.DialOption, string) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return lis, nil, lis.Addr().String()
	},
	"bufconn": func(t testing.TB) (net.Listener, []grpc.DialOption, string) {
		lis := bufconn.Listen(1 << 20)
		dial := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
		return lis, []grpc.DialOption{dial}, "passthrough:///bufconn"
	},
}

// serve starts ingest over st on the transport and returns a client conn.
func serve(t testing.TB, transport string, st ingest.Appender) *grpc.ClientConn {
	t.Helper()
	lis, opts, target := transports[transport](t)
	srv, _ := server.NewGRPCServer(slog.New(slog.DiscardHandler), ingest.New(st, slog.New(slog.DiscardHandler)))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func countPages(t *testing.T, st answer.TraceReader) int {
	t.Helper()
	n := 0
	if err := st.Trace(context.Background(), answer.TraceQuery{AppID: storetest.App}, func(*stratav1.TracePage) error {
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPush(t *testing.T) {
	for name := range transports {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t)
			cc := serve(t, name, st)

			// Health says SERVING.
			h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health = %v, %v", h, err)
			}

			// Pipelined: all batches sent before any ack is read; a replay of seq 1
			// in the middle is acknowledged as a duplicate, in order.
			stream, err := stratav1.NewIngestServiceClient(cc).Push(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seqs := []uint64{1, 2, 1, 3}
			for _, s := range seqs {
				if err := stream.Send(storetest.Sample(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.CloseSend(); err != nil {
				t.Fatal(err)
			}
			for i, s := range seqs {
				ack, err := stream.Recv()
				if err != nil {
					t.Fatalf("ack %d: %v", i, err)
				}
				want := &stratav1.Ack{Seq: s, Duplicate: i == 2, Records: 3}
				if ack.GetSeq() != want.Seq || ack.GetDuplicate() != want.Duplicate || ack.GetRecords() != want.Records {
					t.Fatalf("ack %d = %v, want %v", i, ack, want)
				}
			}
			if _, err := stream.Recv(); err == nil {
				t.Fatal("stream did not end after the last ack")
			}
			if n := countPages(t, st); n != 3*storetest.SamplePages {
				t.Fatalf("stored %d pages, want %d (three distinct batches)", n, 3*storetest.SamplePages)
			}

			// A malformed batch ends the stream with InvalidArgument; the batch
			// acknowledged before it stays stored.
			stream, err = stratav1.NewIngestServiceClient(cc).Push(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bad := storetest.Sample(5)
			bad.NodeName = ""
			stream.Send(storetest.Sample(4))
			stream.Send(bad)
			if ack, err := stream.Recv(); err != nil || ack.GetSeq() != 4 {
				t.Fatalf("ack before the bad batch = %v, %v", ack, err)
			}
			_, err = stream.Recv()
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "missing node_name") {
				t.Fatalf("bad batch: %v, want InvalidArgument naming node_name", err)
			}
			if n := countPages(t, st); n != 4*storetest.SamplePages {
				t.Fatalf("stored %d pages, want %d", n, 4*storetest.SamplePages)
			}
		})
	}
}

func TestPushStoreClosed(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	cc := serve(t, "tcp", st)
	stream, err := stratav1.NewIngestServiceClient(cc).Push(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(storetest.Sample(1))
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("push to closed store: %v, want Unavailable", err)
	}
}
