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
