package store

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
)

// querier answers every question the store is asked (TraceReader,
// SummaryReader, UIReader and JobStore's reads) for both backends. Each
// question has its file here: it builds its SQL from the backend's dialect,
// reads the rows the backend selects, and computes the answer in Go. DuckDB
// and ClickHouse each embed a querier, so its methods are theirs.
type querier struct {
	src      source
	log      *slog.Logger
	physMaps physMapCache // PhysMap's PFN indexes
	moments  momentCache  // what Moment reads of each app
}

// source is what a backend gives the querier: its dialect, a way to run a
// SELECT, the stamp of the physical map's cache, and whether it is closed.
type source interface {
	dialect
	// selectRows runs query and calls fn with each row until fn returns
	// false; it returns the query's error or the row's (row.Err).
	selectRows(ctx context.Context, query string, fn func(row) bool) error
	// physStamp changes whenever a batch of app may have been stored.
	physStamp(ctx context.Context, app string) (int64, error)
	closed() bool
}

// row reads the columns of one selected row in order. After an error
// (Err) every read returns a zero value.
type row interface {
	i8() int8
	u8() uint8
	i32() int32
	u32() uint32
	i64() int64
	u64() uint64
	f64() float64
	boolean() bool
	str() string
	blob() []byte
	Err() error
}

// check refuses a question asked of a closed store or of no application.
func (q *querier) check(appID string) error {
	if q.src.closed() {
		return ErrClosed
	}
	if appID == "" {
		return fmt.Errorf("%w: empty app_id", ErrInvalidQuery)
	}
	return nil
}

// each runs sel and calls fn with every row; a row that cannot be read
// ends the query with its error.
func (q *querier) each(ctx context.Context, sel string, fn func(row)) error {
	return q.src.selectRows(ctx, sel, func(r row) bool {
		fn(r)
		return r.Err() == nil
	})
}

// satAdd adds without wrapping: the store's sums of counters saturate at
// 2^64-1 rather than fail or wrap.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// isClosed reports whether ch is closed: a store's closing signal.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
