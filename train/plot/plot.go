// Package plot draws the trainer's figures as PNG files with gonum/plot: training curves,
// reliability diagrams, selective-prediction curves and, for 1-D regression, the predictive mean
// with ±1, 2 and 3 standard deviations over the training data (paper 003, Fig. 2).
package plot

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/internal/outfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named curve.
type Series struct {
	Name string
	X, Y []float64
}

// The start of matplotlib's default colour cycle (tab10), which the trainer's and the
// benchmarks' figures share.
var (
	Blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	Orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	Green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	Red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	Purple = color.RGBA{R: 148, G: 103, B: 189, A: 255}
	Brown  = color.RGBA{R: 140, G: 86, B: 75, A: 255}
	Pink   = color.RGBA{R: 227, G: 119, B: 194, A: 255}
)

// Tableau is that cycle in its order: blue, orange, green, red, purple, brown, pink.
var Tableau = []color.Color{Blue, Orange, Green, Red, Purple, Brown, Pink}

var palette = Tableau[:6]

// AddErrorLine adds to p a line through pts with a point at each and ± errs error bars, all in
// colour c (the line dashed if dashed), and names it in the legend unless name is empty. It
// returns the line and the points for further styling.
func AddErrorLine(p *plot.Plot, name string, pts plotter.XYs, errs plotter.YErrors, c color.Color, dashed bool) (*plotter.Line, *plotter.Scatter, error) {
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, nil, err
	}
	l.Color, sc.Color, l.Width = c, c, vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return nil, nil, err
	}
	eb.Color = c
	p.Add(l, sc, eb)
	if name != "" {
		p.Legend.Add(name, l, sc)
	}
	return l, sc, nil
}

// MaxValue bounds the magnitude of the coordinates the plots draw: points beyond it are left out,
// as NaN and infinite ones are. gonum/plot's tick search never ends on an axis whose range is not
// finite (−1.7e308 to 1.7e308 spans +Inf), and within ±MaxValue every range is.
const MaxValue = 1e300

// drawable reports whether v can be drawn: finite and at most MaxValue in magnitude.
func drawable(v float64) bool { return math.Abs(v) <= MaxValue }

func xys(x, y []float64) (plotter.XYs, error) {
	if len(x) != len(y) {
		return nil, fmt.Errorf("plot: %d x values and %d y values", len(x), len(y))
	}
	pts := make(plotter.XYs, 0, len(x))
	for i := range x {
		if !drawable(x[i]) || !drawable(y[i]) {
			continue
		}
		pts = append(pts, plotter.XY{X: x[i], Y: y[i]})
	}
	return pts, nil
}

// Lines draws curves on one set of axes and saves a PNG of w×h inches.
func Lines(path, title, xlabel, ylabel string, series []Series, w, h float64) error {
	p, err := linesPlot(path, title, xlabel, ylabel, series)
	if err != nil {
		return err
	}
	p.Legend.Top = true
	return Save(p, path, w, h)
}

// linesPlot makes a plot with a grid and one line per series (NaN, infinite and points beyond
// MaxValue left out), named in the legend.
func linesPlot(path, title, xlabel, ylabel string, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	p.Add(plotter.NewGrid())
	for i, s := range series {
		pts, err := xys(s.X, s.Y)
		if err != nil {
			return nil, err
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", path, err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		if s.Name != "" {
			p.Legend.Add(s.Name, l)
		}
	}
	return p, nil
}

// CheckFormat reports whether Save can write path's format (its extension: eps, jpg, jpeg,
// pdf, png, svg, tex, tif or tiff, as gonum/plot's Plot.WriterTo), so that a command can refuse a
// bad name before its work rather than after.
func CheckFormat(path string) error {
	switch ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")); ext {
	case "eps", "jpg", "jpeg", "pdf", "png", "svg", "tex", "tif", "tiff":
		return nil
	case "":
		return errors.New("no extension to name the image format (.png, .svg, .pdf, …)")
	default:
		return fmt.Errorf("unsupported image format %q (png, svg, pdf, eps, jpg, tif or tex)", ext)
	}
}

// Save renders p on a w × h inch canvas in the format of path's extension (png, svg, pdf, …)
// and writes it atomically (staged beside path, fsynced, renamed): an interrupted or failed
// save leaves path as it was, which gonum's own Plot.Save does not promise.
func Save(p *plot.Plot, path string, w, h float64) error {
	wt, err := p.WriterTo(vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch, strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")))
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := outfile.Write(context.Background(), path, func(out io.Writer) error {
		_, err := wt.WriteTo(out)
		return err
	}); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// SaveGrid draws grid (rows of plots; nil tiles stay empty) on a w × h canvas at dpi, laid out
// by tiles, and writes it to path as a PNG, atomically as Save does.
func SaveGrid(path string, grid [][]*plot.Plot, w, h vg.Length, dpi int, tiles draw.Tiles) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	cs := plot.Align(grid, tiles, draw.New(img))
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(cs[r][c])
			}
		}
	}
	if err := outfile.Write(context.Background(), path, func(out io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out)
		return err
	}); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// Bin is one bin of a reliability diagram.
type Bin struct {
	Lo, Hi               float64
	Count                int
	Confidence, Accuracy float64
}

// Reliability draws a reliability diagram: per confidence bin, the accuracy (bars) against the
// diagonal of perfect calibration, with the bins' mean confidence marked.
func Reliability(path, title string, bins []Bin) error {
	if len(bins) == 0 {
		return errors.New("plot: no bins")
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "confidence", "accuracy"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(plotter.NewGrid())
	for _, b := range bins {
		if b.Count == 0 || !drawable(b.Lo) || !drawable(b.Hi) || !drawable(b.Accuracy) {
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: b.Lo, Y: 0}, {X: b.Hi, Y: 0}, {X: b.Hi, Y: b.Accuracy}, {X: b.Lo, Y: b.Accuracy}})
		if err != nil {
			return err
		}
		poly.Color = color.RGBA{R: 31, G: 119, B: 180, A: 160}
		poly.LineStyle.Color = color.Black
		poly.LineStyle.Width = vg.Points(0.5)
		p.Add(poly)
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return err
	}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	var conf plotter.XYs
	for _, b := range bins {
		if b.Count > 0 && drawable(b.Confidence) && drawable(b.Accuracy) {
			conf = append(conf, plotter.XY{X: b.Confidence, Y: b.Accuracy})
		}
	}
	sc, err := plotter.NewScatter(conf)
	if err != nil {
		return err
	}
	sc.Shape = draw.CircleGlyph{}
	sc.Color = palette[1]
	p.Add(sc)
	p.Legend.Add("accuracy per bin", sc)
	p.Legend.Add("perfect calibration", diag)
	p.Legend.Top, p.Legend.Left = true, true
	return Save(p, path, 5, 5)
}

// Band1D describes a 1-D regression fit for Regression1D.
type Band1D struct {
	// X are the grid inputs (increasing), Mean the predictive mean and SD the predictive
	// standard deviation at each.
	X, Mean, SD []float64
	// TrainX, TrainY are the training points; TrueX, TrueY an optional true function.
	TrainX, TrainY []float64
	TrueX, TrueY   []float64
}

// BandPolygon returns the region between two curves over x: the polygon that runs along edge1
// from the first x to the last and back along edge2.
func BandPolygon(x, edge1, edge2 []float64) (*plotter.Polygon, error) {
	poly := make(plotter.XYs, 0, 2*len(x))
	for i := range x {
		poly = append(poly, plotter.XY{X: x[i], Y: edge1[i]})
	}
	for i := len(x) - 1; i >= 0; i-- {
		poly = append(poly, plotter.XY{X: x[i], Y: edge2[i]})
	}
	return plotter.NewPolygon(poly)
}

// SDBand returns the band mean ± k·sd over x, filled and outlined (0.1 pt) in c.
func SDBand(x, mean, sd []float64, k float64, c color.Color) (*plotter.Polygon, error) {
	hi, lo := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		hi[i], lo[i] = mean[i]+k*sd[i], mean[i]-k*sd[i]
	}
	pg, err := BandPolygon(x, hi, lo)
	if err != nil {
		return nil, err
	}
	pg.Color, pg.LineStyle.Color, pg.LineStyle.Width = c, c, vg.Points(0.1)
	return pg, nil
}

// Regression1D draws the predictive mean with shaded ±1, 2 and 3 standard deviation bands and
// the training data.
func Regression1D(path, title string, b Band1D) error {
	if len(b.X) != len(b.Mean) || len(b.X) != len(b.SD) || len(b.X) < 2 {
		return fmt.Errorf("plot %s: %d inputs, %d means, %d sds", path, len(b.X), len(b.Mean), len(b.SD))
	}
	if !sort.Float64sAreSorted(b.X) {
		return fmt.Errorf("plot %s: inputs are not increasing", path)
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "x", "y"
	for k := 3; k >= 1; k-- {
		shade := []color.RGBA{{R: 110, G: 160, B: 215, A: 255}, {R: 160, G: 195, B: 235, A: 255}, {R: 210, G: 228, B: 246, A: 255}}
		pg, err := SDBand(b.X, b.Mean, b.SD, float64(k), shade[k-1])
		if err != nil {
			return err
		}
		p.Add(pg)
	}
	mean, _ := xys(b.X, b.Mean)
	ml, err := plotter.NewLine(mean)
	if err != nil {
		return err
	}
	ml.Color, ml.Width = palette[0], vg.Points(2)
	p.Add(ml)
	p.Legend.Add("predictive mean ±1,2,3 sd", ml)
	if len(b.TrueX) > 0 {
		tr, err := xys(b.TrueX, b.TrueY)
		if err != nil {
			return err
		}
		tl, err := plotter.NewLine(tr)
		if err != nil {
			return err
		}
		tl.Color, tl.Dashes = color.Black, []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(tl)
		p.Legend.Add("true function", tl)
	}
	if len(b.TrainX) > 0 {
		pts, err := xys(b.TrainX, b.TrainY)
		if err != nil {
			return err
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Shape, sc.Color, sc.Radius = draw.CircleGlyph{}, palette[3], vg.Points(2)
		p.Add(sc)
		p.Legend.Add("training data", sc)
	}
	p.Y.Min, p.Y.Max = -4, 4
	p.Legend.Top = true
	return Save(p, path, 6, 4)
}

// Mark is one labelled point drawn over the curves of LinesWithMarks.
type Mark struct {
	Name string
	X, Y float64
}

// LinesWithMarks draws curves as Lines does and, over them, each mark as a labelled point, with
// the legend at the top left (rising curves such as risk against coverage leave it free); it
// saves a PNG of w×h inches.
func LinesWithMarks(path, title, xlabel, ylabel string, series []Series, marks []Mark, w, h float64) error {
	p, err := linesPlot(path, title, xlabel, ylabel, series)
	if err != nil {
		return err
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	for i, m := range marks {
		if !drawable(m.X) || !drawable(m.Y) {
			continue
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: m.X, Y: m.Y}})
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		sc.GlyphStyle.Shape = shapes[i%len(shapes)]
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Color = color.Black
		p.Add(sc)
		if m.Name != "" {
			p.Legend.Add(m.Name, sc)
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	return Save(p, path, w, h)
}
