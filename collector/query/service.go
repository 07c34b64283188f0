package query

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Reader is the part of the store the query service needs: the trace
// questions, the UI's own (answer.UIReader) and the analysed jobs.
type Reader interface {
	answer.TraceReader
	answer.UIReader
	Jobs(ctx context.Context, min stratav1.Severity, limit uint32) ([]*stratav1.JobResult, error)
	Job(ctx context.Context, id string) (*stratav1.JobResult, error)
}

// Service implements strata.v1.QueryService, and answers the web UI's
// questions beyond it (SearchJobs … BlockLife) as Go methods.
type Service struct {
	stratav1.UnimplementedQueryServiceServer
	store  Reader
	bounds Bounds
}

// New returns the query service over r, bounded by DefaultMaxRows unless
// an option says otherwise.
func New(r Reader, opts ...Option) *Service {
	s := &Service{store: r, bounds: Bounds{MaxRows: DefaultMaxRows}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Register adds the service to srv.
func (s *Service) Register(srv grpc.ServiceRegistrar) { stratav1.RegisterQueryServiceServer(srv, s) }

// Trace streams one TracePage per page, paddr = pfn * page size: every
// record's, or when the request names a moment (at) the records the blocks
// live then hold, with MomentWords in the response header
// (MomentMetadata).
func (s *Service) Trace(req *stratav1.TraceRequest, stream grpc.ServerStreamingServer[stratav1.TracePage]) error {
	if req.At != nil {
		return s.traceMoment(req, req.GetAt(), stream)
	}
	return s.TraceEach(stream.Context(), req, stream.Send)
}

// TraceEach calls fn for each page Trace streams, in the same order; it
// stops at fn's first error, and at the row budget (ErrRowBudget).
func (s *Service) TraceEach(ctx context.Context, req *stratav1.TraceRequest, fn func(*stratav1.TracePage) error) error {
	return s.traceAt(ctx, req, 0, fn)
}

// traceAt is TraceEach of the blocks live at atNs, every record's at 0.
func (s *Service) traceAt(ctx context.Context, req *stratav1.TraceRequest, atNs int64, fn func(*stratav1.TracePage) error) error {
	limit, cut, err := s.budget(req.GetLimit())
	if err != nil {
		return err
	}
	n := 0
	send, end := bounded(s.bounds.MaxRows, cut, "pages", func(p *stratav1.TracePage) error { n++; return fn(p) })
	q := answer.TraceQuery{AppID: req.GetAppId(), RDD: req.RddId, Partition: req.Partition, Limit: limit, At: atNs}
	return s.emptyOf(ctx, q.AppID, n, end(s.store.Trace(ctx, q, send)))
}

// Records streams an application's records without pages.
func (s *Service) Records(req *stratav1.RecordsRequest, stream grpc.ServerStreamingServer[stratav1.RecordRow]) error {
	return s.RecordsEach(stream.Context(), req, stream.Send)
}

// RecordsEach calls fn for each record Records streams, in the same
// order; it stops at fn's first error, and at the row budget
// (ErrRowBudget).
func (s *Service) RecordsEach(ctx context.Context, req *stratav1.RecordsRequest, fn func(*stratav1.RecordRow) error) error {
	limit, cut, err := s.budget(req.GetLimit())
	if err != nil {
		return err
	}
	n := 0
	send, end := bounded(s.bounds.MaxRows, cut, "records", func(r *stratav1.RecordRow) error { n++; return fn(r) })
	q := answer.RecordsQuery{AppID: req.GetAppId(), RDD: req.RddId, Partition: req.Partition, BlockID: req.GetBlockId(),
		Access: req.GetAccess(), Limit: limit}
	return s.emptyOf(ctx, q.AppID, n, end(s.store.Records(ctx, q, send)))
}

// Numa returns pages per NUMA node per RDD of the blocks live now, or
// when the request names a moment (at) of those live then, saying which
// moment in the response's moment.
func (s *Service) Numa(ctx context.Context, req *stratav1.NumaRequest) (*stratav1.NumaResponse, error) {
	m := answer.Moment{Kind: answer.MomentNow}
	words := ""
	if req.At != nil {
		var err error
		if m, err = s.Moment(ctx, req.GetAppId(), req.GetAt()); err != nil {
			return nil, err
		}
		words = MomentWords(m)
	}
	rows, err := s.NumaMoment(ctx, req.GetAppId(), m)
	if err != nil {
		return nil, err
	}
	return &stratav1.NumaResponse{Rows: rows, Moment: words}, nil
}

// Faults returns fault counters per block.
func (s *Service) Faults(ctx context.Context, req *stratav1.FaultsRequest) (*stratav1.FaultsResponse, error) {
	rows, err := s.store.Faults(ctx, req.GetAppId())
	if err := s.emptyOf(ctx, req.GetAppId(), len(rows), err); err != nil {
		return nil, err
	}
	return &stratav1.FaultsResponse{Rows: rows}, nil
}

// HotMethod says how Hot measures hotness.
const HotMethod = "sampled page faults per page (one fault in the agent's --sample-every per block), " +
	"with kpageflags as resolved right after the latest sample; " +
	"REFERENCED/ACTIVE are LRU bookkeeping, not access recency; DAMON and idle page tracking are not used"

// Hot ranks pages by sampled faults.
func (s *Service) Hot(ctx context.Context, req *stratav1.HotRequest) (*stratav1.HotResponse, error) {
	pages, err := s.store.Hot(ctx, answer.HotQuery{AppID: req.GetAppId(), RDD: req.RddId, Limit: req.GetLimit()})
	if err := s.emptyOf(ctx, req.GetAppId(), len(pages), err); err != nil {
		return nil, err
	}
	return &stratav1.HotResponse{Pages: pages, Method: HotMethod}, nil
}

// Overhead returns per-workload counters, fault rates and walk shares.
func (s *Service) Overhead(ctx context.Context, req *stratav1.OverheadRequest) (*stratav1.OverheadResponse, error) {
	rows, err := s.store.Overhead(ctx, req.GetAppId())
	if err := s.emptyOf(ctx, req.GetAppId(), len(rows), err); err != nil {
		return nil, err
	}
	return &stratav1.OverheadResponse{Rows: rows}, nil
}

// Report summarises an app's RDDs and its RDD memory occupation.
func (s *Service) Report(ctx context.Context, req *stratav1.ReportRequest) (*stratav1.ReportResponse, error) {
	rdds, err := s.RDDs(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	occ, err := s.store.Occupation(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	return &stratav1.ReportResponse{Rdds: rdds, Occupation: occ}, nil
}

// RDDs is Report's RDDs alone: an app's cached RDDs, each block buffer as
// last resolved while it was live, ordered by RDD.
func (s *Service) RDDs(ctx context.Context, app string) ([]*stratav1.RddReport, error) {
	rdds, err := s.store.RDDs(ctx, app)
	if err := s.emptyOf(ctx, app, len(rdds), err); err != nil {
		return nil, err
	}
	return rdds, nil
}

// Jobs lists analysed jobs at or above the requested severity.
func (s *Service) Jobs(ctx context.Context, req *stratav1.JobsRequest) (*stratav1.JobsResponse, error) {
	if _, ok := stratav1.Severity_name[int32(req.GetMinSeverity())]; !ok {
		return nil, fmt.Errorf("%w: unknown severity %d", answer.ErrInvalidQuery, req.GetMinSeverity())
	}
	jobs, err := s.store.Jobs(ctx, req.GetMinSeverity(), req.GetLimit())
	if err != nil {
		return nil, err
	}
	return &stratav1.JobsResponse{Jobs: jobs}, nil
}

// Job returns one analysed job.
func (s *Service) Job(ctx context.Context, req *stratav1.JobRequest) (*stratav1.JobResult, error) {
	if req.GetJobId() == "" {
		return nil, fmt.Errorf("%w: empty job_id", answer.ErrInvalidQuery)
	}
	return s.store.Job(ctx, req.GetJobId())
}

// SearchJobs returns the page of analysed jobs q selects, and how many it
// selects in all.
func (s *Service) SearchJobs(ctx context.Context, q answer.JobQuery) (answer.JobPage, error) {
	return s.store.SearchJobs(ctx, q)
}

// JobTimeline counts the jobs q selects by severity per bucketMs of
// finish time, oldest first, buckets without a job left out.
func (s *Service) JobTimeline(ctx context.Context, q answer.JobQuery, bucketMs int64) ([]answer.SeverityBucket, error) {
	return s.store.JobTimeline(ctx, q, bucketMs)
}

// Apps lists the applications holding records, latest record first.
func (s *Service) Apps(ctx context.Context) ([]answer.AppSummary, error) { return s.store.Apps(ctx) }

// App returns the summary of one application, or answer.ErrNotFound.
func (s *Service) App(ctx context.Context, id string) (answer.AppSummary, error) {
	apps, err := s.store.Apps(ctx)
	if err != nil {
		return answer.AppSummary{}, err
	}
	for _, a := range apps {
		if a.AppID == id {
			return a, nil
		}
	}
	return answer.AppSummary{}, fmt.Errorf("application %s: %w: no records", id, answer.ErrNotFound)
}

// RDDSeries is one RDD's resident memory over time: a point at the end of
// each time bucket in which it changed (the value holds until the next).
type RDDSeries struct {
	RDD    int32
	Points []answer.OccupancyPoint
}

// Occupancy returns each RDD's resident memory over up to buckets equal
// time buckets of the app's life, ordered by RDD.
func (s *Service) Occupancy(ctx context.Context, app string, buckets uint32) ([]RDDSeries, error) {
	pts, err := s.store.Occupancy(ctx, app, buckets)
	if err := s.emptyOf(ctx, app, len(pts), err); err != nil {
		return nil, err
	}
	byRDD := map[int32]int{}
	var out []RDDSeries
	for _, p := range pts {
		i, ok := byRDD[p.RDDID]
		if !ok {
			i = len(out)
			byRDD[p.RDDID] = i
			out = append(out, RDDSeries{RDD: p.RDDID})
		}
		out[i].Points = append(out[i].Points, p)
	}
	slices.SortFunc(out, func(a, b RDDSeries) int { return int(a.RDD) - int(b.RDD) })
	return out, nil
}

// PhysMap returns the app's physical memory map on one machine.
func (s *Service) PhysMap(ctx context.Context, q answer.PhysMapQuery) (*answer.PhysMap, error) {
	return s.store.PhysMap(ctx, q)
}

// Blocks returns the Spark blocks of one RDD of an app and what Strata
// resolved of each, ordered by partition, executor and block: at the
// moment atNs (unix nanoseconds) the blocks live then, with 0 each block
// as last resolved while it was live.
func (s *Service) Blocks(ctx context.Context, app string, rdd int32, atNs int64) ([]answer.BlockCoverage, error) {
	var blocks []answer.BlockCoverage
	var err error
	if atNs != 0 {
		blocks, err = s.store.BlocksAt(ctx, app, rdd, atNs)
	} else {
		blocks, err = s.store.Blocks(ctx, app, rdd)
	}
	if err := s.emptyOf(ctx, app, len(blocks), err); err != nil {
		return nil, err
	}
	return blocks, nil
}

// DefaultColdFor is N of "cold for at least N seconds" when a heat
// question names none: the report's and the API's default.
const DefaultColdFor = 60 * time.Second

// HeatOf returns an app's DAMON access heat per RDD (answer.Heat), the
// share cold counted for at least coldFor.
func (s *Service) HeatOf(ctx context.Context, app string, rdd *int32, coldFor time.Duration) (*answer.Heat, error) {
	h, err := s.store.Heat(ctx, answer.HeatQuery{AppID: app, RDD: rdd, ColdFor: coldFor})
	if err != nil || h == nil {
		return h, err
	}
	if err := s.emptyOf(ctx, app, len(h.RDDs), nil); err != nil {
		return nil, err
	}
	return h, nil
}

// Heat answers HeatOf over gRPC: cold_for_seconds absent is
// DefaultColdFor, negative an InvalidArgument.
func (s *Service) Heat(ctx context.Context, req *stratav1.HeatRequest) (*stratav1.HeatResponse, error) {
	coldFor := DefaultColdFor
	if req.ColdForSeconds != nil {
		v := req.GetColdForSeconds()
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: cold_for_seconds %v: want 0 or more", answer.ErrInvalidQuery, v)
		}
		coldFor = time.Duration(v * float64(time.Second))
	}
	h, err := s.HeatOf(ctx, req.GetAppId(), req.RddId, coldFor)
	if err != nil {
		return nil, err
	}
	return HeatToProto(h), nil
}
