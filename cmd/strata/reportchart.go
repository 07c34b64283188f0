package main

// This file draws `strata report --chart`: stacked bar-chart panels, one
// group of bars per RDD (one application) or per application (several),
// with gonum/plot, as SVG or PNG.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// maxChartGroups bounds the groups of one panel (the largest RDDs first).
const maxChartGroups = 16

// series is one bar per group.
type series struct {
	name   string
	values []float64
}

// panel is one bar chart: groups along X, one bar of each series per group.
type panel struct {
	title, ylabel string
	groups        []string
	series        []series
}

// checkChartPath refuses a chart file whose format is not known, before
// anything is asked of the collector.
func checkChartPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
		return nil
	}
	return badUsage("report", "--chart %s: want a .svg or .png file", path)
}

// drawReportChart draws the panels of rs into path.
func drawReportChart(path, title string, rs []appReport) error {
	var panels []panel
	if len(rs) == 1 {
		panels = appPanels(rs[0])
		if title == "" {
			title = "Strata report: " + appLabel(rs[0])
		}
	} else {
		panels = comparePanels(rs)
		if title == "" {
			title = "Strata report"
		}
	}
	return drawPanels(path, title, panels)
}

func appLabel(r appReport) string {
	if r.Name != "" {
		return r.Name
	}
	return r.App
}

// walkPanel is the page-walk panel of groups whose read and write shares
// are given (nil: not measured), or, when none was measured, the faults in
// RDD blocks under a title that says why there is no page-walk share.
func walkPanel(groups []string, read, write []*float64, status string, faults []faultKinds) panel {
	measured := false
	for i := range read {
		measured = measured || (read[i] != nil && write[i] != nil)
	}
	if measured {
		p := panel{title: "Page-walk share of cycles", ylabel: "% of cycles", groups: slices.Clone(groups),
			series: []series{{name: "read (dTLB load walks)"}, {name: "write (dTLB store walks)"}}}
		for i := range groups {
			if read[i] == nil || write[i] == nil {
				p.groups[i] += "\n(unavailable)"
			}
			p.series[0].values = append(p.series[0].values, deref(read[i]))
			p.series[1].values = append(p.series[1].values, deref(write[i]))
		}
		return p
	}
	p := panel{title: "Page-walk share of cycles: " + status + "\nshown instead: page faults in RDD blocks",
		ylabel: "faults", groups: groups,
		series: []series{{name: "read faults"}, {name: "write faults"}, {name: "major faults"}}}
	for _, f := range faults {
		p.series[0].values = append(p.series[0].values, float64(f.Read))
		p.series[1].values = append(p.series[1].values, float64(f.Write))
		p.series[2].values = append(p.series[2].values, float64(f.Major))
	}
	return p
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// appPanels: one application, a group per RDD (the largest first).
func appPanels(r appReport) []panel {
	rdds := sortedRDDs(r)
	if len(rdds) > maxChartGroups {
		rdds = rdds[:maxChartGroups]
	}
	mem := panel{title: "Cached RDD memory, as last resolved", ylabel: "MiB",
		series: []series{{name: "present"}, {name: "swapped"}, {name: "not resident"}}}
	acc := panel{title: "Block accesses (JVM hook)", ylabel: "accesses", series: []series{{name: "reads"}, {name: "writes"}}}
	res := panel{title: "What Strata resolved of Spark's bytes", ylabel: "% of Spark's size of the blocks",
		series: []series{{name: "buffers"}, {name: "walked objects"}, {name: "objects of cut walks"}}}
	sized := false
	var faults []faultKinds
	for _, x := range rdds {
		label := fmt.Sprintf("RDD %d", x.RDD)
		mem.groups = append(mem.groups, label)
		acc.groups = append(acc.groups, label)
		page := float64(x.PageSize)
		mib := func(pages uint64) float64 { return float64(pages) * page / (1 << 20) }
		res.groups = append(res.groups, label+"\n"+x.Resolved)
		for i, kind := range []string{"buffers", "walked", "walk_cut"} {
			v := 0.0
			for _, p := range x.Parts {
				if p.Resolution == kind && x.ResolvedShare != nil && x.SparkBytes > 0 {
					v = 100 * float64(p.Bytes) / float64(x.SparkBytes)
					sized = true
				}
			}
			res.series[i].values = append(res.series[i].values, v)
		}
		mem.series[0].values = append(mem.series[0].values, mib(x.Present))
		mem.series[1].values = append(mem.series[1].values, mib(x.Swapped))
		mem.series[2].values = append(mem.series[2].values, mib(x.Pages-min(x.Pages, x.Present+x.Swapped)))
		acc.series[0].values = append(acc.series[0].values, float64(x.Reads))
		acc.series[1].values = append(acc.series[1].values, float64(x.Writes))
		faults = append(faults, x.Faults)
	}
	read, write := appWalkPct(r.PageWalk)
	walk := walkPanel(mem.groups, repeat(read, len(rdds)), repeat(write, len(rdds)), walkSummary(r.PageWalk), faults)
	if read != nil {
		// Walk shares are per executor, not per RDD.
		walk = walkPanel([]string{"application"}, []*float64{read}, []*float64{write}, "", nil)
	}
	occ := panel{title: "RDD memory occupation (peak)", ylabel: "%", series: []series{{name: "of executor peak RSS"}, {name: "of node memory"}}}
	for _, e := range r.Executors {
		occ.groups = append(occ.groups, "executor "+e.ExecutorID)
		occ.series[0].values = append(occ.series[0].values, 100*deref(e.OfRSS))
		occ.series[1].values = append(occ.series[1].values, 100*deref(e.OfNode))
	}
	out := []panel{mem, acc, walk}
	if sized {
		out = append(out, res)
	}
	if len(occ.groups) > 0 {
		out = append(out, occ)
	}
	return out
}

func repeat(v *float64, n int) []*float64 {
	out := make([]*float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// comparePanels: several applications, a group each, as SMTT's figures:
// RDD occupation (its Fig. 12), page-walk share (Figs. 10/11) or faults,
// and cached memory.
func comparePanels(rs []appReport) []panel {
	occ := panel{title: "RDD memory occupation (peak)", ylabel: "%", series: []series{{name: "of executors' peak RSS"}, {name: "of node memory"}}}
	mem := panel{title: "Cached RDD memory, as last resolved", ylabel: "MiB", series: []series{{name: "present"}, {name: "swapped"}}}
	var read, write []*float64
	var faults []faultKinds
	status := ""
	for _, r := range rs {
		label := appLabel(r)
		occ.groups = append(occ.groups, label)
		mem.groups = append(mem.groups, label)
		occ.series[0].values = append(occ.series[0].values, 100*deref(r.Occupation.OfRSS))
		occ.series[1].values = append(occ.series[1].values, 100*deref(r.Occupation.OfNode))
		t := totals(r)
		perPage := 0.0
		for _, x := range r.RDDs {
			perPage = float64(x.PageSize)
		}
		mem.series[0].values = append(mem.series[0].values, float64(t.present)*perPage/(1<<20))
		mem.series[1].values = append(mem.series[1].values, float64(t.swapped)*perPage/(1<<20))
		rd, wr := appWalkPct(r.PageWalk)
		read, write = append(read, rd), append(write, wr)
		faults = append(faults, t.faults)
		if status == "" {
			status = walkSummary(r.PageWalk)
		}
	}
	return []panel{occ, walkPanel(occ.groups, read, write, status, faults), mem}
}

// drawPanels lays the panels out one above the other and writes the file.
func drawPanels(path, title string, panels []panel) error {
	groups := 0
	for _, p := range panels {
		groups = max(groups, len(p.groups))
	}
	width := vg.Length(max(8, 1.3*float64(groups))) * vg.Inch
	height := vg.Length(2.8*float64(len(panels))+0.3) * vg.Inch
	plots := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		if i == 0 {
			// The chart's title heads the first panel.
			p.title = title + "\n" + p.title
		}
		pl, err := p.plot()
		if err != nil {
			return fmt.Errorf("draw chart: %w", err)
		}
		plots[i] = []*plot.Plot{pl}
	}
	var c interface {
		vg.CanvasSizer
		vg.CanvasWriterTo
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c = vgsvg.New(width, height)
	default:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadX: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	cs := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(cs[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}

// plot builds one panel's grouped bar chart.
func (p panel) plot() (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.title
	pl.Y.Label.Text = p.ylabel
	pl.Legend.Top = true
	pl.Legend.Left = false
	pl.NominalX(p.groups...)
	w := vg.Points(min(18, 90/float64(max(1, len(p.series)))))
	top := 0.0
	for i, s := range p.series {
		b, err := plotter.NewBarChart(plotter.Values(s.values), w)
		if err != nil {
			return nil, fmt.Errorf("bars %q: %w", s.name, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(p.series)-1)/2) * w
		pl.Add(b)
		pl.Legend.Add(s.name, b)
		for _, v := range s.values {
			top = max(top, v)
		}
	}
	// Room above the tallest bar for the legend; an all-zero panel still
	// gets an axis.
	pl.Y.Min, pl.Y.Max = 0, top*1.35
	if top == 0 {
		pl.Y.Max = 1
	}
	pl.X.Min, pl.X.Max = -0.6, float64(len(p.groups))-0.4
	return pl, nil
}
