// Package query is Strata's one read edge: Service answers every question
// a user asks of the store. It implements strata.v1.QueryService (traces
// streamed page by page, records, NUMA spread, fault counters, hot pages,
// workload overhead, the RDD report, analysed jobs), which `strata` asks
// over gRPC; TraceEach and RecordsEach give the same streams to a Go
// caller, and the Go methods SearchJobs, JobTimeline, Apps, App, RDDs,
// Occupancy, PhysMap, Blocks, Moment, TraceMomentEach, NumaMoment and
// BlockLife answer what the web UI asks beyond the protocol.
//
// Looking back (moment.go): the map, an RDD's blocks, Trace and Numa show
// the blocks live at one moment of an application's life, named as
// ParseMoment reads it (now, peak, an RFC 3339 time, +DURATION after the
// app's start) and said in MomentWords' words. Over gRPC, TraceRequest
// and NumaRequest name the moment (at); Trace says which moment in the
// response header (MomentMetadata), Numa in its response. collector/web holds a Service and asks it
// everything; it never reads the store itself.
//
// Service only registers itself; collector/server owns the grpc.Server it
// shares with ingest, whose interceptors map the store's errors to codes:
// a missing app_id is InvalidArgument, an unknown job NotFound, a closed
// store Unavailable. The store's doc says what each answer means.
//
// ParseAccess and ParseSeverity read the names users type (`strata
// records --access`, the API's access= and severity=). ResolvedWords,
// ShareWords, ResolutionWord and HoldsWords say what Strata resolved of
// blocks (RddReport's parts, a record's Coverage) in the words both
// `strata` and the web UI print, so the two never differ. The JSON form of
// every answer is collector/query/jsonform's.
package query
