package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// Size retention on DuckDB frees the blocks of whole row groups (122,880
// rows) a drop deletes, so its test needs days of a few row groups each:
// three days of ~260,000 runs. A bound one byte below the store's size
// drops the oldest day alone, and the store is smaller after it.
func TestDuckDBRetentionBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: stores 800,000 runs (-short)")
	}
	ctx := context.Background()
	base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	s, _ := duckBackend.New(t, storetest.Env{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	const days, perDay, recs = 3, 2, 2800
	storetest.RetentionDays(s, t, days, perDay, recs, base, &now)
	now.Store(base.UnixNano())
	r0, err := s.Retain(ctx, store.Retention{})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := s.Retain(ctx, store.Retention{MaxBytes: r0.BytesBefore - 1})
	if err != nil || r1.BytesAfter > r0.BytesBefore-1 || r1.KeptOverSize {
		t.Fatalf("retain to %d bytes = %+v, %v", r0.BytesBefore-1, r1, err)
	}
	storetest.WantDays(t, s, days, perDay*recs, 1, "size one byte less")
	t.Logf("%d bytes before, %d after dropping the oldest of 3 days", r0.BytesBefore, r1.BytesAfter)
}
