package server_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// A collector started with --retention-max-age drops, at once, the traces
// received before the bound and keeps the newer ones.
func TestRetentionOnTimer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var now time.Time
	st, err := store.Open(ctx, store.Options{Dir: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	now = time.Now().Add(-48 * time.Hour)
	storetest.MustAppend(t, st, storetest.Sample(1))
	now = time.Now()
	storetest.MustAppend(t, st, storetest.Sample(2))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c := servertest.StartWith(t, nil, nil, func(cfg *server.Config) {
		cfg.StoreDir = dir
		cfg.RetentionMaxAge = server.Duration(24 * time.Hour)
		cfg.RetentionInterval = server.Duration(time.Hour)
	})
	q := stratav1.NewQueryServiceClient(c.Dial(t))
	deadline := time.Now().Add(30 * time.Second)
	for {
		stream, err := q.Records(ctx, &stratav1.RecordsRequest{AppId: storetest.App})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			if _, err := stream.Recv(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 3 {
			return // seq 1 dropped, seq 2 kept
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records 30s after start, want the newer batch's 3", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
