package web

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// maxHeatColumns bounds the heat map's time columns: with more read times
// than this, a column is an equal share of the samples' span.
const maxHeatColumns = 48

// maxHeatRows bounds the heat map's partitions: the lowest maxHeatRows
// are drawn, and a line says how many more there are.
const maxHeatRows = 200

// heatColumn is one time column of the heat map: the samples read in
// [Start, End] (one read time when Start == End).
type heatColumn struct{ Start, End int64 }

// heatColumns are the columns of read times: each its own column when they
// are at most maxHeatColumns, else maxHeatColumns equal spans of
// [first, last].
func heatColumns(times []int64) []heatColumn {
	slices.Sort(times)
	times = slices.Compact(times)
	if len(times) == 0 {
		return nil
	}
	var out []heatColumn
	if len(times) <= maxHeatColumns {
		for _, t := range times {
			out = append(out, heatColumn{t, t})
		}
		return out
	}
	first, last := times[0], times[len(times)-1]
	width := (last - first + maxHeatColumns) / maxHeatColumns // ceiling of the span / columns, at least 1
	for i := range int64(maxHeatColumns) {
		out = append(out, heatColumn{first + i*width, min(first+(i+1)*width-1, last)})
	}
	return out
}

// heatCell is one partition's samples in one column, and their figures.
type heatCell struct {
	samples []*stratav1.HeatSample
	f       answer.HeatFigures
}

// heatColor is the colour of v on the scale [0, top]: from pale yellow
// (no access seen) to dark red (top).
func heatColor(v, top float64) string {
	x := 0.0
	if top > 0 {
		x = math.Max(0, math.Min(1, v/top))
	}
	lerp := func(a, b float64) int { return int(math.Round(a + (b-a)*x)) }
	return fmt.Sprintf("#%02x%02x%02x", lerp(0xff, 0xbd), lerp(0xf7, 0x00), lerp(0xbc, 0x26))
}

// partialColor fills a cell whose samples cannot rank it (a shared
// kdamond's partial view, or no rate).
const partialColor = "#c6d0e0"

// heatMap draws an RDD's DAMON heat per partition (rows) and read time
// (columns) from the samples of heat read at or before at (every sample
// when at is 0): each cell coloured by the accesses per second per GiB
// of the partition's samples in its column (answer.HeatFiguresOf), blue-grey
// when they cannot say it (partial, no rate). Every cell carries its
// numbers in data-* attributes and its words in a <title>.
func heatMap(heat *answer.Heat, at int64) template.HTML {
	var samples []*stratav1.HeatSample
	var times []int64
	for _, r := range heat.RDDs {
		for _, b := range r.Blocks {
			for _, s := range b.Samples {
				if at != 0 && s.GetTimeUnixNano() > at {
					continue
				}
				samples = append(samples, s)
				times = append(times, s.GetTimeUnixNano())
			}
		}
	}
	cols := heatColumns(times)
	parts := map[int32]bool{}
	for _, s := range samples {
		parts[s.GetPartition()] = true
	}
	rows := make([]int32, 0, len(parts))
	for p := range parts {
		rows = append(rows, p)
	}
	slices.Sort(rows)
	more := max(len(rows)-maxHeatRows, 0)
	rows = rows[:len(rows)-more]
	const cellH, left, top, right = 18, 90, 10, 20
	const w = 900
	h := top + cellH*len(rows) + 70
	s := newSVG(w, max(h, 60), "chart heat-map")
	if len(cols) == 0 {
		s.text(w/2, 30, "middle", "empty", jsonform.NoHeat)
		return s.done()
	}
	col := func(t int64) int {
		return max(0, slices.IndexFunc(cols, func(c heatColumn) bool { return t >= c.Start && t <= c.End }))
	}
	row := map[int32]int{}
	for i, p := range rows {
		row[p] = i
	}
	drawn := samples[:0:0]
	for _, smp := range samples {
		if _, ok := row[smp.GetPartition()]; ok {
			drawn = append(drawn, smp)
		}
	}
	samples = drawn
	cells := make([][]heatCell, len(rows))
	for i := range cells {
		cells[i] = make([]heatCell, len(cols))
	}
	for _, smp := range samples {
		c := &cells[row[smp.GetPartition()]][col(smp.GetTimeUnixNano())]
		c.samples = append(c.samples, smp)
	}
	peak := 0.0
	for i := range cells {
		for j := range cells[i] {
			c := &cells[i][j]
			if len(c.samples) == 0 {
				continue
			}
			slices.SortFunc(c.samples, func(a, b *stratav1.HeatSample) int {
				return cmp.Or(strings.Compare(a.GetExecutorId(), b.GetExecutorId()), strings.Compare(a.GetBlockId(), b.GetBlockId()),
					cmp.Compare(a.GetTimeUnixNano(), b.GetTimeUnixNano()))
			})
			c.f = answer.HeatFiguresOf(c.samples, heat.ColdFor)
			if rankable(c.f) {
				peak = math.Max(peak, *c.f.AccessesPerSecGiB)
			}
		}
	}
	scale := niceMax(peak)
	plotW := float64(w - left - right)
	cw := plotW / float64(len(cols))
	for i, p := range rows {
		y := float64(top + i*cellH)
		s.text(left-8, y+13, "end", "axis", fmt.Sprintf("partition %d", p))
		for j, c := range cells[i] {
			if len(c.samples) == 0 {
				continue
			}
			x := left + cw*float64(j)
			fill, aps := partialColor, ""
			if rankable(c.f) {
				fill, aps = heatColor(*c.f.AccessesPerSecGiB, scale), fmt.Sprintf("%.4g", *c.f.AccessesPerSecGiB)
			}
			share := ""
			if c.f.ColdShare != nil {
				share = fmt.Sprintf("%.4g", *c.f.ColdShare)
			}
			s.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" class="heat-cell" data-partition="%d" data-start-ns="%d" data-end-ns="%d" data-samples="%d" data-aps="%s" data-cold-share="%s" data-partial="%t"><title>%s</title></rect>`,
				x, y, math.Max(cw-1, 1), cellH-2, fill, p, cols[j].Start, cols[j].End, len(c.samples), aps, share, c.f.Partial,
				html.EscapeString(fmt.Sprintf("partition %d, %s: %s (%d samples)", p, columnLabel(cols[j]), jsonform.HeatWords(c.f, heat.ColdFor),
					len(c.samples))))
		}
	}
	base := float64(top + cellH*len(rows))
	s.text(left, base+16, "start", "axis", time.Unix(0, cols[0].Start).UTC().Format("15:04:05.000"))
	s.text(w-right, base+16, "end", "axis", time.Unix(0, cols[len(cols)-1].End).UTC().Format("15:04:05.000"))
	// The scale: ten steps from 0 to its top.
	for k := range 10 {
		v := scale * float64(k) / 9
		s.add(`<rect x="%d" y="%.1f" width="20" height="10" fill="%s" class="heat-scale" data-aps="%.4g"/>`, left+k*20, base+28,
			heatColor(v, scale), v)
	}
	s.text(left+210, base+37, "start", "axis", fmt.Sprintf("0 to %.4g accesses/s per GiB; blue-grey: partial or no rate", scale))
	if more > 0 {
		s.text(left, base+54, "start", "axis", fmt.Sprintf("%d more partitions not drawn: their samples are in the heat API", more))
	}
	return s.done()
}

// rankable tells whether figures f can colour a cell by their rate.
func rankable(f answer.HeatFigures) bool { return !f.Partial && f.AccessesPerSecGiB != nil }

// columnLabel is a column's time in words.
func columnLabel(c heatColumn) string {
	f := func(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") }
	if c.Start == c.End {
		return f(c.Start)
	}
	return f(c.Start) + "–" + f(c.End)
}
