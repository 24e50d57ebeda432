package main

import (
	"fmt"
	"image/color"

	"github.com/edgebnn/edgebnn/train/data"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// colours of the six methods in the line panels, in the order of methods.
var colours = []color.Color{color.Black, trainplot.Red, trainplot.Orange, trainplot.Blue, trainplot.Green, trainplot.Purple}

// panels draws the eight-panel figure: HMC and each method's first seed (training data, true
// function, predictive mean, ±2 total predictive sd and ±2 epistemic sd; an empty panel saying so
// for a method without a model), the epistemic sd of all of them against x and each method's W1
// to HMC against x, and writes it as a PNG to path.
func panels(path string, fits map[string][]*fit, train *data.Dataset) error {
	var ps []*plot.Plot
	var sdLines []*fit
	for _, m := range methods {
		if len(fits[m.Key]) == 0 {
			p := plot.New()
			p.Title.Text = m.Name + ": no model"
			ps = append(ps, p)
			continue
		}
		f := fits[m.Key][0]
		sdLines = append(sdLines, f)
		p, err := bandPanel(f, train, len(ps) == 0)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	sp, err := linePanel(sdLines, "epistemic sd of f(x)", "epistemic sd", func(f *fit) []float64 { return f.Epi })
	if err != nil {
		return err
	}
	wp, err := linePanel(sdLines[1:], "W1 of f(x)'s marginal to HMC's", "W1 to HMC", func(f *fit) []float64 { return f.W1 })
	if err != nil {
		return err
	}
	ps = append(ps, sp, wp)
	const w, h = 20 * vg.Inch, 8 * vg.Inch
	tiles := draw.Tiles{Rows: 2, Cols: 4, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	return trainplot.SaveGrid(path, [][]*plot.Plot{ps[:4], ps[4:8]}, w, h, 96, tiles)
}

// bandPanel draws one model's predictive fit, with a legend if legend is set.
func bandPanel(f *fit, train *data.Dataset, legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = f.Method.Name
	if f.Seed >= 0 {
		p.Title.Text += fmt.Sprintf(" (seed %d)", f.Seed)
	}
	p.Title.Text += fmt.Sprintf(": ratio %.2f", f.Ratio())
	if f.W1 != nil {
		p.Title.Text += fmt.Sprintf(", W1 %.3f, KS %.3f", f.MeanW1, f.MeanKS)
	}
	p.X.Label.Text, p.Y.Label.Text = "x", "y"
	total, err := trainplot.SDBand(f.X, f.Mean, f.Total, 2, color.RGBA{R: 200, G: 220, B: 242, A: 255})
	if err != nil {
		return nil, fmt.Errorf("band: %w", err)
	}
	epi, err := trainplot.SDBand(f.X, f.Mean, f.Epi, 2, color.RGBA{R: 130, G: 175, B: 225, A: 255})
	if err != nil {
		return nil, fmt.Errorf("band: %w", err)
	}
	p.Add(total, epi)
	var truth, mean, pts plotter.XYs
	for i, x := range f.X {
		truth = append(truth, plotter.XY{X: x, Y: data.Toy1DMean(x)})
		mean = append(mean, plotter.XY{X: x, Y: f.Mean[i]})
	}
	for i := 0; i < train.N; i++ {
		pts = append(pts, plotter.XY{X: float64(train.X[i]), Y: float64(train.Targets[i])})
	}
	tl, err := plotter.NewLine(truth)
	if err != nil {
		return nil, fmt.Errorf("true function: %w", err)
	}
	tl.Color, tl.Dashes = color.Black, []vg.Length{vg.Points(3), vg.Points(3)}
	ml, err := plotter.NewLine(mean)
	if err != nil {
		return nil, fmt.Errorf("mean: %w", err)
	}
	ml.Color, ml.Width = color.RGBA{R: 20, G: 60, B: 160, A: 255}, vg.Points(2)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	sc.Shape, sc.Color, sc.Radius = draw.CircleGlyph{}, trainplot.Red, vg.Points(1.5)
	p.Add(tl, ml, sc)
	if legend {
		p.Legend.Add("±2 total sd", total)
		p.Legend.Add("±2 epistemic sd", epi)
		p.Legend.Add("predictive mean", ml)
		p.Legend.Add("cos(4x + 0.8)", tl)
		p.Legend.Add("training data", sc)
		p.Legend.Top = true
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -2, 2, -5, 5
	return p, nil
}

// linePanel draws the per-grid-point values y(f) of every model against x, with the gap between
// the clusters marked.
func linePanel(fs []*fit, title, ylabel string, y func(*fit) []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "x", ylabel
	ymax := 0.0
	for _, f := range fs {
		for _, v := range y(f) {
			ymax = max(ymax, v)
		}
	}
	for _, x := range []float64{gapLo, gapHi} {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax}})
		if err != nil {
			return nil, fmt.Errorf("gap marker: %w", err)
		}
		l.Color, l.Dashes = color.Gray{Y: 160}, []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
	}
	for _, f := range fs {
		var pts plotter.XYs
		for i, x := range f.X {
			pts = append(pts, plotter.XY{X: x, Y: y(f)[i]})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ylabel, err)
		}
		for i, m := range methods {
			if m.Key == f.Method.Key {
				l.Color = colours[i]
			}
		}
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(f.Method.Name, l)
	}
	p.Legend.Top = true
	// Head room for the legend.
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -2, 2, 0, 1.4*ymax
	return p, nil
}
