package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartLine is one named series of a panel.
type chartLine struct {
	Name string
	XY   plotter.XYs
}

// chartPanel is one plot of a chart: a y axis and its lines.
type chartPanel struct {
	YLabel string
	Lines  []chartLine
}

// palette colours a panel's lines in order (matplotlib's first ten).
var palette = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255},
	{23, 190, 207, 255}}

// drawPanels draws panels one above the other to path (.svg or .png),
// sharing the x axis, seconds since the start, up to end.
func drawPanels(path, title string, end float64, panels []chartPanel) error {
	var plots [][]*plot.Plot
	for i, pn := range panels {
		p := plot.New()
		if i == 0 {
			p.Title.Text = title
		}
		if i == len(panels)-1 {
			p.X.Label.Text = "seconds since the start"
		}
		p.Y.Label.Text = pn.YLabel
		p.Add(plotter.NewGrid())
		top := 0.0
		for j, l := range pn.Lines {
			if len(l.XY) == 0 {
				continue
			}
			line, pts, err := series(l.XY, palette[j%len(palette)])
			if err != nil {
				return err
			}
			p.Add(line, pts)
			p.Legend.Add(l.Name, line, pts)
			for _, xy := range l.XY {
				top = max(top, xy.Y)
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.X.Min, p.X.Max = 0, end
		p.Y.Min, p.Y.Max = 0, max(top, 1)*(1.1+0.08*float64(len(pn.Lines))) // room for the legend
		p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
		plots = append(plots, []*plot.Plot{p})
	}
	c, err := draw.NewFormattedCanvas(24*vg.Centimeter, vg.Length(8*len(panels))*vg.Centimeter, chartFormat(path))
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pad := 3 * vg.Millimeter
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: 2 * pad, PadY: 2 * pad}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return saveChart(path, c)
}

// longdayChartPath is the chart name next to the CSV: longday.csv →
// longday-throughput.svg.
func longdayChartPath(csvPath, what string) string {
	return strings.TrimSuffix(csvPath, filepath.Ext(csvPath)) + "-" + what + ".svg"
}

// longdayCharts draws four charts of the windows next to the CSV:
// throughput, latency, agentd's RSS and goroutines, and the table sizes.
func longdayCharts(f LongdayFlags, ws []LongdayWindow) error {
	at := func(w LongdayWindow) float64 { return (w.Start + w.Len/2).Seconds() }
	end := (ws[len(ws)-1].Start + ws[len(ws)-1].Len).Seconds()
	pick := func(v func(LongdayWindow) (float64, bool)) plotter.XYs {
		var xy plotter.XYs
		for _, w := range ws {
			if y, ok := v(w); ok {
				xy = append(xy, plotter.XY{X: at(w), Y: y})
			}
		}
		return xy
	}
	perSec := func(n func(LongdayWindow) float64) plotter.XYs {
		return pick(func(w LongdayWindow) (float64, bool) { return n(w) / w.Len.Seconds(), true })
	}
	sub := fmt.Sprintf("agentbench longday: %d tasks/s offered, retention %s", f.Rate, f.Retention)
	charts := []struct {
		name   string
		panels []chartPanel
	}{
		{"throughput", []chartPanel{{"tasks per second", []chartLine{
			{"offered", perSec(func(w LongdayWindow) float64 { return float64(w.Offered) })},
			{"completed", perSec(func(w LongdayWindow) float64 { return float64(w.All.Finished) })},
			{"unexpected end", perSec(func(w LongdayWindow) float64 { return float64(w.All.Unexpected) })},
		}}, {"tasks", []chartLine{
			{"backlog (queued, running, retrying)", pick(func(w LongdayWindow) (float64, bool) { return float64(w.Backlog()), true })},
			{"waiting", pick(func(w LongdayWindow) (float64, bool) { return float64(w.Unfinished["waiting"]), true })},
		}}}},
		{"latency", []chartPanel{{"enqueue to finish, ms", []chartLine{
			{"p50", pick(func(w LongdayWindow) (float64, bool) { return msFloat(w.All.Lat.P50), w.All.Finished > 0 })},
			{"p99", pick(func(w LongdayWindow) (float64, bool) { return msFloat(w.All.Lat.P99), w.All.Finished > 0 })},
		}}, {"p99 by class, ms", classLines(ws, pick)}}},
		{"daemon", []chartPanel{{"agentd resident set, MB", []chartLine{
			{"RSS", pick(func(w LongdayWindow) (float64, bool) { return float64(w.RSS) / (1 << 20), w.RSS > 0 })},
		}}, {"agentd goroutines", []chartLine{
			{"go_goroutines", pick(func(w LongdayWindow) (float64, bool) { return float64(w.Goroutines), w.Goroutines >= 0 })},
		}}, {"CPU, cores", []chartLine{
			{"agentd", pick(func(w LongdayWindow) (float64, bool) { return w.AgentdCPU.Seconds() / w.Len.Seconds(), true })},
			{"PostgreSQL", pick(func(w LongdayWindow) (float64, bool) {
				return w.CPU.Server.Seconds() / w.Len.Seconds(), w.CPU.ServerKnown
			})},
		}}}},
		{"tables", []chartPanel{
			{"total size (with indexes and TOAST), MB", tableLines(ws, pick, func(t TableSample) float64 { return float64(t.Total) / (1 << 20) })},
			{"index size, MB", tableLines(ws, pick, func(t TableSample) float64 { return float64(t.Indexes) / (1 << 20) })},
			{"dead tuples", tableLines(ws, pick, func(t TableSample) float64 { return float64(t.Dead) })},
		}},
	}
	for _, c := range charts {
		if err := drawPanels(longdayChartPath(f.CSV, c.name), sub, end, c.panels); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// classLines are the p99 of each class that finished tasks.
func classLines(ws []LongdayWindow, pick func(func(LongdayWindow) (float64, bool)) plotter.XYs) []chartLine {
	var out []chartLine
	for _, c := range allClasses {
		xy := pick(func(w LongdayWindow) (float64, bool) {
			cw := w.ByClass[c]
			return msFloat(cw.Lat.P99), cw.Finished > 0
		})
		if len(xy) > 0 {
			out = append(out, chartLine{c, xy})
		}
	}
	return out
}

// tableLines are one figure of each table.
func tableLines(ws []LongdayWindow, pick func(func(LongdayWindow) (float64, bool)) plotter.XYs, v func(TableSample) float64) []chartLine {
	var out []chartLine
	for _, t := range ldTables {
		out = append(out, chartLine{t, pick(func(w LongdayWindow) (float64, bool) {
			s, ok := w.Tables[t]
			return v(s), ok
		})})
	}
	return out
}
