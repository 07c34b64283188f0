package query

import "context"

// known returns nil when the store holds records of app, and
// answer.ErrNotFound naming it ("application X: not found: no records")
// when it holds none: a per-app question about an application the
// collector never heard of is an error (gRPC NotFound, HTTP 404), not an
// empty answer. The per-app answers ask it only when they came back empty
// (emptyOf), since it reads the summary of every application.
func (s *Service) known(ctx context.Context, app string) error {
	_, err := s.App(ctx, app)
	return err
}

// emptyOf is err, the error of a per-app answer of n items, or when the
// answer came back empty without one, known's.
func (s *Service) emptyOf(ctx context.Context, app string, n int, err error) error {
	if err == nil && n == 0 {
		return s.known(ctx, app)
	}
	return err
}
