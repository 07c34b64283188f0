package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// smallFS mounts a tmpfs of size bytes under the test's temporary
// directory, unmounted at cleanup (registered first, so it runs after the
// cleanups of anything started on it).
func smallFS(t *testing.T, size int) string {
	t.Helper()
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func healthOf(t *testing.T, cc *grpc.ClientConn, svc string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	h, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		t.Fatalf("health of %q: %v", svc, err)
	}
	return h.GetStatus()
}

// TestHealthFollowsStoreWrites fills the store's disk: the batch that
// cannot be stored ends its stream with an error (not an ack), the server
// and the ingest service turn NOT_SERVING while the query service stays
// SERVING, and once space is freed the next batch is stored and health is
// SERVING again.
func TestHealthFollowsStoreWrites(t *testing.T) {
	fs := smallFS(t, 24<<20)
	c := servertest.StartWith(t, nil, nil, func(cfg *server.Config) { cfg.StoreDir = filepath.Join(fs, "store") })
	cc := c.Dial(t)
	ingest := stratav1.IngestService_ServiceDesc.ServiceName
	query := stratav1.QueryService_ServiceDesc.ServiceName
	push := func(seq uint64, filler int) (*stratav1.Ack, error) {
		stream, err := stratav1.NewIngestServiceClient(cc).Push(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := storetest.Sample(seq)
		if filler > 0 {
			rnd := make([]byte, filler)
			rand.Read(rnd)
			b.Records[0].ResolveError = hex.EncodeToString(rnd) // incompressible in the WAL
		}
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
		return stream.Recv()
	}
	if ack, err := push(1, 0); err != nil || ack.GetSeq() != 1 {
		t.Fatalf("first batch: %v, %v", ack, err)
	}

	// Leave about 4 MiB free, then push 1 MiB batches until one fails.
	var st unix.Statfs_t
	if err := unix.Statfs(fs, &st); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(fs, "filler")
	if err := os.WriteFile(fill, make([]byte, int64(st.Bavail)*st.Bsize-4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	for {
		seq++
		_, err := push(seq, 512<<10)
		if err == nil {
			if seq > 20 {
				t.Fatal("20 MiB stored on a disk with 4 MiB free")
			}
			continue
		}
		if status.Code(err) != codes.Internal {
			t.Fatalf("batch on a full disk: %v, want Internal", err)
		}
		t.Logf("batch %d refused: %v", seq, err)
		break
	}
	for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": healthpb.HealthCheckResponse_NOT_SERVING, ingest: healthpb.HealthCheckResponse_NOT_SERVING,
		query: healthpb.HealthCheckResponse_SERVING,
	} {
		if got := healthOf(t, cc, svc); got != want {
			t.Fatalf("while writes fail, health of %q = %v, want %v", svc, got, want)
		}
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if ack, err := push(seq, 0); err != nil || ack.GetSeq() != seq || ack.GetDuplicate() {
		t.Fatalf("batch %d after space was freed: %v, %v; want stored", seq, ack, err)
	}
	for _, svc := range []string{"", ingest, query} {
		if got := healthOf(t, cc, svc); got != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("after a stored batch, health of %q = %v, want SERVING", svc, got)
		}
	}
}
