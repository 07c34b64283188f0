package query

import (
	"errors"
	"fmt"

	"github.com/stratatrace/strata/collector/answer"
)

// ErrRowBudget ends a Trace or Records stream that asked for no limit and
// reached the service's row budget (Bounds.MaxRows): the rows before it
// were sent, the rest were not.
var ErrRowBudget = errors.New("row budget reached")

// ErrOverBudget refuses a request whose limit exceeds the row budget; it
// is a answer.ErrInvalidQuery.
var ErrOverBudget = fmt.Errorf("limit above the row budget: %w", answer.ErrInvalidQuery)

// DefaultMaxRows is Bounds.MaxRows unless set: 2^20 rows, the web API's
// largest limit, a few hundred MiB of text in the CLI.
const DefaultMaxRows = 1 << 20

// Bounds limit what one request may cost the collector. The service
// applies MaxRows; the server applies the deadline to every query call
// (gRPC and HTTP) from its own configuration.
type Bounds struct {
	// MaxRows is the most rows (pages of Trace, records of Records) one
	// stream sends: a request without a limit gets this many and then
	// ErrRowBudget; a request with a larger limit is refused
	// (ErrOverBudget). 0 sets no bound.
	MaxRows uint32
}

// Option tunes New.
type Option func(*Service)

// WithBounds sets the service's bounds (by default MaxRows is
// DefaultMaxRows).
func WithBounds(b Bounds) Option { return func(s *Service) { s.bounds = b } }

// budget returns the limit to ask the store for a request's limit and
// whether the stream must stop at the budget, the store having been asked
// for one row more to tell a cut stream from one that fits.
func (s *Service) budget(limit uint32) (uint32, bool, error) {
	max := s.bounds.MaxRows
	switch {
	case max == 0:
		return limit, false, nil
	case limit > max:
		return 0, false, fmt.Errorf("%w: limit %d, the collector sends at most %d rows per request (its --query-max-rows)", ErrOverBudget, limit, max)
	case limit == 0:
		return max + 1, true, nil
	}
	return limit, false, nil
}

// bounded calls send for each row until the budget is spent: the row past
// it ends the stream with ErrRowBudget.
func bounded[T any](max uint32, cut bool, what string, send func(T) error) (func(T) error, func(error) error) {
	var n uint32
	var over = errors.New("over")
	fn := func(v T) error {
		if n++; cut && n > max {
			return over
		}
		return send(v)
	}
	end := func(err error) error {
		if errors.Is(err, over) {
			return fmt.Errorf("%w: the first %d %s were sent and the rest were not; ask with a limit (at most %d) or narrow the question by RDD and partition", ErrRowBudget, max, what, max)
		}
		return err
	}
	return fn, end
}
