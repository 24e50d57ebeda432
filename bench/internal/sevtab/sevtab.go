// Package sevtab holds what the corruption-robustness benchmarks (bench/uvsw, bench/prunetab
// -corrupt) share: the sweep over the corrupted Fashion-MNIST test sets of data.Corrupt (every
// corruption of data.Corruptions at severities 1–data.MaxSeverity, each set built once and
// handed to every model), the per-severity mean over the corruptions, and the plot of a metric
// against severity (one line per model family, ± error bars).
package sevtab

import (
	"fmt"
	"image/color"
	"math"

	"github.com/edgebnn/edgebnn/train/data"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Key names one corrupted set in a results map: "corruption:severity".
func Key(corruption string, severity int) string {
	return fmt.Sprintf("%s:%d", corruption, severity)
}

// Sweep builds every corrupted version of base (data.Corrupt with seed; severities 1 to
// data.MaxSeverity, corruptions in table order), passes each through prep (nil: used as built)
// and calls visit with it. prep is where a caller selects classes or keeps the first images:
// data.Corrupt draws image i's randomness from (seed, i) alone, so keeping the first n images
// after corrupting equals corrupting the first n.
func Sweep(base *data.Dataset, seed uint64, prep func(*data.Dataset) (*data.Dataset, error),
	visit func(corruption string, severity int, d *data.Dataset) error) error {
	for _, c := range data.Corruptions() {
		for s := 1; s <= data.MaxSeverity; s++ {
			d, err := data.Corrupt(base, c, s, seed)
			if err != nil {
				return fmt.Errorf("sweep %s: %w", Key(c, s), err)
			}
			if prep != nil {
				if d, err = prep(d); err != nil {
					return fmt.Errorf("sweep %s: %w", Key(c, s), err)
				}
			}
			if err := visit(c, s, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// SeverityMean is the tables' number at severity s of a model's results: metric of the clean set
// at s = 0, else the mean of metric over data.Corruptions at severity s (corrupt is keyed by Key).
func SeverityMean[M any](clean M, corrupt map[string]M, s int, metric func(M) float64) float64 {
	if s == 0 {
		return metric(clean)
	}
	cs := data.Corruptions()
	t := 0.0
	for _, c := range cs {
		t += metric(corrupt[Key(c, s)])
	}
	return t / float64(len(cs))
}

// Line is one curve of a Panel: Y[s] and its error bar Err[s] (NaN: none) at severity s = 0 (the
// clean set) … data.MaxSeverity.
type Line struct {
	Name   string
	Color  color.Color
	Dashed bool
	Y, Err []float64
}

// Panel is one plot of a metric against severity.
type Panel struct {
	Title, XLabel, YLabel string
	Lines                 []Line
	LegendTop             bool // the legend in the top-left corner (default: bottom left)
}

// Plot draws the panels in a grid of cols columns (row by row; len(panels) a multiple of cols)
// on a w × h canvas at 96 dpi and writes it to path as a PNG.
func Plot(path string, panels []Panel, cols int, w, h vg.Length) error {
	if cols < 1 || len(panels) == 0 || len(panels)%cols != 0 {
		return fmt.Errorf("plot %s: %d panels do not fill rows of %d columns", path, len(panels), cols)
	}
	rows := len(panels) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	var ticks []plot.Tick
	for s := 0; s <= data.MaxSeverity; s++ {
		ticks = append(ticks, plot.Tick{Value: float64(s), Label: fmt.Sprint(s)})
	}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = pn.Title, pn.XLabel, pn.YLabel
		p.Add(plotter.NewGrid())
		for _, ln := range pn.Lines {
			var pts plotter.XYs
			var errs plotter.YErrors
			for s, y := range ln.Y {
				e := 0.0
				if s < len(ln.Err) && !math.IsNaN(ln.Err[s]) {
					e = ln.Err[s]
				}
				pts = append(pts, plotter.XY{X: float64(s), Y: y})
				errs = append(errs, struct{ Low, High float64 }{e, e})
			}
			if _, _, err := trainplot.AddErrorLine(p, ln.Name, pts, errs, ln.Color, ln.Dashed); err != nil {
				return fmt.Errorf("plot %s: %s: %w", path, ln.Name, err)
			}
		}
		p.Legend.Top, p.Legend.Left = pn.LegendTop, true
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	return trainplot.SaveGrid(path, grid, w, h, 96, tiles)
}
