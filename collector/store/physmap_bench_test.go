package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// BenchmarkPhysMap measures the physical memory map over 100 k stored runs
// (2.2 Mi pages): building the PFN index (the first map of an app, or the
// first after a new batch), a whole-machine map and a one-MiB zoom from the
// built index, each as a ratio to Numa over the same pages (the baseline,
// measured in the same run).
func BenchmarkPhysMap(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b)
	batches, pages, runs := storetest.BenchBatches(22, 100)
	for _, bt := range batches {
		if _, err := s.Append(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
	timeIt := func(fn func() error) time.Duration {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	q := answer.PhysMapQuery{AppID: "app-bench"}
	zoom := answer.PhysMapQuery{AppID: "app-bench", From: 1 << 20, To: 1<<20 + 256}
	var numa, cold, whole, zoomed time.Duration
	for range b.N {
		numa += timeIt(func() error { _, err := s.Numa(ctx, "app-bench"); return err })
		store.DropPhysMaps(s)
		cold += timeIt(func() error { _, err := s.PhysMap(ctx, q); return err })
		whole += timeIt(func() error { _, err := s.PhysMap(ctx, q); return err })
		zoomed += timeIt(func() error { _, err := s.PhysMap(ctx, zoom); return err })
	}
	n := time.Duration(b.N)
	numa, cold, whole, zoomed = numa/n, cold/n, whole/n, zoomed/n
	b.ReportMetric(float64(cold.Milliseconds()), "build-ms")
	b.ReportMetric(float64(whole.Microseconds())/1000, "whole-ms")
	b.ReportMetric(float64(zoomed.Microseconds())/1000, "zoom-ms")
	b.ReportMetric(cold.Seconds()/numa.Seconds(), "build/numa")
	b.ReportMetric(whole.Seconds()/numa.Seconds(), "whole/numa")
	b.Logf("%d runs, %d pages: numa %v; map index build %v (%.2fx numa), whole machine %v (%.3fx), 1 MiB zoom %v (%.3fx)",
		runs, pages, numa.Round(time.Millisecond), cold.Round(time.Millisecond), cold.Seconds()/numa.Seconds(),
		whole.Round(time.Microsecond), whole.Seconds()/numa.Seconds(), zoomed.Round(time.Microsecond), zoomed.Seconds()/numa.Seconds())
}
