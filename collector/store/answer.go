package store

import "github.com/stratatrace/strata/collector/answer"

// The questions the readers answer and their answers are package answer's,
// which links no backend (the user CLI imports it without cgo); callers
// spell them answer.X. These three names remain for callers not yet moved
// (collector/ingest's tests and the ClickHouse backend's tests).
type (
	TraceReader  = answer.TraceReader
	TraceQuery   = answer.TraceQuery
	RecordsQuery = answer.RecordsQuery
)
