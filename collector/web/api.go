package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

var pj = protojson.MarshalOptions{UseProtoNames: true}

// protoJSON writes m as the query service's clients see it.
func protoJSON(m proto.Message) (json.RawMessage, error) {
	b, err := pj.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return append(b, '\n'), nil
}

// jobsPage is /api/v1/jobs.
type jobsPage struct {
	Total  uint64            `json:"total"`
	Offset uint32            `json:"offset"`
	Limit  uint32            `json:"limit"`
	Jobs   []json.RawMessage `json:"jobs"` // JobResult, protojson
}

func (h *Handler) apiJobs(_ http.ResponseWriter, r *http.Request) (any, error) {
	q, err := jobQuery(r)
	if err != nil {
		return nil, err
	}
	page, err := h.r.SearchJobs(r.Context(), q)
	if err != nil {
		return nil, err
	}
	out := jobsPage{Total: page.Total, Offset: q.Offset, Limit: q.Limit, Jobs: []json.RawMessage{}}
	for _, j := range page.Jobs {
		b, err := pj.Marshal(j)
		if err != nil {
			return nil, fmt.Errorf("encode job: %w", err)
		}
		out.Jobs = append(out.Jobs, b)
	}
	return out, nil
}

// timelineBucket is one bucket of /api/v1/jobs/timeline.
type timelineBucket struct {
	StartMs int64             `json:"start_ms"`
	Counts  map[string]uint64 `json:"counts"` // severity name -> jobs
}

// timelineBucketMs picks the bucket of a timeline: a query's "bucket"
// (a Go duration), else a day.
func timelineBucketMs(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("bucket")
	if s == "" {
		return int64(24 * time.Hour / time.Millisecond), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("%w: bucket %q: want a duration of at least 1s, e.g. 1h", errBadRequest, s)
	}
	return d.Milliseconds(), nil
}

func (h *Handler) timeline(r *http.Request) ([]timelineBucket, int64, error) {
	q, err := jobQuery(r)
	if err != nil {
		return nil, 0, err
	}
	b, err := timelineBucketMs(r)
	if err != nil {
		return nil, 0, err
	}
	tl, err := h.r.JobTimeline(r.Context(), q, b)
	if err != nil {
		return nil, 0, err
	}
	out := make([]timelineBucket, 0, len(tl))
	for _, t := range tl {
		tb := timelineBucket{StartMs: t.StartMs, Counts: map[string]uint64{}}
		for sev, n := range t.Counts {
			tb.Counts[severityName(stratav1.Severity(sev))] = n
		}
		out = append(out, tb)
	}
	return out, b, nil
}

func (h *Handler) apiTimeline(_ http.ResponseWriter, r *http.Request) (any, error) {
	tl, b, err := h.timeline(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"bucket_ms": b, "buckets": tl}, nil
}

func (h *Handler) apiJob(_ http.ResponseWriter, r *http.Request) (any, error) {
	j, err := h.r.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return protoJSON(j)
}

// appRow is one line of /api/v1/apps.
type appRow struct {
	AppID     string   `json:"app_id"`
	Machines  []string `json:"machines"`
	Executors uint32   `json:"executors"`
	Records   uint64   `json:"records"`
	First     string   `json:"first"`
	Last      string   `json:"last"`
}

func nsTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

func (h *Handler) apiApps(_ http.ResponseWriter, r *http.Request) (any, error) {
	apps, err := h.r.Apps(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]appRow, 0, len(apps))
	for _, a := range apps {
		out = append(out, appRow{AppID: a.AppID, Machines: a.Machines, Executors: a.Executors, Records: a.Records,
			First: nsTime(a.FirstNs), Last: nsTime(a.LastNs)})
	}
	return out, nil
}

func (h *Handler) apiRDDs(_ http.ResponseWriter, r *http.Request) (any, error) {
	return h.rddRows(r.Context(), r.PathValue("app"))
}

func (h *Handler) apiBlocks(_ http.ResponseWriter, r *http.Request) (any, error) {
	rdd, err := strconv.ParseInt(r.PathValue("rdd"), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: rdd %q", errBadRequest, r.PathValue("rdd"))
	}
	return h.blockBytes(r.Context(), r.PathValue("app"), int32(rdd))
}

func (h *Handler) apiNuma(_ http.ResponseWriter, r *http.Request) (any, error) {
	rows, err := h.r.Numa(r.Context(), r.PathValue("app"))
	if err != nil {
		return nil, err
	}
	return protoJSON(&stratav1.NumaResponse{Rows: rows})
}

func (h *Handler) apiFaults(_ http.ResponseWriter, r *http.Request) (any, error) {
	rows, err := h.r.Faults(r.Context(), r.PathValue("app"))
	if err != nil {
		return nil, err
	}
	return protoJSON(&stratav1.FaultsResponse{Rows: rows})
}

func (h *Handler) apiOverhead(_ http.ResponseWriter, r *http.Request) (any, error) {
	rows, err := h.r.Overhead(r.Context(), r.PathValue("app"))
	if err != nil {
		return nil, err
	}
	return protoJSON(&stratav1.OverheadResponse{Rows: rows})
}

// optInt32 reads an optional int32 parameter.
func optInt32(r *http.Request, name string) (*int32, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: want an integer", errBadRequest, name, s)
	}
	i := int32(v)
	return &i, nil
}

func (h *Handler) apiHot(_ http.ResponseWriter, r *http.Request) (any, error) {
	rdd, err := optInt32(r, "rdd")
	if err != nil {
		return nil, err
	}
	limit, err := parseUint("limit", r.URL.Query().Get("limit"), 100, 1<<20)
	if err != nil {
		return nil, err
	}
	pages, err := h.r.Hot(r.Context(), store.HotQuery{AppID: r.PathValue("app"), RDD: rdd, Limit: uint32(limit)})
	if err != nil {
		return nil, err
	}
	return protoJSON(&stratav1.HotResponse{Pages: pages, Method: query.HotMethod})
}

func (h *Handler) apiOccupancy(_ http.ResponseWriter, r *http.Request) (any, error) {
	b, err := parseUint("buckets", r.URL.Query().Get("buckets"), 200, 10000)
	if err != nil {
		return nil, err
	}
	return h.occupancy(r.Context(), r.PathValue("app"), uint32(max(b, 1)))
}

func (h *Handler) apiMemMap(_ http.ResponseWriter, r *http.Request) (any, error) {
	return h.memMap(r.Context(), r.PathValue("app"), r)
}

func (h *Handler) apiBlock(_ http.ResponseWriter, r *http.Request) (any, error) {
	return h.blockLife(r.Context(), r.PathValue("app"), r.PathValue("exec"), r.PathValue("block"))
}

// ndjson streams one protojson object per line, as `strata … -o json`
// prints them; an error after the first line ends the stream with a last
// line {"error": "..."}.
func (h *Handler) ndjson(w http.ResponseWriter, r *http.Request, run func(send func(proto.Message) error) error) {
	bw := bufio.NewWriter(w)
	started := false
	err := run(func(m proto.Message) error {
		b, err := pj.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode %T: %w", m, err)
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		bw.Write(b)
		return bw.WriteByte('\n')
	})
	switch {
	case err != nil && !started:
		h.fail(w, r, err, true)
		return
	case err != nil:
		msg, _ := json.Marshal(map[string]string{"error": err.Error()})
		bw.Write(append(msg, '\n'))
	case !started:
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	bw.Flush()
}

// maxStreamLimit caps records and trace: a browser asking for more should
// page through the CLI.
const maxStreamLimit = 1 << 20

func (h *Handler) apiRecords(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := store.RecordsQuery{AppID: r.PathValue("app"), BlockID: v.Get("block")}
	var err error
	if q.RDD, err = optInt32(r, "rdd"); err == nil {
		q.Partition, err = optInt32(r, "partition")
	}
	var limit uint64
	if err == nil {
		limit, err = parseUint("limit", v.Get("limit"), 10000, maxStreamLimit)
	}
	if err == nil && v.Get("access") != "" {
		for _, name := range strings.Split(v.Get("access"), ",") {
			k, ok := stratav1.AccessKind_value["ACCESS_KIND_"+strings.ToUpper(strings.TrimSpace(name))]
			if !ok || k == 0 {
				err = fmt.Errorf("%w: access %q: want alloc, read, write, free, fault or move", errBadRequest, name)
				break
			}
			q.Access = append(q.Access, stratav1.AccessKind(k))
		}
	}
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	q.Limit = uint32(max(limit, 1))
	h.ndjson(w, r, func(send func(proto.Message) error) error {
		return h.r.Records(r.Context(), q, func(row *stratav1.RecordRow) error { return send(row) })
	})
}

func (h *Handler) apiTrace(w http.ResponseWriter, r *http.Request) {
	q := store.TraceQuery{AppID: r.PathValue("app")}
	var err error
	if q.RDD, err = optInt32(r, "rdd"); err == nil {
		q.Partition, err = optInt32(r, "partition")
	}
	var limit uint64
	if err == nil {
		limit, err = parseUint("limit", r.URL.Query().Get("limit"), 10000, maxStreamLimit)
	}
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	q.Limit = uint32(max(limit, 1))
	h.ndjson(w, r, func(send func(proto.Message) error) error {
		return h.r.Trace(r.Context(), q, func(p *stratav1.TracePage) error { return send(p) })
	})
}
