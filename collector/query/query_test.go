package query_test

import (
	"context"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The query service answers over a real socket from a real collector whose
// store holds the storetest sample.
func TestQueryService(t *testing.T) {
	ctx := context.Background()
	c := servertest.Start(t, []*stratav1.Batch{storetest.Sample(1)}, storetest.Jobs())
	q := stratav1.NewQueryServiceClient(c.Dial(t))

	t.Run("trace", func(t *testing.T) {
		rdd := int32(8)
		stream, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: storetest.App, RddId: &rdd})
		if err != nil {
			t.Fatal(err)
		}
		var got []*stratav1.TracePage
		for {
			p, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		if len(got) != 4 {
			t.Fatalf("rdd 8: %d pages, want 4", len(got))
		}
		for i, p := range got {
			pfn := uint64(0x3000 + i)
			if p.GetVaddr() != storetest.BlockB+uint64(i)*storetest.PageSize || p.GetPfn() != pfn ||
				p.GetPaddr() != pfn*storetest.PageSize || p.GetNumaNode() != 1 || p.GetBlock().GetBlockId() != "rdd_8_0" {
				t.Errorf("page %d = %v", i, p)
			}
		}
		limited, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: storetest.App, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			if _, err := limited.Recv(); err != nil {
				break
			}
		}
		if n != 5 {
			t.Fatalf("limit 5: %d pages", n)
		}
	})

	t.Run("numa", func(t *testing.T) {
		resp, err := q.Numa(ctx, &stratav1.NumaRequest{AppId: storetest.App})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, &stratav1.NumaResponse{Rows: storetest.SampleNuma()}) {
			t.Fatalf("numa = %v", resp)
		}
	})

	t.Run("faults", func(t *testing.T) {
		resp, err := q.Faults(ctx, &stratav1.FaultsRequest{AppId: storetest.App})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, &stratav1.FaultsResponse{Rows: storetest.SampleFaults()}) {
			t.Fatalf("faults = %v", resp)
		}
	})

	t.Run("overhead", func(t *testing.T) {
		resp, err := q.Overhead(ctx, &stratav1.OverheadRequest{AppId: storetest.App})
		if err != nil {
			t.Fatal(err)
		}
		rows := resp.GetRows()
		if len(rows) != 2 || rows[0].WalkPct != nil || rows[0].GetCounters().GetPmuStatus() != "unavailable: no hardware PMU" ||
			rows[1].WalkPct == nil || rows[1].GetWalkPct() != 7.5 {
			t.Fatalf("overhead = %v", resp)
		}
	})

	t.Run("jobs", func(t *testing.T) {
		resp, err := q.Jobs(ctx, &stratav1.JobsRequest{MinSeverity: stratav1.Severity_SEVERITY_MODERATE})
		if err != nil {
			t.Fatal(err)
		}
		jobs := storetest.Jobs()
		if !proto.Equal(resp, &stratav1.JobsResponse{Jobs: []*stratav1.JobResult{jobs[2], jobs[1]}}) {
			t.Fatalf("jobs >= MODERATE = %v", resp)
		}
		j, err := q.Job(ctx, &stratav1.JobRequest{JobId: jobs[0].GetJobId()})
		if err != nil || !proto.Equal(j, jobs[0]) {
			t.Fatalf("job = %v, %v", j, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for name, call := range map[string]func() error{
			"numa without app": func() error { _, err := q.Numa(ctx, &stratav1.NumaRequest{}); return err },
			"trace without app": func() error {
				s, err := q.Trace(ctx, &stratav1.TraceRequest{})
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			},
			"unknown severity": func() error {
				_, err := q.Jobs(ctx, &stratav1.JobsRequest{MinSeverity: 99})
				return err
			},
		} {
			if err := call(); status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v, want InvalidArgument", name, err)
			}
		}
		if _, err := q.Job(ctx, &stratav1.JobRequest{JobId: "job_nope"}); status.Code(err) != codes.NotFound {
			t.Errorf("unknown job: %v, want NotFound", err)
		}
	})
}

// Report answers what the store's RDDs and Occupation answer for the
// report scenario and the coverage scenario (what each RDD's blocks hold
// against Spark's bytes), over a real socket; an empty app id is
// InvalidArgument.
func TestReportService(t *testing.T) {
	ctx := context.Background()
	batches := storetest.ReportBatches()
	for _, b := range storetest.CoverageBatches() {
		b.Seq += 10 // the same machine sent them later
		batches = append(batches, b)
	}
	c := servertest.Start(t, batches, nil)
	q := stratav1.NewQueryServiceClient(c.Dial(t))
	resp, err := q.Report(ctx, &stratav1.ReportRequest{AppId: storetest.App})
	if err != nil {
		t.Fatal(err)
	}
	want := &stratav1.ReportResponse{Rdds: storetest.ReportRDDs(), Occupation: storetest.ReportOccupation()}
	if !proto.Equal(resp, want) {
		t.Fatalf("report =\n%v\nwant\n%v", resp, want)
	}
	resp, err = q.Report(ctx, &stratav1.ReportRequest{AppId: storetest.CoverageApp})
	if err != nil {
		t.Fatal(err)
	}
	want = &stratav1.ReportResponse{Rdds: storetest.CoverageRDDs(false), Occupation: storetest.CoverageOccupation()}
	if !proto.Equal(resp, want) {
		t.Fatalf("coverage report =\n%v\nwant\n%v", resp, want)
	}
	if _, err := q.Report(ctx, &stratav1.ReportRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("report without app: %v, want InvalidArgument", err)
	}
}
