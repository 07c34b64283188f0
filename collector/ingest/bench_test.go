package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// BenchmarkPush is the collector's whole write path: 2 Mi pages (carried as
// runs) pushed over loopback TCP on one stream, pipelined, each batch
// acknowledged after COMMIT.
func BenchmarkPush(b *testing.B) {
	batches, pages, runs := storetest.BenchBatches(20, 100)
	for range b.N {
		b.StopTimer()
		st := storetest.Open(b)
		cc := serve(b, "tcp", st)
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
			if err != nil || ack.GetSeq() != uint64(i+1) {
				b.Fatalf("ack %d = %v, %v", i, ack, err)
			}
		}
		took := time.Since(start)
		b.ReportMetric(float64(pages)/took.Seconds(), "pages/s")
		b.ReportMetric(float64(runs)/took.Seconds(), "runs/s")
		b.Logf("pushed %d pages (%d runs) in %v: %.0f pages/s", pages, runs, took.Round(time.Millisecond), float64(pages)/took.Seconds())
	}
}
