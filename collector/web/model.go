package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
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

func severityName(s stratav1.Severity) string { return jsonform.Severity(s) }

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
func jobQuery(r *http.Request) (answer.JobQuery, error) {
	v := r.URL.Query()
	q := answer.JobQuery{User: strings.TrimSpace(v.Get("user")), Queue: strings.TrimSpace(v.Get("queue")),
		Type: strings.TrimSpace(v.Get("type")), AppID: strings.TrimSpace(v.Get("app"))}
	var err error
	if q.MinSeverity, err = query.ParseSeverity(v.Get("severity")); err != nil {
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
		q.Order = answer.JobsWorst
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
	Node  int32
	Pages uint64
	Share float64 // of the RDD's present pages
}

// rddRow is one line of an application's RDD table: the RDD's jsonform
// (the answer `strata report` prints) with its colour, its resolved share
// in words and its NUMA shares.
type rddRow struct {
	RDD                            int32
	Color                          string
	Blocks, LiveBlocks             uint64
	Bytes, SparkBytes, SharedBytes uint64
	Share                          string // the resolved share as printed, "93.8 %"
	Resolved                       string // in words: "walked 97.2 %"
	Pages, Present, Swapped        uint64
	THPShare                       float64
	Nodes                          []nodePages
	Reads, Writes, Moves           uint64
	Faults                         jsonform.FaultCounts
	FillFaults                     *jsonform.FaultCounts // of its blocks' puts; nil: none measured
}

// shareOf is resolved over spark as printed beside the words, "-" when
// the share is unknown (share nil: some block's Spark size unknown).
func shareOf(resolved, spark uint64, share *float64) string {
	if share == nil {
		spark = 0
	}
	return query.ShareWords(resolved, spark)
}

// rddRows is the app's RDD table, ordered by RDD.
func (h *Handler) rddRows(ctx context.Context, app string) ([]rddRow, error) {
	rdds, err := h.q.RDDs(ctx, app)
	if err != nil {
		return nil, err
	}
	out := make([]rddRow, 0, len(rdds))
	for _, f := range jsonform.NewRDDs(rdds) {
		r := rddRow{RDD: f.RDD, Color: rddColor(f.RDD), Blocks: f.Blocks, LiveBlocks: f.LiveBlocks, Bytes: f.Bytes,
			SparkBytes: f.SparkBytes, SharedBytes: f.SharedBytes, Share: shareOf(f.ResolvedBytes, f.SparkBytes, f.ResolvedShare),
			Resolved: f.Resolved, Pages: f.Pages, Present: f.Present, Swapped: f.Swapped, THPShare: f.THPShare,
			Reads: f.Reads, Writes: f.Writes, Moves: f.Moves, Faults: f.Faults, FillFaults: f.FillFaults}
		for _, n := range f.Nodes {
			np := nodePages{Node: n.Node, Pages: n.Pages}
			if r.Present > 0 {
				np.Share = float64(np.Pages) / float64(r.Present)
			}
			r.Nodes = append(r.Nodes, np)
		}
		out = append(out, r)
	}
	return out, nil
}

// blockView is what an RDD's page shows of what Strata resolved of one
// block: the block's jsonform (ResolvedBlock) in words.
type blockView struct {
	ExecutorID, BlockID string
	SparkBytes, Bytes   uint64
	Pages               uint64 // its buffers' pages
	Share, Resolved     string
	Buffers             []bufferView // by chunk
}

// momentView is the time control of a page that shows one moment of an
// application's life (the RDD page; the memory map draws its own from
// the API's moment).
type momentView struct {
	Says  string // query.MomentWords
	Input string // at= as asked; "" the app's default
	// SpanMs is the app's life from its first to its last lifecycle
	// record and AtMs the moment in it, in ms (the slider); AtMs is the
	// end for now.
	SpanMs, AtMs int64
}

func newMomentView(m answer.Moment, asked string) momentView {
	v := momentView{Says: query.MomentWords(m), Input: asked, SpanMs: (m.LastNs - m.FirstNs) / 1e6}
	v.AtMs = v.SpanMs
	if m.AtNs != 0 {
		v.AtMs = min(max((m.AtNs-m.FirstNs)/1e6, 0), v.SpanMs)
	}
	return v
}

// bufferView is one buffer of a block, named with what it holds.
type bufferView struct {
	Chunk  uint32
	Column *int32
	Label  string
}

// blockViews returns what Strata resolved of each block of one RDD: of
// those live at the moment atNs, or with 0 each as last resolved while
// live.
func (h *Handler) blockViews(ctx context.Context, app string, rdd int32, atNs int64) ([]blockView, error) {
	blocks, err := h.q.Blocks(ctx, app, rdd, atNs)
	if err != nil {
		return nil, err
	}
	out := make([]blockView, 0, len(blocks))
	for _, b := range jsonform.NewResolvedBlocks(blocks) {
		v := blockView{ExecutorID: b.ExecutorID, BlockID: b.BlockID, SparkBytes: b.SparkBytes, Bytes: b.Bytes,
			Share: shareOf(b.ResolvedBytes, b.SparkBytes, b.ResolvedShare), Resolved: b.Resolved}
		for _, x := range b.Buffers {
			v.Buffers = append(v.Buffers, bufferView{Chunk: x.Chunk, Column: x.Column, Label: bufferLabel(x)})
			v.Pages += x.Pages
		}
		out = append(out, v)
	}
	return out, nil
}

// bufferLabel is how the RDD's page names one buffer and what it holds:
// "column 1 name: buffers, 4.0 KiB", "chunk 0/2: buffers, 12.0 KiB",
// "walked objects, 10.2 KiB in 210 objects (400 B shared)".
func bufferLabel(b jsonform.Buffer) string {
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
	s := b.Holds + ", " + bytesLabel(b.Bytes)
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
