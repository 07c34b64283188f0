package query

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Reader is the part of the store the query service needs.
type Reader interface {
	store.TraceReader
	Jobs(ctx context.Context, min stratav1.Severity, limit uint32) ([]*stratav1.JobResult, error)
	Job(ctx context.Context, id string) (*stratav1.JobResult, error)
}

// Service implements strata.v1.QueryService.
type Service struct {
	stratav1.UnimplementedQueryServiceServer
	store Reader
}

// New returns the query service over r.
func New(r Reader) *Service { return &Service{store: r} }

// Register adds the service to srv.
func (s *Service) Register(srv grpc.ServiceRegistrar) { stratav1.RegisterQueryServiceServer(srv, s) }

// Trace streams one TracePage per page, paddr = pfn * page size.
func (s *Service) Trace(req *stratav1.TraceRequest, stream grpc.ServerStreamingServer[stratav1.TracePage]) error {
	q := store.TraceQuery{AppID: req.GetAppId(), RDD: req.RddId, Partition: req.Partition, Limit: req.GetLimit()}
	return s.store.Trace(stream.Context(), q, stream.Send)
}

// Records streams an application's records without pages.
func (s *Service) Records(req *stratav1.RecordsRequest, stream grpc.ServerStreamingServer[stratav1.RecordRow]) error {
	q := store.RecordsQuery{AppID: req.GetAppId(), RDD: req.RddId, Partition: req.Partition, BlockID: req.GetBlockId(),
		Access: req.GetAccess(), Limit: req.GetLimit()}
	return s.store.Records(stream.Context(), q, stream.Send)
}

// Numa returns pages per NUMA node per RDD.
func (s *Service) Numa(ctx context.Context, req *stratav1.NumaRequest) (*stratav1.NumaResponse, error) {
	rows, err := s.store.Numa(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	return &stratav1.NumaResponse{Rows: rows}, nil
}

// Faults returns fault counters per block.
func (s *Service) Faults(ctx context.Context, req *stratav1.FaultsRequest) (*stratav1.FaultsResponse, error) {
	rows, err := s.store.Faults(ctx, req.GetAppId())
	if err != nil {
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
	pages, err := s.store.Hot(ctx, store.HotQuery{AppID: req.GetAppId(), RDD: req.RddId, Limit: req.GetLimit()})
	if err != nil {
		return nil, err
	}
	return &stratav1.HotResponse{Pages: pages, Method: HotMethod}, nil
}

// Overhead returns per-workload counters, fault rates and walk shares.
func (s *Service) Overhead(ctx context.Context, req *stratav1.OverheadRequest) (*stratav1.OverheadResponse, error) {
	rows, err := s.store.Overhead(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	return &stratav1.OverheadResponse{Rows: rows}, nil
}

// Report summarises an app's RDDs and its RDD memory occupation.
func (s *Service) Report(ctx context.Context, req *stratav1.ReportRequest) (*stratav1.ReportResponse, error) {
	rdds, err := s.store.RDDs(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	occ, err := s.store.Occupation(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	return &stratav1.ReportResponse{Rdds: rdds, Occupation: occ}, nil
}

// Jobs lists analysed jobs at or above the requested severity.
func (s *Service) Jobs(ctx context.Context, req *stratav1.JobsRequest) (*stratav1.JobsResponse, error) {
	if _, ok := stratav1.Severity_name[int32(req.GetMinSeverity())]; !ok {
		return nil, fmt.Errorf("%w: unknown severity %d", store.ErrInvalidQuery, req.GetMinSeverity())
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
		return nil, fmt.Errorf("%w: empty job_id", store.ErrInvalidQuery)
	}
	return s.store.Job(ctx, req.GetJobId())
}
