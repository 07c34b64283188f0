package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

var funcs = template.FuncMap{
	"sevName":       severityName,
	"sevColor":      func(s stratav1.Severity) string { return severityColors[int(s)%len(severityColors)] },
	"sevIndexColor": func(i int) string { return severityColors[i%len(severityColors)] },
	"sevIndexName":  func(i int) string { return severityName(stratav1.Severity(i)) },
	"bytes":         bytesLabel,
	"pct":           func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"nsTime":        func(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000") },
	"msTime": func(ms int64) string {
		if ms == 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05")
	},
	"dur":       func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
	"hex":       func(v uint64) string { return fmt.Sprintf("%#x", v) },
	"rddColor":  rddColor,
	"nodeColor": nodeColor,
	"nodeLabel": nodeLabel,
	"gbh":       func(v float64) string { return fmt.Sprintf("%.2f GB·h", v) },
	"f1":        func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":        func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pathEsc":   url.PathEscape,
	"join":      strings.Join,
	"lines":     func(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") },
	"deref":     func(v *int32) int32 { return *v },
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n)
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render executes page name into a buffer, then writes it: a template
// error becomes a 500, never half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	t := h.pages[name]
	var buf bytes.Buffer
	if t == nil {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", map[string]any{"Page": name, "Data": data}); err != nil {
		h.log.Error("render page", "page", name, "path", r.URL.Path, "error", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

const day = int64(24 * time.Hour / time.Millisecond)

// The dashboard's window: the days up to the latest finished job whose
// jobs its badges and timeline count (days=).
const (
	defaultWindowDays = 60
	maxWindowDays     = 3650
)

func (h *Handler) pageDashboard(r *http.Request) (string, any, error) {
	ctx := r.Context()
	newest, err := h.q.SearchJobs(ctx, answer.JobQuery{Limit: 1})
	if err != nil {
		return "", nil, err
	}
	days, err := parseUint("days", r.URL.Query().Get("days"), defaultWindowDays, maxWindowDays)
	if err != nil {
		return "", nil, err
	}
	days = max(days, 1)
	data := map[string]any{"Total": newest.Total}
	var end int64
	if len(newest.Jobs) > 0 {
		end = newest.Jobs[0].GetFinishUnixMs()
	}
	// The timeline and the badges count the jobs that finished in the
	// window of days up to the latest finished job, a bar per day; the
	// worst jobs are those of its last 7 days.
	from := max(end-int64(days)*day, 0)
	tl, err := h.q.JobTimeline(ctx, answer.JobQuery{FinishedFrom: from}, day)
	if err != nil {
		return "", nil, err
	}
	var counts [5]uint64
	var inWindow uint64
	for _, b := range tl {
		for i, c := range b.Counts {
			counts[i] += c
			inWindow += c
		}
	}
	windows := []uint64{7, 30, 60, 90, 365}
	if !slices.Contains(windows, days) {
		windows = append(windows, days)
		slices.Sort(windows)
	}
	data["Days"], data["Windows"], data["InWindow"] = days, windows, inWindow
	worst, err := h.q.SearchJobs(ctx, answer.JobQuery{FinishedFrom: max(end-7*day, 0), Order: answer.JobsWorst, Limit: 10})
	if err != nil {
		return "", nil, err
	}
	apps, err := h.q.Apps(ctx)
	if err != nil {
		return "", nil, err
	}
	data["Chart"] = severityChart(tl, day)
	data["Counts"] = counts
	data["Worst"] = worst.Jobs
	data["Apps"] = apps[:min(len(apps), 10)]
	data["From"], data["End"] = from, end
	return "dashboard", data, nil
}

// pageLink is one link of the search's pagination.
type pageLink struct {
	Label   string
	URL     string
	Current bool
}

func (h *Handler) pageJobs(r *http.Request) (string, any, error) {
	q, err := jobQuery(r)
	if err != nil {
		return "", nil, err
	}
	page, err := h.q.SearchJobs(r.Context(), q)
	if err != nil {
		return "", nil, err
	}
	v := r.URL.Query()
	pages := (page.Total + uint64(q.Limit) - 1) / uint64(q.Limit)
	cur := uint64(q.Offset)/uint64(q.Limit) + 1
	link := func(p uint64) string {
		u := url.Values{}
		for k, vs := range v {
			if k != "page" && k != "offset" {
				u[k] = vs
			}
		}
		u.Set("page", strconv.FormatUint(p, 10))
		return "/jobs?" + u.Encode()
	}
	var links []pageLink
	if cur > 1 {
		links = append(links, pageLink{Label: "« prev", URL: link(cur - 1)})
	}
	for p := max(cur, 3) - 2; p <= min(cur+2, pages); p++ {
		links = append(links, pageLink{Label: strconv.FormatUint(p, 10), URL: link(p), Current: p == cur})
	}
	if cur < pages {
		links = append(links, pageLink{Label: "next »", URL: link(cur + 1)})
	}
	return "jobs", map[string]any{
		"Jobs": page.Jobs, "Total": page.Total, "Page": cur, "Pages": pages, "Links": links,
		"Form": map[string]string{"user": v.Get("user"), "queue": v.Get("queue"), "type": v.Get("type"),
			"severity": v.Get("severity"), "from": v.Get("from"), "to": v.Get("to"), "order": v.Get("order")},
		"Severities": []string{"none", "low", "moderate", "severe", "critical"},
	}, nil
}

func (h *Handler) pageJob(r *http.Request) (string, any, error) {
	j, err := h.q.Job(r.Context(), &stratav1.JobRequest{JobId: r.PathValue("id")})
	if err != nil {
		return "", nil, err
	}
	var own, cross []*stratav1.HeuristicResult
	for _, hr := range j.GetHeuristics() {
		if h.crossLayer[hr.GetName()] {
			cross = append(cross, hr)
		} else {
			own = append(own, hr)
		}
	}
	traced := false
	if j.GetAppId() != "" {
		if _, err := h.q.App(r.Context(), j.GetAppId()); err == nil {
			traced = true
		}
	}
	return "job", map[string]any{"Job": j, "Heuristics": own, "CrossLayer": cross, "Traced": traced}, nil
}

func (h *Handler) pageApps(r *http.Request) (string, any, error) {
	apps, err := h.q.Apps(r.Context())
	if err != nil {
		return "", nil, err
	}
	return "apps", map[string]any{"Apps": apps}, nil
}

func (h *Handler) pageApp(r *http.Request) (string, any, error) {
	ctx := r.Context()
	id := r.PathValue("app")
	a, err := h.q.App(ctx, id)
	if err != nil {
		return "", nil, err
	}
	rows, err := h.rddRows(ctx, id)
	if err != nil {
		return "", nil, err
	}
	occ, err := h.q.Occupancy(ctx, id, 300)
	if err != nil {
		return "", nil, err
	}
	jobs, err := h.q.SearchJobs(ctx, answer.JobQuery{AppID: id, Limit: 10})
	if err != nil {
		return "", nil, err
	}
	return "app", map[string]any{"App": a, "RDDs": rows, "NumaChart": numaChart(rows), "OccChart": occupancyChart(occ),
		"Jobs": jobs.Jobs}, nil
}

func (h *Handler) pageMemory(r *http.Request) (string, any, error) {
	a, err := h.q.App(r.Context(), r.PathValue("app"))
	if err != nil {
		return "", nil, err
	}
	v := r.URL.Query()
	return "memory", map[string]any{"App": a, "Machine": v.Get("machine"), "From": v.Get("from"), "To": v.Get("to"),
		"At": v.Get("at")}, nil
}

// blockRow is one block of an RDD's page.
type blockRow struct {
	ExecutorID, BlockID string
	Partition           int32
	Records             uint64
	First, Last         int64
	LastAccess          string
	Pages               uint64     // of its latest record; at a moment, what it held then
	Resolved            *blockView // what Strata resolved of it; nil: no record with pages (at a moment: not live)
	Heat                string     // its latest DAMON heat sample (by the moment) in words; "" without one
	// Fill is the faults of its puts (FILL records, by the moment), each
	// put counted once; nil when none was measured.
	Fill *jsonform.FaultCounts
}

// maxRDDRecords bounds the records an RDD's page reads.
const maxRDDRecords = 200000

// lastResolved is the RDD page's at= that shows each block as last
// resolved while it was live rather than at one moment.
const lastResolved = "last"

func (h *Handler) pageRDD(r *http.Request) (string, any, error) {
	id := r.PathValue("app")
	rdd, err := pathRDD(r)
	if err != nil {
		return "", nil, err
	}
	// A running app's blocks each as last resolved while live; an ended
	// app's at its peak; or the moment asked for (at=): the blocks as
	// their records up to it say, and what those live then held. at=last
	// asks for each block as last resolved while it was live, as the
	// app's RDD table counts it.
	asked := r.URL.Query().Get("at")
	last, want := asked == lastResolved, asked
	if last {
		want = "" // the default moment, for the time control's span
	}
	mo, err := h.momentOf(r, id, want)
	if err != nil {
		return "", nil, err
	}
	at := mo.AtNs // a running app's default: 0, each block as last resolved
	if !mo.Default {
		at = mo.Time()
	}
	view := newMomentView(mo, asked)
	if last {
		at = 0
		view.Says, view.AtMs = "each block as last resolved while it was live", view.SpanMs
	}
	blocks := map[[2]string]*blockRow{}
	var n uint64
	req := &stratav1.RecordsRequest{AppId: id, RddId: &rdd, Limit: maxRDDRecords}
	err = h.q.RecordsEach(r.Context(), req, func(rec *stratav1.RecordRow) error {
		n++
		if at != 0 && rec.GetTimeUnixNano() > at {
			return nil
		}
		b := rec.GetBlock()
		k := [2]string{b.GetExecutorId(), b.GetBlockId()}
		row := blocks[k]
		if row == nil {
			row = &blockRow{ExecutorID: k[0], BlockID: k[1], Partition: b.GetPartition(), First: rec.GetTimeUnixNano()}
			blocks[k] = row
		}
		row.Records++
		switch rec.GetAccess() {
		case stratav1.AccessKind_ACCESS_KIND_FILL:
			if row.Fill == nil {
				row.Fill = &jsonform.FaultCounts{}
			}
			row.Fill.Add(jsonform.NewFaultCounts(rec.GetFaults()))
		case stratav1.AccessKind_ACCESS_KIND_FAULT: // a sampled fault or counters: not the block's pages
		default:
			if rec.GetTimeUnixNano() != row.Last {
				row.Pages = 0
			}
			row.Last = rec.GetTimeUnixNano()
			row.LastAccess = jsonform.Access(rec.GetAccess())
			row.Pages += rec.GetPages()
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	resolved, err := h.blockViews(r.Context(), id, rdd, at)
	if err != nil {
		return "", nil, err
	}
	heat, err := h.q.HeatOf(r.Context(), id, &rdd, query.DefaultColdFor)
	if err != nil {
		return "", nil, err
	}
	blockHeat := latestHeat(heat, at)
	latest := make([]*stratav1.HeatSample, 0, len(blockHeat))
	for _, s := range blockHeat {
		latest = append(latest, s)
	}
	slices.SortFunc(latest, func(a, b *stratav1.HeatSample) int {
		return strings.Compare(a.GetExecutorId()+"/"+a.GetBlockId(), b.GetExecutorId()+"/"+b.GetBlockId())
	})
	rddHeat := jsonform.HeatWords(answer.HeatFiguresOf(latest, heat.ColdFor), heat.ColdFor)
	rows := make([]blockRow, 0, len(blocks))
	var live uint64
	var fill *jsonform.FaultCounts // the RDD's: its blocks' summed
	for k, b := range blocks {
		if b.Fill != nil {
			if fill == nil {
				fill = &jsonform.FaultCounts{}
			}
			fill.Add(*b.Fill)
		}
		if s := blockHeat[k]; s != nil {
			b.Heat = jsonform.HeatWords(answer.HeatFiguresOf([]*stratav1.HeatSample{s}, heat.ColdFor), heat.ColdFor)
		}
		if at != 0 {
			b.Pages = 0 // only what it held at the moment
		}
		for i := range resolved {
			if resolved[i].ExecutorID == k[0] && resolved[i].BlockID == k[1] {
				b.Resolved = &resolved[i]
				if at != 0 {
					b.Pages = resolved[i].Pages
					live++
				}
			}
		}
		rows = append(rows, *b)
	}
	slices.SortFunc(rows, func(a, b blockRow) int {
		if a.Partition != b.Partition {
			return int(a.Partition) - int(b.Partition)
		}
		return strings.Compare(a.ExecutorID+"/"+a.BlockID, b.ExecutorID+"/"+b.BlockID)
	})
	return "rdd", map[string]any{"App": id, "RDD": rdd, "Color": rddColor(rdd), "Blocks": rows,
		"Truncated": n >= maxRDDRecords, "Moment": view, "AtMoment": at != 0,
		"Live": live, "Heat": rddHeat, "HeatMap": heatMap(heat, at), "Fill": fill}, nil
}

// latestHeat is each block's (executor, block id) latest heat sample, at
// or before at when at is not 0.
func latestHeat(heat *answer.Heat, at int64) map[[2]string]*stratav1.HeatSample {
	out := map[[2]string]*stratav1.HeatSample{}
	for _, r := range heat.RDDs {
		for _, b := range r.Blocks {
			for _, s := range b.Samples {
				if at != 0 && s.GetTimeUnixNano() > at {
					break
				}
				k := [2]string{s.GetExecutorId(), s.GetBlockId()}
				if prev := out[k]; prev == nil || s.GetTimeUnixNano() >= prev.GetTimeUnixNano() {
					out[k] = s
				}
			}
		}
	}
	return out
}

func (h *Handler) pageBlock(r *http.Request) (string, any, error) {
	life, err := h.q.BlockLife(r.Context(), r.PathValue("app"), r.PathValue("exec"), r.PathValue("block"))
	if err != nil {
		return "", nil, err
	}
	return "block", map[string]any{"Life": life, "Chart": lifeChart(life.Steps)}, nil
}

// rddRate is one RDD's faults on the overhead page.
type rddRate struct {
	RDD     int32
	Color   string
	Faults  jsonform.FaultCounts
	PerSec  float64 // over the app's traced time
	PerGiB  float64 // per GiB of its cached blocks (as last resolved while live)
	Present uint64
}

func (h *Handler) pageOverhead(r *http.Request) (string, any, error) {
	ctx := r.Context()
	id := r.PathValue("app")
	a, err := h.q.App(ctx, id)
	if err != nil {
		return "", nil, err
	}
	rows, err := h.rddRows(ctx, id)
	if err != nil {
		return "", nil, err
	}
	secs := float64(a.LastNs-a.FirstNs) / 1e9
	var rates []rddRate
	for _, row := range rows {
		rr := rddRate{RDD: row.RDD, Color: row.Color, Faults: row.Faults, Present: row.Present}
		if secs > 0 {
			rr.PerSec = float64(row.Faults.Total()) / secs
		}
		if row.Bytes > 0 {
			rr.PerGiB = float64(row.Faults.Total()) / (float64(row.Bytes) / (1 << 30))
		}
		rates = append(rates, rr)
	}
	over, err := h.q.Overhead(ctx, &stratav1.OverheadRequest{AppId: id})
	if err != nil {
		return "", nil, err
	}
	hot, err := h.q.Hot(ctx, &stratav1.HotRequest{AppId: id, Limit: 20})
	if err != nil {
		return "", nil, err
	}
	return "overhead", map[string]any{"App": a, "Seconds": secs, "Rates": rates, "Overhead": over.GetRows(), "Hot": hot.GetPages(),
		"HotMethod": "sampled page faults per page; REFERENCED/ACTIVE flags are LRU bookkeeping, not access recency"}, nil
}

// walkCell says the page-walk share of one process, or why there is none.
func walkCell(o *stratav1.OverheadRow) string {
	if o.WalkPct == nil {
		st := o.GetCounters().GetPmuStatus()
		switch {
		case st == "":
			return "unavailable: not reported"
		case strings.HasPrefix(st, "unavailable"):
			return st
		default:
			return "not measured (pmu " + st + ")"
		}
	}
	s := fmt.Sprintf("%.2f%%", o.GetWalkPct())
	if o.WalkPctRdd != nil {
		s += fmt.Sprintf(" (rdd %.2f%%)", o.GetWalkPctRdd())
	}
	return s
}

func init() {
	funcs["walk"] = walkCell
	funcs["seconds"] = func(c *stratav1.WorkloadCounters) string {
		return fmt.Sprintf("%.1f", float64(c.GetEndUnixNano()-c.GetStartUnixNano())/1e9)
	}
}
