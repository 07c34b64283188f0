package web

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The API's handlers read a request's parameters into the query service's
// request, ask the service, and return the answer's jsonform: every
// answer is the form `strata … -o json` prints for the same question.

func (h *Handler) apiJobs(r *http.Request) (any, error) {
	q, err := jobQuery(r)
	if err != nil {
		return nil, err
	}
	page, err := h.q.SearchJobs(r.Context(), q)
	if err != nil {
		return nil, err
	}
	return jsonform.NewJobsPage(page, q), nil
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

func (h *Handler) apiTimeline(r *http.Request) (any, error) {
	q, err := jobQuery(r)
	if err != nil {
		return nil, err
	}
	b, err := timelineBucketMs(r)
	if err != nil {
		return nil, err
	}
	tl, err := h.q.JobTimeline(r.Context(), q, b)
	if err != nil {
		return nil, err
	}
	return jsonform.NewTimeline(tl, b), nil
}

func (h *Handler) apiJob(r *http.Request) (any, error) {
	j, err := h.q.Job(r.Context(), &stratav1.JobRequest{JobId: r.PathValue("id")})
	if err != nil {
		return nil, err
	}
	return jsonform.NewJob(j), nil
}

func (h *Handler) apiApps(r *http.Request) (any, error) {
	apps, err := h.q.Apps(r.Context())
	if err != nil {
		return nil, err
	}
	return jsonform.NewApps(apps), nil
}

// apiReport is `strata report`'s answer: the app's report and overhead,
// its job analysis when the collector made one, and its RDDs' heat with
// cold_for (as `strata report --cold-for`). An app the collector holds no
// records of is its job analysis alone, and unknown (404) without one.
func (h *Handler) apiReport(r *http.Request) (any, error) {
	ctx, app := r.Context(), r.PathValue("app")
	cf, err := coldFor(r)
	if err != nil {
		return nil, err
	}
	rep, err := h.q.Report(ctx, &stratav1.ReportRequest{AppId: app})
	traced := !errors.Is(err, store.ErrNotFound)
	if err != nil && traced {
		return nil, err
	}
	var over *stratav1.OverheadResponse
	if traced {
		if over, err = h.q.Overhead(ctx, &stratav1.OverheadRequest{AppId: app}); err != nil {
			return nil, err
		}
	}
	job, jerr := h.q.Job(ctx, &stratav1.JobRequest{JobId: app})
	switch {
	case errors.Is(jerr, store.ErrNotFound) && !traced:
		return nil, err
	case errors.Is(jerr, store.ErrNotFound):
		job = nil
	case jerr != nil:
		return nil, jerr
	}
	out := jsonform.NewReport(app, rep, over, job)
	if traced {
		heat, err := h.q.HeatOf(ctx, app, nil, cf)
		if err != nil {
			return nil, err
		}
		out.AddHeat(heat)
	}
	return out, nil
}

func (h *Handler) apiRDDs(r *http.Request) (any, error) {
	rdds, err := h.q.RDDs(r.Context(), r.PathValue("app"))
	if err != nil {
		return nil, err
	}
	return jsonform.NewRDDs(rdds), nil
}

// pathRDD reads the {rdd} of a path.
func pathRDD(r *http.Request) (int32, error) {
	rdd, err := strconv.ParseInt(r.PathValue("rdd"), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: rdd %q", errBadRequest, r.PathValue("rdd"))
	}
	return int32(rdd), nil
}

// apiBlocks lists an RDD's blocks, each as last resolved while it was
// live, or with at= those live at that moment.
func (h *Handler) apiBlocks(r *http.Request) (any, error) {
	rdd, err := pathRDD(r)
	if err != nil {
		return nil, err
	}
	m, err := h.askedMoment(r)
	if err != nil {
		return nil, err
	}
	var at int64
	if m != nil {
		at = m.Time()
	}
	blocks, err := h.q.Blocks(r.Context(), r.PathValue("app"), rdd, at)
	if err != nil {
		return nil, err
	}
	return jsonform.NewResolvedBlocks(blocks), nil
}

// apiMoment resolves at= (ParseMoment; absent: the app's default).
func (h *Handler) apiMoment(r *http.Request) (any, error) {
	m, err := h.q.Moment(r.Context(), r.PathValue("app"), r.URL.Query().Get("at"))
	if err != nil {
		return nil, err
	}
	return jsonform.NewMoment(m), nil
}

// askedMoment resolves the moment at= of r names, nil when r names none.
func (h *Handler) askedMoment(r *http.Request) (*answer.Moment, error) {
	v := r.URL.Query()
	if !v.Has("at") {
		return nil, nil
	}
	m, err := h.q.Moment(r.Context(), r.PathValue("app"), v.Get("at"))
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// momentOf resolves the moment a page or the map shows: at (as
// query.ParseMoment reads it; "" the app's default). An app without
// lifecycle records has no moment but now.
func (h *Handler) momentOf(r *http.Request, app, at string) (answer.Moment, error) {
	m, err := h.q.Moment(r.Context(), app, at)
	if errors.Is(err, store.ErrNotFound) && at == "" {
		return answer.Moment{Kind: answer.MomentNow, Default: true}, nil
	}
	return m, err
}

// apiNuma counts the pages of the blocks live now, or with at= of those
// live at that moment.
func (h *Handler) apiNuma(r *http.Request) (any, error) {
	m, err := h.askedMoment(r)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = &answer.Moment{Kind: answer.MomentNow}
	}
	rows, err := h.q.NumaMoment(r.Context(), r.PathValue("app"), *m)
	if err != nil {
		return nil, err
	}
	return jsonform.List(rows, jsonform.NewNuma), nil
}

func (h *Handler) apiFaults(r *http.Request) (any, error) {
	resp, err := h.q.Faults(r.Context(), &stratav1.FaultsRequest{AppId: r.PathValue("app")})
	if err != nil {
		return nil, err
	}
	return jsonform.List(resp.GetRows(), jsonform.NewFaults), nil
}

func (h *Handler) apiOverhead(r *http.Request) (any, error) {
	resp, err := h.q.Overhead(r.Context(), &stratav1.OverheadRequest{AppId: r.PathValue("app")})
	if err != nil {
		return nil, err
	}
	return jsonform.List(resp.GetRows(), jsonform.NewOverhead), nil
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

func (h *Handler) apiHot(r *http.Request) (any, error) {
	rdd, err := optInt32(r, "rdd")
	if err != nil {
		return nil, err
	}
	limit, err := parseUint("limit", r.URL.Query().Get("limit"), 100, 1<<20)
	if err != nil {
		return nil, err
	}
	resp, err := h.q.Hot(r.Context(), &stratav1.HotRequest{AppId: r.PathValue("app"), RddId: rdd, Limit: uint32(limit)})
	if err != nil {
		return nil, err
	}
	return jsonform.NewHotPages(resp), nil
}

// coldFor reads a heat question's cold_for (a Go duration, at least 0),
// query.DefaultColdFor when absent.
func coldFor(r *http.Request) (time.Duration, error) {
	s := r.URL.Query().Get("cold_for")
	if s == "" {
		return query.DefaultColdFor, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: cold_for %q: want a duration of at least 0, e.g. 60s", errBadRequest, s)
	}
	return d, nil
}

// apiHeat is an app's DAMON access heat per RDD.
func (h *Handler) apiHeat(r *http.Request) (any, error) {
	rdd, err := optInt32(r, "rdd")
	if err != nil {
		return nil, err
	}
	cf, err := coldFor(r)
	if err != nil {
		return nil, err
	}
	app := r.PathValue("app")
	heat, err := h.q.HeatOf(r.Context(), app, rdd, cf)
	if err != nil {
		return nil, err
	}
	return jsonform.NewHeat(app, heat), nil
}

func (h *Handler) apiOccupancy(r *http.Request) (any, error) {
	b, err := parseUint("buckets", r.URL.Query().Get("buckets"), 200, 10000)
	if err != nil {
		return nil, err
	}
	series, err := h.q.Occupancy(r.Context(), r.PathValue("app"), uint32(max(b, 1)))
	if err != nil {
		return nil, err
	}
	return jsonform.NewOccupancy(series, rddColor), nil
}

func (h *Handler) apiMemMap(r *http.Request) (any, error) {
	v := r.URL.Query()
	q := answer.PhysMapQuery{AppID: r.PathValue("app"), Machine: v.Get("machine")}
	var err error
	if q.From, err = parseUint("from", v.Get("from"), 0, 1<<52); err != nil {
		return nil, err
	}
	if q.To, err = parseUint("to", v.Get("to"), 0, 1<<52); err != nil {
		return nil, err
	}
	b, err := parseUint("buckets", v.Get("buckets"), 0, 4096)
	if err != nil {
		return nil, err
	}
	q.Buckets = uint32(b)
	mo, err := h.momentOf(r, q.AppID, v.Get("at"))
	if err != nil {
		return nil, err
	}
	q.At = mo.AtNs
	m, err := h.q.PhysMap(r.Context(), q)
	if err != nil {
		return nil, err
	}
	return jsonform.NewMemMap(m, mo, rddColor), nil
}

func (h *Handler) apiBlock(r *http.Request) (any, error) {
	life, err := h.q.BlockLife(r.Context(), r.PathValue("app"), r.PathValue("exec"), r.PathValue("block"))
	if err != nil {
		return nil, err
	}
	return jsonform.NewBlockLife(life), nil
}

// ndjson streams one form per line, the lines `strata … -o json` prints;
// an error after the first line ends the stream with a last line
// {"error": "..."}.
func (h *Handler) ndjson(w http.ResponseWriter, r *http.Request, run func(send func(any) error) error) {
	bw := bufio.NewWriter(w)
	enc := jsonform.NewEncoder(bw)
	started := false
	err := run(func(v any) error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			started = true
		}
		return enc.Encode(v)
	})
	switch {
	case err != nil && !started:
		h.fail(w, r, err, true)
		return
	case err != nil:
		enc.Encode(jsonform.Error{Message: err.Error()})
	case !started:
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	bw.Flush()
}

// maxStreamLimit caps records and trace: a browser asking for more should
// page through the CLI.
const maxStreamLimit = 1 << 20

// streamLimit reads a stream's limit: 10,000 by default, at most
// maxStreamLimit.
func streamLimit(r *http.Request) (uint32, error) {
	limit, err := parseUint("limit", r.URL.Query().Get("limit"), 10000, maxStreamLimit)
	return uint32(max(limit, 1)), err
}

func (h *Handler) apiRecords(w http.ResponseWriter, r *http.Request) {
	req := &stratav1.RecordsRequest{AppId: r.PathValue("app"), BlockId: r.URL.Query().Get("block")}
	var err error
	if req.RddId, err = optInt32(r, "rdd"); err == nil {
		req.Partition, err = optInt32(r, "partition")
	}
	if err == nil {
		req.Limit, err = streamLimit(r)
	}
	if err == nil {
		req.Access, err = query.ParseAccess(r.URL.Query().Get("access"))
	}
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	h.ndjson(w, r, func(send func(any) error) error {
		return h.q.RecordsEach(r.Context(), req, func(row *stratav1.RecordRow) error { return send(jsonform.NewRecord(row)) })
	})
}

// apiTrace streams the pages of every record, or with at= those the
// blocks live at that moment hold then, saying which moment in the
// Strata-Moment header (query.MomentWords).
func (h *Handler) apiTrace(w http.ResponseWriter, r *http.Request) {
	req := &stratav1.TraceRequest{AppId: r.PathValue("app")}
	var err error
	if req.RddId, err = optInt32(r, "rdd"); err == nil {
		req.Partition, err = optInt32(r, "partition")
	}
	if err == nil {
		req.Limit, err = streamLimit(r)
	}
	var m *answer.Moment
	if err == nil {
		m, err = h.askedMoment(r)
	}
	if err != nil {
		h.fail(w, r, err, true)
		return
	}
	page := func(send func(any) error) func(*stratav1.TracePage) error {
		return func(p *stratav1.TracePage) error { return send(jsonform.NewPage(p)) }
	}
	if m != nil {
		w.Header().Set(momentHeader, query.MomentWords(*m))
		h.ndjson(w, r, func(send func(any) error) error { return h.q.TraceMomentEach(r.Context(), req, *m, page(send)) })
		return
	}
	h.ndjson(w, r, func(send func(any) error) error { return h.q.TraceEach(r.Context(), req, page(send)) })
}

// momentHeader is the response header of a trace at a moment: which
// moment, in words.
const momentHeader = "Strata-Moment"
