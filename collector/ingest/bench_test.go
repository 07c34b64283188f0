package ingest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// BenchmarkPush is the collector's whole write path: 2 Mi pages (carried as
// runs) pushed over loopback TCP on one stream, pipelined, each batch
// acknowledged after COMMIT. It starts a collector in-process, or pushes to
// the one at $STRATA_BENCH_COLLECTOR (host:port) and then reports that
// process's peak RSS when $STRATA_BENCH_COLLECTOR_PID names it.
func BenchmarkPush(b *testing.B) {
	batches, pages, runs := storetest.BenchBatches(20, 100)
	external := os.Getenv("STRATA_BENCH_COLLECTOR")
	for i := range b.N {
		b.StopTimer()
		var cc *grpc.ClientConn
		if external != "" {
			var err error
			if cc, err = grpc.NewClient(external, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
		} else {
			cc = serve(b, "tcp", storetest.Open(b))
		}
		boot := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i) // never a duplicate
		for _, bt := range batches {
			bt.BootId = boot
		}
		b.StartTimer()
		start := time.Now()
		stream, err := stratav1.NewIngestServiceClient(cc).Push(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for _, bt := range batches {
				if err := stream.Send(bt); err != nil {
					return
				}
			}
			stream.CloseSend()
		}()
		for i := range batches {
			ack, err := stream.Recv()
			if err != nil || ack.GetSeq() != uint64(i+1) || ack.GetDuplicate() {
				b.Fatalf("ack %d = %v, %v", i, ack, err)
			}
		}
		took := time.Since(start)
		b.ReportMetric(float64(pages)/took.Seconds(), "pages/s")
		b.ReportMetric(float64(runs)/took.Seconds(), "runs/s")
		b.Logf("pushed %d pages (%d runs) in %v: %.0f pages/s", pages, runs, took.Round(time.Millisecond), float64(pages)/took.Seconds())
	}
	pid := "self"
	if external != "" {
		pid = os.Getenv("STRATA_BENCH_COLLECTOR_PID")
	}
	if pid != "" {
		rss := storetest.PeakRSSKiB(pid)
		b.ReportMetric(float64(rss)/1024, "peakRSS-MiB")
		what := "the external collector"
		if pid == "self" {
			what = "this process (client, server and store together)"
		}
		b.Logf("peak RSS of %s: %d MiB", what, rss/1024)
	}
}
