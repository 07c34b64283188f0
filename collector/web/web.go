package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store"
)

// Reader is the store the UI reads, through the query service over it.
type Reader interface {
	query.Reader
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Handler serves the UI and its API.
type Handler struct {
	q          *query.Service
	log        *slog.Logger
	mux        *http.ServeMux
	pages      map[string]*template.Template
	crossLayer map[string]bool
}

// Option tunes New.
type Option func(*Handler)

// WithQuery answers through q, the collector's own query service over the
// same store with its bounds (--query-max-rows), instead of a service of
// New's own with the default bounds.
func WithQuery(q *query.Service) Option { return func(h *Handler) { h.q = q } }

// New returns the UI over r; log (nil: discard) receives one line per
// failed request.
func New(r Reader, log *slog.Logger, opts ...Option) (*Handler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{q: query.New(r), log: log.With("component", "web"), mux: http.NewServeMux(), crossLayer: map[string]bool{}}
	for _, o := range opts {
		o(h)
	}
	eng, err := heuristics.NewEngine(heuristics.DefaultConfig())
	if err != nil {
		return nil, err
	}
	for _, name := range eng.Heuristics("") {
		h.crossLayer[name] = true
	}
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheable(http.FileServerFS(static))))
	h.routes()
	return h, nil
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, req)
}

// cacheable lets browsers keep the embedded assets for an hour.
func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) routes() {
	api := map[string]func(*http.Request) (any, error){
		"GET /api/v1/jobs":                             h.apiJobs,
		"GET /api/v1/jobs/timeline":                    h.apiTimeline,
		"GET /api/v1/jobs/{id}":                        h.apiJob,
		"GET /api/v1/apps":                             h.apiApps,
		"GET /api/v1/apps/{app}/report":                h.apiReport,
		"GET /api/v1/apps/{app}/rdds":                  h.apiRDDs,
		"GET /api/v1/apps/{app}/rdds/{rdd}/blocks":     h.apiBlocks,
		"GET /api/v1/apps/{app}/numa":                  h.apiNuma,
		"GET /api/v1/apps/{app}/faults":                h.apiFaults,
		"GET /api/v1/apps/{app}/overhead":              h.apiOverhead,
		"GET /api/v1/apps/{app}/hot":                   h.apiHot,
		"GET /api/v1/apps/{app}/heat":                  h.apiHeat,
		"GET /api/v1/apps/{app}/occupancy":             h.apiOccupancy,
		"GET /api/v1/apps/{app}/memmap":                h.apiMemMap,
		"GET /api/v1/apps/{app}/moment":                h.apiMoment,
		"GET /api/v1/apps/{app}/blocks/{exec}/{block}": h.apiBlock,
	}
	for pattern, fn := range api {
		h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, err := fn(r)
			if err != nil {
				h.fail(w, r, err, true)
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	h.mux.HandleFunc("GET /api/v1/apps/{app}/records", h.apiRecords)
	h.mux.HandleFunc("GET /api/v1/apps/{app}/trace", h.apiTrace)

	pages := map[string]func(*http.Request) (string, any, error){
		"GET /{$}":                              h.pageDashboard,
		"GET /jobs":                             h.pageJobs,
		"GET /jobs/{id}":                        h.pageJob,
		"GET /apps":                             h.pageApps,
		"GET /apps/{app}":                       h.pageApp,
		"GET /apps/{app}/memory":                h.pageMemory,
		"GET /apps/{app}/rdds/{rdd}":            h.pageRDD,
		"GET /apps/{app}/blocks/{exec}/{block}": h.pageBlock,
		"GET /apps/{app}/overhead":              h.pageOverhead,
	}
	for pattern, fn := range pages {
		h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			name, data, err := fn(r)
			if err != nil {
				h.fail(w, r, err, false)
				return
			}
			h.render(w, r, http.StatusOK, name, data)
		})
	}
}

// status maps the store's errors to HTTP statuses.
func status(err error) int {
	switch {
	case errors.Is(err, store.ErrInvalidQuery), errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, store.ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errBadRequest wraps every reason a request's parameters are refused.
var errBadRequest = errors.New("bad request")

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error, api bool) {
	code := status(err)
	if code >= 500 {
		h.log.Warn("request failed", "path", r.URL.Path, "status", code, "error", err)
	}
	if api {
		writeJSON(w, code, jsonform.Error{Message: err.Error()})
		return
	}
	h.render(w, r, code, "error", map[string]any{"Status": code, "StatusText": http.StatusText(code), "Error": err.Error()})
}

// writeJSON writes v, a jsonform answer, as the API's answer.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	jsonform.NewEncoder(w).Encode(v)
}
