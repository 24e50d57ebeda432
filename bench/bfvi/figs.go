package main

import (
	"fmt"
	"image/color"
	"math"

	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// curve is one named line of a figure; Dashed draws it dashed, Points adds markers. Colour, if
// set, overrides the palette colour (and the black of a dashed line).
type curve struct {
	Name   string
	X, Y   []float64
	Dashed bool
	Points bool
	Colour color.Color
}

// band is a translucent region between Lo and Hi over X (e.g. a 95 % predictive band).
type band struct {
	Name      string
	X, Lo, Hi []float64
	Colour    color.Color
}

// marks is a named set of points drawn as glyphs (data, reference values).
type marks struct {
	Name   string
	X, Y   []float64
	Colour color.Color
	Cross  bool // crosses instead of filled circles
}

var colours = trainplot.Tableau[:6]

// figure describes one panel.
type figure struct {
	Title, XLabel, YLabel string
	Curves                []curve
	// Hist, if non-empty, is drawn first as a density-normalised histogram with HistBins bins.
	Hist     []float64
	HistBins int
	HistName string
	LogX     bool
	LogY     bool
	// XMin/XMax, if XMax > XMin, fix the x range; YMin/YMax likewise for y.
	XMin, XMax float64
	YMin, YMax float64
	// Bands are drawn before the curves, Marks after them.
	Bands []band
	Marks []marks
}

func (f figure) plot() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = f.Title, f.XLabel, f.YLabel
	p.Add(plotter.NewGrid())
	if len(f.Hist) > 0 {
		h, err := plotter.NewHist(plotter.Values(f.Hist), max(f.HistBins, 1))
		if err != nil {
			return nil, err
		}
		h.Normalize(1)
		h.FillColor = color.RGBA{R: 180, G: 180, B: 180, A: 255}
		h.LineStyle.Width = 0
		p.Add(h)
		if f.HistName != "" {
			p.Legend.Add(f.HistName, h)
		}
	}
	for _, b := range f.Bands {
		pg, err := trainplot.BandPolygon(b.X, b.Lo, b.Hi)
		if err != nil {
			return nil, err
		}
		c := b.Colour
		if c == nil {
			c = colours[0]
		}
		r, g, bl, _ := c.RGBA()
		pg.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 70}
		pg.LineStyle.Width = 0
		p.Add(pg)
		if b.Name != "" {
			p.Legend.Add(b.Name, pg)
		}
	}
	for i, c := range f.Curves {
		var pts plotter.XYs
		for k := range c.X {
			if math.IsNaN(c.Y[k]) || math.IsInf(c.Y[k], 0) || (f.LogY && !(c.Y[k] > 0)) {
				continue
			}
			pts = append(pts, plotter.XY{X: c.X[k], Y: c.Y[k]})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = colours[i%len(colours)]
		l.Width = vg.Points(1.5)
		if c.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			l.Color = color.Black
		}
		if c.Colour != nil {
			l.Color = c.Colour
		}
		p.Add(l)
		if c.Points {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.Color = l.Color
			s.Shape = draw.CircleGlyph{}
			p.Add(s)
		}
		if c.Name != "" {
			p.Legend.Add(c.Name, l)
		}
	}
	for _, m := range f.Marks {
		pts := make(plotter.XYs, len(m.X))
		for k := range m.X {
			pts[k] = plotter.XY{X: m.X[k], Y: m.Y[k]}
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.Color = m.Colour
		s.Shape = draw.CircleGlyph{}
		s.Radius = vg.Points(2.5)
		if m.Cross {
			s.Shape = draw.CrossGlyph{}
			s.Radius = vg.Points(3)
		}
		p.Add(s)
		if m.Name != "" {
			p.Legend.Add(m.Name, s)
		}
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.XMax > f.XMin {
		p.X.Min, p.X.Max = f.XMin, f.XMax
	}
	if f.YMax > f.YMin {
		p.Y.Min, p.Y.Max = f.YMin, f.YMax
	}
	p.Legend.Top = true
	return p, nil
}

// scatterPanel is one 2-D scatter panel with two point clouds.
type scatterPanel struct {
	XLabel, YLabel string
	A, B           [][2]float64
	AName, BName   string
}

func (s scatterPanel) plot() (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = s.XLabel, s.YLabel
	for i, pts := range [][][2]float64{s.A, s.B} {
		xy := make(plotter.XYs, len(pts))
		for k, v := range pts {
			xy[k] = plotter.XY{X: v[0], Y: v[1]}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(1)
		sc.Color = []color.Color{color.NRGBA{R: 31, G: 119, B: 180, A: 110}, color.NRGBA{R: 214, G: 39, B: 40, A: 110}}[i]
		p.Add(sc)
		p.Legend.Add([]string{s.AName, s.BName}[i], sc)
	}
	p.Legend.Top = true
	return p, nil
}

type plotter2 interface{ plot() (*plot.Plot, error) }

// savePanels draws panels on a cols-column grid and writes a PNG of w×h inches atomically.
func savePanels(path string, cols int, w, h float64, panels []plotter2) error {
	if len(panels) == 0 || cols < 1 {
		return fmt.Errorf("figure %s: no panels", path)
	}
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := pn.plot()
		if err != nil {
			return fmt.Errorf("figure %s: %w", path, err)
		}
		grid[i/cols][i%cols] = p
	}
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] == nil { // plot.Align needs every tile
				grid[r][c] = plot.New()
				grid[r][c].HideAxes()
			}
		}
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	return trainplot.SaveGrid(path, grid, vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch, 90, t)
}
