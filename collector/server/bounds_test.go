package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	"github.com/stratatrace/strata/collector/web"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// drain reads a stream to its end: the messages and the error that ended
// it (nil at EOF).
func drain[T any](recv func() (T, error)) (int, error) {
	n := 0
	for {
		_, err := recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// TestQueryRowBudget: with --query-max-rows 2, a trace or records request
// without a limit gets two rows and then ResourceExhausted saying what
// to do; a limit within the budget gets its rows and a clean end; a limit
// above it is refused before any row.
func TestQueryRowBudget(t *testing.T) {
	sample := storetest.Sample(1)
	if len(sample.GetRecords()) <= 2 {
		t.Fatalf("the sample has %d records; the test needs more than 2", len(sample.GetRecords()))
	}
	ui := server.WithHTTPHandler("/", func(d server.HTTPDeps) (http.Handler, error) {
		return web.New(d.Store, d.Logger, web.WithQuery(d.Query))
	})
	c := servertest.StartWith(t, []*stratav1.Batch{sample}, nil, func(cfg *server.Config) {
		cfg.QueryMaxRows = 2
		cfg.HTTP = "127.0.0.1:0"
	}, ui)
	q := stratav1.NewQueryServiceClient(c.Dial(t))
	ctx := context.Background()
	rdd := int32(8) // four pages
	trace := func(limit uint32) (int, error) {
		s, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: storetest.App, RddId: &rdd, Limit: limit})
		if err != nil {
			return 0, err
		}
		return drain(s.Recv)
	}
	records := func(limit uint32) (int, error) {
		s, err := q.Records(ctx, &stratav1.RecordsRequest{AppId: storetest.App, Limit: limit})
		if err != nil {
			return 0, err
		}
		return drain(s.Recv)
	}
	for _, tc := range []struct {
		name  string
		call  func(uint32) (int, error)
		limit uint32
		rows  int
		code  codes.Code
	}{
		{"trace without a limit", trace, 0, 2, codes.ResourceExhausted},
		{"trace within the budget", trace, 1, 1, codes.OK},
		{"trace at the budget", trace, 2, 2, codes.OK},
		{"trace above the budget", trace, 3, 0, codes.InvalidArgument},
		{"records without a limit", records, 0, 2, codes.ResourceExhausted},
		{"records at the budget", records, 2, 2, codes.OK},
		{"records above the budget", records, 10, 0, codes.InvalidArgument},
	} {
		n, err := tc.call(tc.limit)
		if n != tc.rows || status.Code(err) != tc.code {
			t.Errorf("%s: %d rows, %v; want %d rows, %v", tc.name, n, err, tc.rows, tc.code)
		}
		if tc.code == codes.ResourceExhausted && err != nil {
			if msg := status.Convert(err).Message(); !strings.Contains(msg, "first 2") || !strings.Contains(msg, "ask with a limit") {
				t.Errorf("%s: message %q does not say what was sent and what to do", tc.name, msg)
			}
		}
	}
	// The web API answers through the same bounded service: a limit above
	// the budget is refused before any row, one within it is served.
	for _, tc := range []struct {
		limit string
		code  int
	}{{"3", http.StatusBadRequest}, {"2", http.StatusOK}} {
		resp, err := http.Get("http://" + c.HTTPAddr + "/api/v1/apps/" + storetest.App + "/trace?rdd=8&limit=" + tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || tc.code == http.StatusOK && strings.Count(string(body), "\n") != 2 {
			t.Errorf("HTTP trace limit=%s: %d %q, want %d", tc.limit, resp.StatusCode, body, tc.code)
		}
	}
	// A budget of 4 lets the whole RDD through with a clean end.
	c2 := servertest.StartWith(t, []*stratav1.Batch{sample}, nil, func(cfg *server.Config) { cfg.QueryMaxRows = 4 })
	q = stratav1.NewQueryServiceClient(c2.Dial(t))
	if n, err := trace(0); n != 4 || err != nil {
		t.Errorf("trace of 4 pages under a budget of 4: %d, %v", n, err)
	}
}

// TestQueryDeadline: with a query timeout too short for any query, query
// calls over gRPC end with DeadlineExceeded and HTTP requests see their
// context's deadline, while ingest is not bounded: a Push is acknowledged.
func TestQueryDeadline(t *testing.T) {
	seen := make(chan bool, 1)
	probe := server.WithHTTPHandler("/api/", func(server.HTTPDeps) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, ok := r.Context().Deadline()
			seen <- ok
			<-r.Context().Done()
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": r.Context().Err().Error()})
		}), nil
	})
	c := servertest.StartWith(t, nil, nil, func(cfg *server.Config) {
		cfg.QueryTimeout = server.Duration(time.Microsecond)
		cfg.HTTP = "127.0.0.1:0"
	}, probe)
	cc := c.Dial(t)
	ctx := context.Background()

	push, err := stratav1.NewIngestServiceClient(cc).Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := push.Send(storetest.Sample(1)); err != nil {
		t.Fatal(err)
	}
	if ack, err := push.Recv(); err != nil || ack.GetRecords() == 0 {
		t.Fatalf("push under a query timeout: %v, %v", ack, err)
	}
	push.CloseSend()

	q := stratav1.NewQueryServiceClient(cc)
	if _, err := q.Report(ctx, &stratav1.ReportRequest{AppId: storetest.App}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("report: %v, want DeadlineExceeded", err)
	}
	s, err := q.Trace(ctx, &stratav1.TraceRequest{AppId: storetest.App})
	if err == nil {
		_, err = drain(s.Recv)
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("trace: %v, want DeadlineExceeded", err)
	}

	resp, err := http.Get("http://" + c.HTTPAddr + "/api/v1/apps")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !<-seen {
		t.Error("HTTP: the request's context had no deadline")
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("HTTP: status %d, want 503 past the deadline", resp.StatusCode)
	}
}
