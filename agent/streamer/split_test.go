package streamer

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// strictSink is an ingest endpoint with the collector's contract: it takes
// messages up to stratav1.MaxBatchBytes, refuses a batch whole
// (InvalidArgument, nothing stored) when a record is bad or a run is over
// stratav1.MaxRunPages, de-duplicates on seq, and keeps every record it
// stored so the test can check each arrived exactly once.
type strictSink struct {
	stratav1.UnimplementedIngestServiceServer
	mu      sync.Mutex
	seqs    map[uint64]bool
	stored  map[uint64]int // record key (pid<<32 | index) -> times stored
	pages   uint64
	breakAt int // break the stream after this many stored batches (0 = never)
	n       int
}

func newStrictSink() *strictSink {
	return &strictSink{seqs: map[uint64]bool{}, stored: map[uint64]int{}}
}

func recKey(r *stratav1.Record) uint64 { return uint64(r.GetPid())<<32 | r.GetVaddr()>>12 }

func (k *strictSink) Push(stream grpc.BidiStreamingServer[stratav1.Batch, stratav1.Ack]) error {
	for {
		b, err := stream.Recv()
		if err != nil {
			return err
		}
		for i, r := range b.GetRecords() {
			if r.GetBlock().GetAppId() == "" {
				return status.Errorf(codes.InvalidArgument, "record %d: missing block app_id", i)
			}
			for _, run := range r.GetRuns() {
				if run.GetCount() > stratav1.MaxRunPages {
					return status.Errorf(codes.InvalidArgument, "record %d: run of %d pages", i, run.GetCount())
				}
			}
		}
		k.mu.Lock()
		if k.breakAt > 0 && k.n == k.breakAt {
			k.breakAt = 0
			k.mu.Unlock()
			return status.Error(codes.Unavailable, "collector restarting")
		}
		dup := k.seqs[b.GetSeq()]
		if !dup {
			k.n++
			k.seqs[b.GetSeq()] = true
			for _, r := range b.GetRecords() {
				k.stored[recKey(r)]++
				for _, run := range r.GetRuns() {
					k.pages += uint64(run.GetCount())
				}
			}
		}
		k.mu.Unlock()
		if err := stream.Send(&stratav1.Ack{Seq: b.GetSeq(), Duplicate: dup, Records: uint32(len(b.GetRecords()))}); err != nil {
			return err
		}
	}
}

func (k *strictSink) counts() (records, twice int, pages uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range k.stored {
		records++
		if n > 1 {
			twice++
		}
	}
	return records, twice, k.pages
}

func serveStrict(t *testing.T, k *strictSink) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(stratav1.MaxBatchBytes))
	stratav1.RegisterIngestServiceServer(srv, k)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func runStreamer(t *testing.T, sp *spool.Spool, addr string) *Streamer {
	t.Helper()
	st, err := New(sp, Config{Target: addr, Window: 4, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { st.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return st
}

func goodRecord(pid uint32, i int) *stratav1.Record {
	return &stratav1.Record{Pid: pid, Vaddr: uint64(i) << 12, Length: 4096, PageSize: 4096,
		Block: &stratav1.SparkBlock{AppId: "app", BlockId: fmt.Sprintf("rdd_1_%d", i)}}
}

// TestRefusedBatchLosesOnlyTheBadRecord is the regression for a refused
// batch taking its neighbours' records with it: one record the collector
// refuses among 80 good ones; every good record is stored exactly once, the
// bad one is dropped and counted, and the spool drains.
func TestRefusedBatchLosesOnlyTheBadRecord(t *testing.T) {
	sp, err := spool.Open(t.TempDir(), spool.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	k := newStrictSink()
	k.breakAt = 5 // and the collector restarts half-way through the bisection
	st := runStreamer(t, sp, serveStrict(t, k))

	add := func(pid uint32, n int, bad int) {
		b := &stratav1.Batch{NodeName: "n1", BootId: "b"}
		for i := range n {
			r := goodRecord(pid, i)
			if i == bad {
				r.Block.AppId = "" // the collector refuses this one
			}
			b.Records = append(b.Records, r)
		}
		if err := sp.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 3, -1)
	add(2, 81, 17)
	add(3, 3, -1)
	waitFor(t, "an empty spool", func() bool { return sp.Stats().Pending == 0 })
	recs, twice, _ := k.counts()
	if recs != 3+80+3 || twice != 0 {
		t.Fatalf("stored %d records (%d more than once), want 86 exactly once", recs, twice)
	}
	if s := st.Stats(); s.RecordsDropped != 1 || s.Split != 1 {
		t.Fatalf("stats = %+v, want 1 record dropped, 1 batch split", s)
	}
}

// TestOversizeBatchIsSplitNotResentForever is the regression for a batch
// over the collector's limits (spooled by an agent that did not cut by
// size): a 90 MiB batch of a block's accesses and a run of 2^19 pages
// arrive whole, as pieces, with every page, and nothing is dropped.
func TestOversizeBatchIsSplitNotResentForever(t *testing.T) {
	sp, err := spool.Open(t.TempDir(), spool.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	k := newStrictSink()
	st := runStreamer(t, sp, serveStrict(t, k))

	rng := rand.New(rand.NewPCG(7, 8))
	// A block of 32768 scattered pages: one run whose deltas take ~120 KiB.
	blk := &stratav1.PageRun{Vaddr: 0x7f0000000000, Count: 32768, State: 1, Pfn: 1 << 20}
	for range blk.Count - 1 {
		blk.PfnDeltas = append(blk.PfnDeltas, int64(rng.IntN(1<<28))-(1<<27))
	}
	big := &stratav1.Batch{NodeName: "n1", BootId: "b"}
	var want uint64
	for i := range 700 { // the ALLOC and its accesses, each with the block's pages
		r := goodRecord(4, i)
		r.Runs = []*stratav1.PageRun{blk}
		big.Records = append(big.Records, r)
		want += uint64(blk.Count)
	}
	long := &stratav1.Batch{NodeName: "n1", BootId: "b", Records: []*stratav1.Record{goodRecord(5, 0)}}
	long.Records[0].Runs = []*stratav1.PageRun{{Vaddr: 0x7e0000000000, Count: 1 << 19, NumaNode: -1}} // untouched 2 GiB
	want += 1 << 19
	if err := sp.Append(big); err != nil {
		t.Fatal(err)
	}
	if err := sp.Append(long); err != nil {
		t.Fatal(err)
	}
	if sz := sp.Stats().PendingBytes; sz < 1<<26 {
		t.Fatalf("spooled %d bytes; the test needs a batch over 64 MiB", sz)
	}
	waitFor(t, "an empty spool", func() bool { return sp.Stats().Pending == 0 })
	recs, twice, pages := k.counts()
	if recs != 701 || twice != 0 || pages != want {
		t.Fatalf("stored %d records (%d twice), %d pages; want 701 once, %d pages", recs, twice, pages, want)
	}
	if s := st.Stats(); s.RecordsDropped != 0 || s.Split != 2 || s.Rejected != 0 {
		t.Fatalf("stats = %+v, want 2 batches split, nothing refused or dropped", s)
	}
}

func TestPieceSeqs(t *testing.T) {
	seen := map[uint64]bool{}
	for _, orig := range []uint64{1, 2, 1_700_000_000_000_000, 1_700_000_000_000_001} {
		for k := uint64(2); k < 4096; k++ {
			s := pieceSeq(orig, k)
			if s>>63 != 1 || seen[s] {
				t.Fatalf("pieceSeq(%d, %d) = %#x: top bit clear or repeated", orig, k, s)
			}
			seen[s] = true
		}
	}
	if pieceSeq(5, 9) != pieceSeq(5, 9) {
		t.Fatal("pieceSeq is not deterministic")
	}
}
