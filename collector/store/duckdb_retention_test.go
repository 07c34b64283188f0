package store_test

import (
	"testing"

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
	open := func(env storetest.Env) store.Store { s, _ := duckBackend.New(t, env); return s }
	_, r0, r1 := storetest.RetainOneByteLess(t, open, 2800)
	t.Logf("%d bytes before, %d after dropping the oldest of 3 days", r0.BytesBefore, r1.BytesAfter)
}
