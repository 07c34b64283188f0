// Package answer is what the collector's store is asked and what it
// answers, without a backend: the reader interfaces a backend implements
// (TraceReader, UIReader), their questions (TraceQuery, MomentQuery,
// JobQuery, …), their answers (Heat, Moment, PhysMap, BlockCoverage, …),
// the sentinel errors they return, and the pure functions over the answers
// (HeatFiguresOf).
//
// It imports only the protos: the query service, the JSON forms and the
// user CLI use it without linking a database driver (the CLI builds with
// CGO_ENABLED=0). The backends are package store's; storetest.Contract holds
// every backend to these answers.
package answer
