package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// rddPalette colours RDDs 0..11; later RDDs get hues a golden angle
// apart, so no two RDDs of one application look alike; blocks that are not
// RDD blocks (-1) are grey. The map, the charts and the legends all take
// their colours from rddColor.
var rddPalette = []string{
	"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
	"#17becf", "#bcbd22", "#393b79", "#ad494a", "#637939", "#7b4173",
}

func rddColor(rdd int32) string {
	if rdd < 0 {
		return "#9e9e9e"
	}
	if int(rdd) < len(rddPalette) {
		return rddPalette[rdd]
	}
	return fmt.Sprintf("hsl(%d, 60%%, 45%%)", int(float64(rdd)*137.508)%360)
}

// severityColors are the severities' colours, as Dr. Elephant's UI shows
// them, by Severity number.
var severityColors = [5]string{"#4caf50", "#8bc34a", "#f2c12e", "#ef8a17", "#d64545"}

func severityName(s stratav1.Severity) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SEVERITY_"))
}

func parseSeverity(s string) (stratav1.Severity, error) {
	if s == "" {
		return stratav1.Severity_SEVERITY_NONE, nil
	}
	v, ok := stratav1.Severity_value["SEVERITY_"+strings.ToUpper(strings.TrimSpace(s))]
	if !ok {
		return 0, fmt.Errorf("%w: severity %q: want none, low, moderate, severe or critical", errBadRequest, s)
	}
	return stratav1.Severity(v), nil
}

// parseTime reads a time bound: unix milliseconds, RFC 3339, a
// datetime-local value (2006-01-02T15:04, UTC) or a date (UTC midnight).
func parseTime(name, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q: want unix ms, RFC 3339 or YYYY-MM-DD", errBadRequest, name, s)
}

func parseUint(name, s string, def, limit uint64) (uint64, error) {
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil || v > limit {
		return 0, fmt.Errorf("%w: %s %q: want a number up to %d", errBadRequest, name, s, limit)
	}
	return v, nil
}

// pageSize is how many jobs a page of the search lists by default.
const pageSize = 25

// jobQuery reads the search parameters: user, queue, type, severity
// (at or above), from and to (finish time), order (newest or worst),
// page (from 1) or offset, limit.
func jobQuery(r *http.Request) (store.JobQuery, error) {
	v := r.URL.Query()
	q := store.JobQuery{User: strings.TrimSpace(v.Get("user")), Queue: strings.TrimSpace(v.Get("queue")),
		Type: strings.TrimSpace(v.Get("type")), AppID: strings.TrimSpace(v.Get("app"))}
	var err error
	if q.MinSeverity, err = parseSeverity(v.Get("severity")); err != nil {
		return q, err
	}
	if q.FinishedFrom, err = parseTime("from", v.Get("from")); err != nil {
		return q, err
	}
	if q.FinishedTo, err = parseTime("to", v.Get("to")); err != nil {
		return q, err
	}
	switch v.Get("order") {
	case "", "newest":
	case "worst":
		q.Order = store.JobsWorst
	default:
		return q, fmt.Errorf("%w: order %q: want newest or worst", errBadRequest, v.Get("order"))
	}
	limit, err := parseUint("limit", v.Get("limit"), pageSize, 1000)
	if err != nil {
		return q, err
	}
	q.Limit = uint32(max(limit, 1))
	page, err := parseUint("page", v.Get("page"), 1, 1<<20)
	if err != nil {
		return q, err
	}
	offset, err := parseUint("offset", v.Get("offset"), (max(page, 1)-1)*uint64(q.Limit), 1<<31)
	if err != nil {
		return q, err
	}
	q.Offset = uint32(offset)
	return q, nil
}

// nodePages is an RDD's present pages on one NUMA node (-1: unknown).
type nodePages struct {
	Node  int32   `json:"node"`
	Pages uint64  `json:"pages"`
	Share float64 `json:"share"` // of the RDD's present pages
}

// faultSums are an RDD's page faults, summed over its blocks.
type faultSums struct {
	Read         uint64 `json:"read"`
	Write        uint64 `json:"write"`
	Exec         uint64 `json:"exec"`
	Major        uint64 `json:"major"`
	Unclassified uint64 `json:"unclassified"`
}

func (f faultSums) Total() uint64 { return f.Read + f.Write + f.Exec + f.Major + f.Unclassified }

// rddRow is one line of an application's RDD table (and of
// /api/v1/apps/{app}/rdds): the store's RDDs answer, which `strata report`
// prints too, with each RDD's colour and shares.
type rddRow struct {
	RDD        int32  `json:"rdd"`
	Color      string `json:"color"`
	Blocks     uint64 `json:"blocks"`
	LiveBlocks uint64 `json:"live_blocks"`
	// Bytes: of the blocks' data as Strata resolved it, each block buffer
	// as last resolved while live; the rest say what they hold against
	// Spark's own size of the blocks (see resolvedOf).
	Bytes uint64 `json:"bytes"`
	resolvedOf
	Pages    uint64      `json:"pages"` // of those ranges, holes excluded
	Present  uint64      `json:"present"`
	Swapped  uint64      `json:"swapped"`
	THP      uint64      `json:"thp"`
	THPShare float64     `json:"thp_share"` // of present pages
	Nodes    []nodePages `json:"nodes"`     // NUMA spread of present pages
	Reads    uint64      `json:"reads"`
	Writes   uint64      `json:"writes"`
	Moves    uint64      `json:"moves"`
	Evicted  uint64      `json:"evicted"`
	Faults   faultSums   `json:"faults"`
}

// rddRows is the store's RDDs answer for app, ordered by RDD.
func (h *Handler) rddRows(ctx context.Context, app string) ([]rddRow, error) {
	rdds, err := h.r.RDDs(ctx, app)
	if err != nil {
		return nil, err
	}
	out := make([]rddRow, 0, len(rdds))
	for _, x := range rdds {
		f := x.GetFaults()
		r := rddRow{RDD: x.GetRddId(), Color: rddColor(x.GetRddId()), Blocks: x.GetBlocks(), LiveBlocks: x.GetLiveBlocks(),
			Bytes: x.GetBytes(), resolvedOf: newResolvedOf(x.GetSparkBytes(), x.GetResolvedBytes(), x.GetSharedBytes(),
				x.ResolvedShare, x.GetParts()),
			Pages: x.GetPages(), Present: x.GetPresent(), Swapped: x.GetSwapped(), THP: x.GetThp(),
			Nodes: []nodePages{}, Reads: x.GetReads(), Writes: x.GetWrites(), Moves: x.GetMoves(), Evicted: x.GetEvicted(),
			Faults: faultSums{Read: f.GetRead(), Write: f.GetWrite(), Exec: f.GetExec(), Major: f.GetMajor(),
				Unclassified: f.GetUnclassified()}}
		for _, n := range x.GetNodes() {
			np := nodePages{Node: n.GetNumaNode(), Pages: n.GetPages()}
			if r.Present > 0 {
				np.Share = float64(np.Pages) / float64(r.Present)
			}
			r.Nodes = append(r.Nodes, np)
		}
		if r.Present > 0 {
			r.THPShare = float64(r.THP) / float64(r.Present)
		}
		out = append(out, r)
	}
	return out, nil
}

// resolvedOf is what an RDD's or a block's buffers hold against Spark's
// size of its blocks, as RddReport and store.BlockCoverage say it, with
// the words `strata report` prints (query.ResolvedWords).
type resolvedOf struct {
	SparkBytes    uint64       `json:"spark_bytes"`    // Spark's size; 0 unknown
	ResolvedBytes uint64       `json:"resolved_bytes"` // buffers, walked and cut-walk bytes
	SharedBytes   uint64       `json:"shared_bytes"`   // objects another block's walk holds
	ResolvedShare *float64     `json:"resolved_share"` // resolved_bytes / spark_bytes; null unknown
	Share         string       `json:"-"`              // the share as the page prints it, "93.8 %"
	Resolved      string       `json:"resolved"`       // in words: "walked 97.2 %", "references only: walk pending"
	Parts         []resolvedPt `json:"parts"`
}

// resolvedPt is one part of resolvedOf: the buffers of one resolution.
type resolvedPt struct {
	Resolution    string   `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Blocks        uint64   `json:"blocks"`
	Buffers       uint64   `json:"buffers"`
	Bytes         uint64   `json:"bytes"`
	Objects       uint64   `json:"objects"`
	SharedObjects uint64   `json:"shared_objects"`
	SharedBytes   uint64   `json:"shared_bytes"`
	OpaqueObjects uint64   `json:"opaque_objects"`
	Details       []string `json:"details"`
}

func newResolvedOf(spark, resolved, shared uint64, share *float64, parts []*stratav1.ResolvedPart) resolvedOf {
	r := resolvedOf{SparkBytes: spark, ResolvedBytes: resolved, SharedBytes: shared, ResolvedShare: share, Parts: []resolvedPt{}}
	known := uint64(0) // Spark's bytes, when every block's is known
	if share != nil {
		known = spark
	}
	r.Share, r.Resolved = query.ShareWords(resolved, known), query.ResolvedWords(parts, known)
	for _, p := range parts {
		r.Parts = append(r.Parts, resolvedPt{Resolution: enumName(p.GetResolution().String(), "RESOLUTION_"), Blocks: p.GetBlocks(),
			Buffers: p.GetBuffers(), Bytes: p.GetBytes(), Objects: p.GetObjects(), SharedObjects: p.GetSharedObjects(),
			SharedBytes: p.GetSharedBytes(), OpaqueObjects: p.GetOpaqueObjects(), Details: append([]string{}, p.GetDetails()...)})
	}
	return r
}

// blockBytes is one Spark block of an RDD and what Strata resolved of it
// (/api/v1/apps/{app}/rdds/{rdd}/blocks and the RDD's page): the store's
// Blocks answer, its buffers each as last resolved while live.
type blockBytes struct {
	ExecutorID string `json:"executor_id"`
	BlockID    string `json:"block_id"`
	Partition  int32  `json:"partition"`
	Bytes      uint64 `json:"bytes"` // of its data as Strata resolved it
	resolvedOf
	Buffers []bufferBytes `json:"buffers"` // by chunk
}

// bufferBytes is one buffer of a block: a serialized block's buffer, a
// cached batch's column buffer, a deserialized block's array and objects.
type bufferBytes struct {
	Chunk       uint32 `json:"chunk"`
	Chunks      uint32 `json:"chunks"`
	TimeNs      int64  `json:"time_ns"`    // of the record(s) that resolved it
	Resolution  string `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Bytes       uint64 `json:"bytes"`      // coverage bytes (the range's length without coverage)
	Objects     uint64 `json:"objects"`
	SharedBytes uint64 `json:"shared_bytes"`
	Detail      string `json:"detail"`
	CachedBatch bool   `json:"cached_batch"`
	Column      *int32 `json:"column"` // a cached batch's column; null: every column (Arrow) or not a column buffer
	ColumnName  string `json:"column_name"`
	Pages       uint64 `json:"pages"`
	Label       string `json:"-"` // the page's words for it
}

// blockBytes returns the store's Blocks answer for one RDD of app.
func (h *Handler) blockBytes(ctx context.Context, app string, rdd int32) ([]blockBytes, error) {
	blocks, err := h.r.Blocks(ctx, app, rdd)
	if err != nil {
		return nil, err
	}
	out := make([]blockBytes, 0, len(blocks))
	for _, b := range blocks {
		bb := blockBytes{ExecutorID: b.ExecutorID, BlockID: b.BlockID, Partition: b.Partition, Bytes: b.Bytes,
			resolvedOf: newResolvedOf(b.SparkBytes, b.ResolvedBytes, b.SharedBytes, b.ResolvedShare, b.Parts), Buffers: []bufferBytes{}}
		for _, x := range b.Buffers {
			c := x.Coverage
			buf := bufferBytes{Chunk: x.Chunk, Chunks: x.Chunks, TimeNs: x.TimeNs, Bytes: x.Length, CachedBatch: x.CachedBatch,
				Column: x.Column, ColumnName: x.ColumnName, Pages: x.Pages,
				Resolution: enumName(c.GetResolution().String(), "RESOLUTION_")}
			if c != nil {
				buf.Bytes, buf.Objects, buf.SharedBytes, buf.Detail = c.GetBytes(), c.GetObjects(), c.GetSharedBytes(), c.GetDetail()
			}
			buf.Label = bufferLabel(buf, query.HoldsWords(c))
			bb.Buffers = append(bb.Buffers, buf)
		}
		out = append(out, bb)
	}
	return out, nil
}

// bufferLabel is how the RDD's page names one buffer and what it holds:
// "column 1 name: buffers, 4.0 KiB", "chunk 0/2: buffers, 12.0 KiB",
// "walked objects, 10.2 KiB in 210 objects (400 B shared)".
func bufferLabel(b bufferBytes, holds string) string {
	var name string
	switch {
	case b.CachedBatch && b.Column != nil:
		name = fmt.Sprintf("column %d", *b.Column)
		if b.ColumnName != "" {
			name += " " + b.ColumnName
		}
	case b.CachedBatch:
		name = "every column"
	case b.Chunks > 1:
		name = fmt.Sprintf("chunk %d/%d", b.Chunk, b.Chunks)
	}
	s := holds + ", " + bytesLabel(b.Bytes)
	switch {
	case b.Objects > 0 && b.CachedBatch:
		s += fmt.Sprintf(" in %d buffers", b.Objects) // a column's buffers, one per batch
	case b.Objects > 0:
		s += fmt.Sprintf(" in %d objects", b.Objects)
	}
	if b.SharedBytes > 0 {
		s += " (" + bytesLabel(b.SharedBytes) + " shared)"
	}
	if name != "" {
		s = name + ": " + s
	}
	return s
}

// app returns the summary of one application, or ErrNotFound.
func (h *Handler) app(ctx context.Context, id string) (store.AppSummary, error) {
	apps, err := h.r.Apps(ctx)
	if err != nil {
		return store.AppSummary{}, err
	}
	for _, a := range apps {
		if a.AppID == id {
			return a, nil
		}
	}
	return store.AppSummary{}, fmt.Errorf("application %s: %w: no records", id, store.ErrNotFound)
}

// occupancySeries is one RDD's resident memory over time.
type occupancySeries struct {
	RDD    int32      `json:"rdd"`
	Color  string     `json:"color"`
	Points []occPoint `json:"points"`
}

type occPoint struct {
	TimeNs int64  `json:"time_ns"`
	Pages  uint64 `json:"pages"`
	Bytes  uint64 `json:"bytes"`
}

// occupancy returns each RDD's series; a bucket the store left out (no
// change) is not repeated: the value holds until the next point.
func (h *Handler) occupancy(ctx context.Context, app string, buckets uint32) ([]occupancySeries, error) {
	pts, err := h.r.Occupancy(ctx, app, buckets)
	if err != nil {
		return nil, err
	}
	byRDD := map[int32]*occupancySeries{}
	var order []int32
	for _, p := range pts {
		s := byRDD[p.RDDID]
		if s == nil {
			s = &occupancySeries{RDD: p.RDDID, Color: rddColor(p.RDDID)}
			byRDD[p.RDDID] = s
			order = append(order, p.RDDID)
		}
		s.Points = append(s.Points, occPoint{TimeNs: p.TimeNs, Pages: p.Pages, Bytes: p.Bytes})
	}
	slices.Sort(order)
	out := make([]occupancySeries, 0, len(order))
	for _, r := range order {
		out = append(out, *byRDD[r])
	}
	return out, nil
}

// memMap is /api/v1/apps/{app}/memmap: store.PhysMap with each RDD's
// colour.
type memMap struct {
	*store.PhysMap
	Colors map[string]string `json:"colors"` // RDD id -> colour
}

func (h *Handler) memMap(ctx context.Context, app string, r *http.Request) (memMap, error) {
	v := r.URL.Query()
	q := store.PhysMapQuery{AppID: app, Machine: v.Get("machine")}
	var err error
	if q.From, err = parseUint("from", v.Get("from"), 0, 1<<52); err != nil {
		return memMap{}, err
	}
	if q.To, err = parseUint("to", v.Get("to"), 0, 1<<52); err != nil {
		return memMap{}, err
	}
	b, err := parseUint("buckets", v.Get("buckets"), 0, 4096)
	if err != nil {
		return memMap{}, err
	}
	q.Buckets = uint32(b)
	m, err := h.r.PhysMap(ctx, q)
	if err != nil {
		return memMap{}, err
	}
	out := memMap{PhysMap: m, Colors: map[string]string{}}
	for _, rp := range m.RDDs {
		out.Colors[strconv.Itoa(int(rp.RDDID))] = rddColor(rp.RDDID)
	}
	return out, nil
}
