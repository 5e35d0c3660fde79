package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartFormat is the image format of a chart file: its extension.
func chartFormat(path string) string {
	return strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
}

// checkChartFormat says whether a chart can be drawn to path (before a
// long run rather than after it).
func checkChartFormat(path string) error {
	if _, err := draw.NewFormattedCanvas(vg.Centimeter, vg.Centimeter, chartFormat(path)); err != nil {
		return fmt.Errorf("%s: %w (use .png or .svg)", path, err)
	}
	return nil
}

// sustainedChart draws the windows of a sustained run to path: tasks
// started per second above, p50 and p99 enqueue→start latency below, each
// window a point at its middle.
func sustainedChart(path string, f SustainedFlags, ws []SustainedWindow) error {
	var rate, p50, p99 plotter.XYs
	var end, top float64
	for _, w := range ws {
		mid := (w.Start + w.Len/2).Seconds()
		end = max(end, (w.Start + w.Len).Seconds())
		top = max(top, w.Rate)
		rate = append(rate, plotter.XY{X: mid, Y: w.Rate})
		p50 = append(p50, plotter.XY{X: mid, Y: msFloat(w.Lat.P50)})
		p99 = append(p99, plotter.XY{X: mid, Y: msFloat(w.Lat.P99)})
	}

	thr := plot.New()
	thr.Title.Text = fmt.Sprintf("agentbench sustained: %d tasks/s offered, %s windows", f.Rate, f.Window)
	thr.Y.Label.Text = "tasks started per second"
	offered, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(f.Rate)}, {X: end, Y: float64(f.Rate)}})
	if err != nil {
		return err
	}
	offered.Color = color.Gray{Y: 128}
	offered.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	started, startedPts, err := series(rate, color.RGBA{R: 31, G: 119, B: 180, A: 255})
	if err != nil {
		return err
	}
	thr.Add(plotter.NewGrid(), offered, started, startedPts)
	thr.Legend.Add("offered", offered)
	thr.Legend.Add("started", started, startedPts)
	thr.Legend.Top, thr.Legend.Left = false, true
	thr.Y.Min, thr.Y.Max = 0, max(top, float64(f.Rate))*1.15

	lat := plot.New()
	lat.X.Label.Text = "seconds since the start"
	lat.Y.Label.Text = "enqueue to start, ms"
	l50, pts50, err := series(p50, color.RGBA{R: 44, G: 160, B: 44, A: 255})
	if err != nil {
		return err
	}
	l99, pts99, err := series(p99, color.RGBA{R: 214, G: 39, B: 40, A: 255})
	if err != nil {
		return err
	}
	lat.Add(plotter.NewGrid(), l50, pts50, l99, pts99)
	lat.Legend.Add("p50", l50, pts50)
	lat.Legend.Add("p99", l99, pts99)
	lat.Legend.Top, lat.Legend.Left = true, true
	lat.Y.Min = 0
	lat.Y.Max *= 1.15 // room for the legend

	for _, p := range []*plot.Plot{thr, lat} {
		p.X.Min, p.X.Max = 0, end
		p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	}
	c, err := draw.NewFormattedCanvas(24*vg.Centimeter, 16*vg.Centimeter, chartFormat(path))
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pad := 3 * vg.Millimeter
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: 2 * pad, PadY: 2 * pad}
	canvases := plot.Align([][]*plot.Plot{{thr}, {lat}}, tiles, dc)
	thr.Draw(canvases[0][0])
	lat.Draw(canvases[1][0])

	return saveChart(path, c)
}

// series is a line with a point per window, in colour c.
func series(xys plotter.XYs, c color.Color) (*plotter.Line, *plotter.Scatter, error) {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	l.Color, pts.Color = c, c
	pts.Radius = vg.Points(2)
	return l, pts, nil
}

// msFloat is d in milliseconds.
func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// niceTicks labels four to eight ticks at multiples of 1, 2 or 5 times a power
// of ten (plot.DefaultTicks labels as few as two).
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step / 2 {
		t := plot.Tick{Value: v}
		if k := math.Round(v / step * 2); int64(k)%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// saveChart writes a drawn canvas to path.
func saveChart(path string, c io.WriterTo) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
