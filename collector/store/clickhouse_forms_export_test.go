package store

import (
	"context"

	"github.com/stratatrace/strata/collector/store/ddl"
)

// OpenClickHouseForms opens the store as OpenClickHouse does, but creates
// tables and adds columns in forms f whatever the server's version: a
// database as an older collector or an older server left it.
func OpenClickHouseForms(ctx context.Context, opts ClickHouseOptions, f ddl.Features) (*ClickHouse, error) {
	opts.forms = &f
	return OpenClickHouse(ctx, opts)
}

// Forms are the column forms the store gives new tables and columns.
func (s *ClickHouse) Forms() ddl.Features { return s.forms }

// EchoLiteral has the server read s as the store writes it into SQL (the
// dialect's lit) and returns the string the server read.
func EchoLiteral(ctx context.Context, s *ClickHouse, v string) (string, error) {
	var got string
	err := s.c.query(ctx, "SELECT "+rowSelect+", "+s.lit(v), func(r *rowReader) { got = r.str() })
	return got, err
}
