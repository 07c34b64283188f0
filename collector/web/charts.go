package web

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The charts are SVG drawn here, so a page shows exactly the numbers the
// API returns, with no script: every mark carries its numbers in data-*
// attributes and a <title> (the tooltip).

// nodeColor colours NUMA node n in the NUMA charts (-1: unknown).
func nodeColor(n int32) string {
	palette := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"}
	if n < 0 {
		return "#bab0ac"
	}
	return palette[int(n)%len(palette)]
}

func nodeLabel(n int32) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprintf("node %d", n)
}

type svg struct{ b strings.Builder }

func newSVG(w, h int, class string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`,
		class, w, h, w, h)
	return s
}

func (s *svg) add(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svg) text(x, y float64, anchor, class, t string) {
	s.add(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, html.EscapeString(t))
}

func (s *svg) done() template.HTML {
	s.b.WriteString("</svg>")
	return template.HTML(s.b.String()) // every text above went through EscapeString
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func formatMs(ms int64, bucketMs int64) string {
	t := time.UnixMilli(ms).UTC()
	if bucketMs >= int64(24*time.Hour/time.Millisecond) {
		return t.Format("2006-01-02")
	}
	return t.Format("01-02 15:04")
}

// severityChart draws jobs per bucket as bars stacked by severity.
func severityChart(tl []answer.SeverityBucket, bucketMs int64) template.HTML {
	const w, h, left, bottom, top = 900, 220, 50, 30, 10
	s := newSVG(w, h, "chart severity-chart")
	if len(tl) == 0 {
		s.text(w/2, h/2, "middle", "empty", "no analysed jobs")
		return s.done()
	}
	first, last := tl[0].StartMs, tl[len(tl)-1].StartMs
	n := int((last-first)/bucketMs) + 1
	var peak uint64
	for _, b := range tl {
		var sum uint64
		for _, c := range b.Counts {
			sum += c
		}
		peak = max(peak, sum)
	}
	ymax := niceMax(float64(peak))
	plotW, plotH := float64(w-left-10), float64(h-bottom-top)
	bw := plotW / float64(n)
	for _, f := range []float64{0, 0.5, 1} {
		y := top + plotH*(1-f)
		s.add(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>`, left, w-10, y, y)
		s.text(left-6, y+4, "end", "axis", fmt.Sprintf("%g", ymax*f))
	}
	for _, b := range tl {
		i := int((b.StartMs - first) / bucketMs)
		x := left + bw*float64(i)
		y := float64(top) + plotH
		for sev := range 5 {
			name := severityName(stratav1.Severity(sev))
			c := b.Counts[sev]
			if c == 0 {
				continue
			}
			bh := plotH * float64(c) / ymax
			y -= bh
			s.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" class="bar" data-start-ms="%d" data-severity="%s" data-jobs="%d"><title>%s: %d %s</title></rect>`,
				x+bw*0.1, y, math.Max(bw*0.8, 1), bh, severityColors[sev], b.StartMs, name, c,
				formatMs(b.StartMs, bucketMs), c, name)
		}
	}
	for _, i := range []int{0, n - 1} {
		anchor := "start"
		if i > 0 {
			anchor = "end"
		}
		x := left + bw*float64(i)
		if i > 0 {
			x += bw
		}
		s.text(x, h-10, anchor, "axis", formatMs(first+int64(i)*bucketMs, bucketMs))
	}
	return s.done()
}

// numaChart draws, per RDD, its present pages stacked by NUMA node.
func numaChart(rows []rddRow) template.HTML {
	const w, rowH, left = 900, 26, 80
	h := 30 + rowH*len(rows)
	s := newSVG(w, max(h, 60), "chart numa-chart")
	if len(rows) == 0 {
		s.text(w/2, 30, "middle", "empty", "no cached RDD pages")
		return s.done()
	}
	var peak uint64
	for _, r := range rows {
		peak = max(peak, r.Present)
	}
	xmax := niceMax(float64(peak))
	plotW := float64(w - left - 20)
	for i, r := range rows {
		y := float64(10 + i*rowH)
		s.text(left-8, y+15, "end", "axis", fmt.Sprintf("RDD %d", r.RDD))
		x := float64(left)
		for _, n := range r.Nodes {
			bw := plotW * float64(n.Pages) / xmax
			s.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" class="bar" data-rdd="%d" data-node="%d" data-pages="%d"><title>RDD %d, %s: %d pages (%.1f%%)</title></rect>`,
				x, y, bw, rowH-6, nodeColor(n.Node), r.RDD, n.Node, n.Pages, r.RDD, nodeLabel(n.Node), n.Pages, 100*n.Share)
			x += bw
		}
		s.text(x+4, y+15, "start", "value", fmt.Sprintf("%d", r.Present))
	}
	return s.done()
}

// occupancyChart draws each RDD's resident bytes over time as steps.
func occupancyChart(series []query.RDDSeries) template.HTML {
	const w, h, left, bottom, top = 900, 240, 70, 30, 10
	s := newSVG(w, h, "chart occupancy-chart")
	var t0, t1 int64 = math.MaxInt64, math.MinInt64
	var peak uint64
	for _, se := range series {
		for _, p := range se.Points {
			t0, t1 = min(t0, p.TimeNs), max(t1, p.TimeNs)
			peak = max(peak, p.Bytes)
		}
	}
	if t0 > t1 {
		s.text(w/2, h/2, "middle", "empty", "no RDD blocks recorded")
		return s.done()
	}
	ymax := niceMax(float64(peak))
	plotW, plotH := float64(w-left-20), float64(h-bottom-top)
	span := float64(max(t1-t0, 1))
	xOf := func(t int64) float64 { return left + plotW*float64(t-t0)/span }
	yOf := func(b uint64) float64 { return top + plotH*(1-float64(b)/ymax) }
	for _, f := range []float64{0, 0.5, 1} {
		y := top + plotH*(1-f)
		s.add(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>`, left, w-20, y, y)
		s.text(left-6, y+4, "end", "axis", bytesLabel(uint64(ymax*f)))
	}
	for _, se := range series {
		var pts []string
		prev := uint64(0)
		for i, p := range se.Points {
			x := xOf(p.TimeNs)
			if i > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, yOf(prev)))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, yOf(p.Bytes)))
			prev = p.Bytes
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(t1), yOf(prev)))
		last := se.Points[len(se.Points)-1]
		s.add(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2" class="series" data-rdd="%d" data-last-bytes="%d"><title>RDD %d: %s at the end</title></polyline>`,
			strings.Join(pts, " "), rddColor(se.RDD), se.RDD, last.Bytes, se.RDD, bytesLabel(last.Bytes))
	}
	s.text(left, h-10, "start", "axis", time.Unix(0, t0).UTC().Format("15:04:05.000"))
	s.text(w-20, h-10, "end", "axis", time.Unix(0, t1).UTC().Format("15:04:05.000"))
	return s.done()
}

// accessLanes are the block timeline's lanes, top to bottom.
var accessLanes = []string{"alloc", "write", "read", "move", "fault", "free"}

var accessColors = map[string]string{"alloc": "#2ca02c", "write": "#ff7f0e", "read": "#1f77b4", "move": "#9467bd",
	"fault": "#d62728", "free": "#7f7f7f"}

// lifeChart draws a block's steps on lanes by access kind over time.
func lifeChart(steps []query.LifeStep) template.HTML {
	const w, laneH, left, top = 900, 24, 60, 10
	h := top + laneH*len(accessLanes) + 30
	s := newSVG(w, h, "chart life-chart")
	if len(steps) == 0 {
		return s.done()
	}
	t0, t1 := steps[0].TimeNs, steps[0].TimeNs
	for _, st := range steps {
		t0, t1 = min(t0, st.TimeNs), max(t1, st.TimeNs)
	}
	plotW := float64(w - left - 20)
	span := float64(max(t1-t0, 1))
	lane := map[string]int{}
	for i, a := range accessLanes {
		lane[a] = i
		y := float64(top + i*laneH + laneH/2)
		s.add(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>`, left, w-20, y, y)
		s.text(left-8, y+4, "end", "axis", a)
	}
	for i, st := range steps {
		l, ok := lane[st.Access]
		if !ok {
			continue
		}
		x := left + plotW*float64(st.TimeNs-t0)/span
		y := float64(top + l*laneH + laneH/2)
		s.add(`<a href="#step-%d"><circle cx="%.1f" cy="%.1f" r="6" fill="%s" class="step" data-access="%s" data-present="%d"><title>%s %s: %d pages present</title></circle></a>`,
			i, x, y, accessColors[st.Access], st.Access, st.Present, time.Unix(0, st.TimeNs).UTC().Format("15:04:05.000000"),
			st.Access, st.Present)
	}
	s.text(left, float64(h-8), "start", "axis", time.Unix(0, t0).UTC().Format("15:04:05.000"))
	s.text(w-20, float64(h-8), "end", "axis", time.Unix(0, t1).UTC().Format("15:04:05.000"))
	return s.done()
}

// bytesLabel prints a size in binary units.
func bytesLabel(b uint64) string { return query.ByteSize(b) }
