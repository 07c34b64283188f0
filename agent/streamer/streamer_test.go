package streamer

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/agent/spool"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// sink is an ingest endpoint that keeps what it stored, de-duplicating on
// seq like the collector, so the test can count exactly.
type sink struct {
	stratav1.UnimplementedIngestServiceServer
	mu     sync.Mutex
	stored map[uint64]int // seq -> records
	seen   int            // batches received, duplicates included
	failAt int            // break the stream after this many batches (0 = never)
	refuse func(*stratav1.Batch) bool
}

func (k *sink) Push(stream grpc.BidiStreamingServer[stratav1.Batch, stratav1.Ack]) error {
	for {
		b, err := stream.Recv()
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.seen++
		if k.failAt > 0 && k.seen == k.failAt {
			k.mu.Unlock()
			return context.Canceled // drop the stream before acking
		}
		if k.refuse != nil && k.refuse(b) {
			k.mu.Unlock()
			return status.Error(codes.InvalidArgument, "batch has no records")
		}
		_, dup := k.stored[b.GetSeq()]
		if !dup {
			k.stored[b.GetSeq()] = len(b.GetRecords())
		}
		k.mu.Unlock()
		if err := stream.Send(&stratav1.Ack{Seq: b.GetSeq(), Duplicate: dup, Records: uint32(len(b.GetRecords()))}); err != nil {
			return err
		}
	}
}

func (k *sink) count() (batches, records int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range k.stored {
		records += n
	}
	return len(k.stored), records
}

func serve(t *testing.T, addr string, k *sink) (*grpc.Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	stratav1.RegisterIngestServiceServer(srv, k)
	go srv.Serve(lis)
	return srv, lis.Addr().String()
}

func appendBatches(t *testing.T, sp *spool.Spool, n, recs int) {
	t.Helper()
	for i := 0; i < n; i++ {
		b := &stratav1.Batch{NodeName: "n1", BootId: "b"}
		for j := 0; j < recs; j++ {
			b.Records = append(b.Records, &stratav1.Record{Pid: 1, Vaddr: uint64(j) << 12})
		}
		if err := sp.Append(b); err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCollectorVanishesNothingLostNothingTwice(t *testing.T) {
	sp, err := spool.Open(t.TempDir(), spool.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	k := &sink{stored: map[uint64]int{}, failAt: 7}
	srv, addr := serve(t, "127.0.0.1:0", k)

	st, err := New(sp, Config{Target: addr, Window: 4, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()

	appendBatches(t, sp, 20, 3)
	waitFor(t, "first 20 batches stored", func() bool { b, _ := k.count(); return b == 20 })
	waitFor(t, "first 20 batches acknowledged", func() bool { return sp.Stats().Pending == 0 })

	// The collector goes away; batches accepted meanwhile wait in the
	// spool while the streamer tries, and fails, to reconnect twice.
	srv.Stop()
	appendBatches(t, sp, 10, 5)
	tries := st.Stats().Reconnects
	waitFor(t, "two reconnects while the collector is down", func() bool { return st.Stats().Reconnects >= tries+2 })
	if got := sp.Stats().Pending; got != 10 {
		t.Fatalf("pending while collector is down = %d, want 10", got)
	}
	srv2, _ := serve(t, addr, k)
	defer srv2.Stop()
	waitFor(t, "all 30 batches stored", func() bool { b, _ := k.count(); return b == 30 })
	waitFor(t, "spool drained", func() bool { return sp.Stats().Pending == 0 })

	batches, records := k.count()
	if batches != 30 || records != 20*3+10*5 {
		t.Fatalf("stored %d batches / %d records, want 30 / 110", batches, records)
	}
	s := st.Stats()
	if s.Reconnects < 2 {
		t.Fatalf("reconnects = %d, want >= 2 (a broken stream and a stopped server)", s.Reconnects)
	}
	if s.Records < 110 {
		t.Fatalf("acked records = %d, want >= 110", s.Records)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestInvalidBatchIsDroppedNotResentForever(t *testing.T) {
	sp, err := spool.Open(t.TempDir(), spool.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	k := &sink{stored: map[uint64]int{}, refuse: func(b *stratav1.Batch) bool { return len(b.GetRecords()) == 0 }}
	srv, addr := serve(t, "127.0.0.1:0", k)
	defer srv.Stop()
	st, err := New(sp, Config{Target: addr, Window: 8, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.Run(ctx)
	appendBatches(t, sp, 3, 2)
	appendBatches(t, sp, 1, 0) // refused by the collector
	appendBatches(t, sp, 3, 2)
	waitFor(t, "the 6 valid batches", func() bool { b, _ := k.count(); return b == 6 })
	waitFor(t, "an empty spool", func() bool { return sp.Stats().Pending == 0 })
	if got := st.Stats().Rejected; got != 1 {
		t.Fatalf("rejected = %d, want 1", got)
	}
}
