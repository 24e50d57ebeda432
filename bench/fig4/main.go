// Command fig4 summarises bench/fig4.sh, paper 003's hyper-parameter ablation (Fig. 4) on the
// Fashion-MNIST MLP: it reads the per-run results (JSON lines: sweep, method, M, λ_max, σ_max,
// the KL weight, the last layer's M_out, seed, CPU seconds and the metrics of `edgebnn eval
// --json --ood digits`), prints six
// Markdown tables — FFG-U over λ_max × σ_max, Ensemble-U over λ_max (both at the grid's M, -grid-m), both
// methods over M at their default caps, both over λ_max / 8 (the paper's grid scaled to the
// project's 8× wider prior), FFG-U without noise over M with the KL term weighted 1 and 0, and
// FFG-U over M with the paper's last-layer shape (M_out = 10) beside M × M in every layer — each
// cell mean ± standard error over the seeds, then
// the total CPU time, and draws the figure: accuracy, NLL, ECE and OOD AUROC (rows) against
// λ_max (both grids on one categorical axis), σ_max and M (columns), as the paper's Fig. 4 (which
// shows accuracy and ECE only).
//
//	go run ./bench/fig4 -results runs/fig4/results.jsonl -png docs/img/fig4.png
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/train/eval"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// result is one trained and evaluated model.
type result struct {
	Sweep        string   `json:"sweep"`
	Method       string   `json:"method"` // ffgu or ensu
	M            int      `json:"m"`
	Lamda        float64  `json:"lamda"`
	SDU          *float64 `json:"sd_u"`        // nil for Ensemble-U
	Temperature  *float64 `json:"temperature"` // the KL term's weight; nil (results before it was recorded): 1
	LastRows     *int     `json:"last_rows"`   // the last layer's M_out; nil: M, as every other layer
	LR           *float64 `json:"lr"`          // Adam's step size when not the configs'; nil: theirs
	Seed         int      `json:"seed"`
	CPUSeconds   float64  `json:"cpu_seconds"`
	Accuracy     float64  `json:"accuracy"`
	NLL          float64  `json:"nll"`
	ECE          float64  `json:"ece"`
	AUROCEntropy float64  `json:"auroc_entropy"`
	AUROCMI      float64  `json:"auroc_mi"`
}

// key identifies a cell: the method and its settings (σ_max −1 for Ensemble-U; temp the KL
// term's weight; lastRows the last layer's M_out, 0 for M).
type key struct {
	method   string
	m        int
	lamda    float64
	sdU      float64
	temp     float64
	lastRows int
}

func (r result) key() key {
	k := key{method: r.Method, m: r.M, lamda: r.Lamda, sdU: -1, temp: 1}
	if r.SDU != nil {
		k.sdU = *r.SDU
	}
	if r.Temperature != nil {
		k.temp = *r.Temperature
	}
	if r.LastRows != nil {
		k.lastRows = *r.LastRows
	}
	return k
}

// The grid of bench/fig4.sh (paper 003, appendix J) and the defaults of the M sweep.
var (
	lamdas = []float64{0, 0.03, 0.1, 0.3}
	sdUs   = []float64{0, 0.1, 0.3}
	ms     = []int{16, 32, 64, 128}
	// smallLamdas are the paper's grid divided by 8, the ratio of the project's prior sd on W
	// (8/√d_in) to the paper's (1/√d_in): q(W|U)'s noise is σ_prior·λ.
	smallLamdas = []float64{0, 0.00375, 0.0125, 0.03}
	// plotLamdas are the λ_max positions of the figure's first column.
	plotLamdas = []float64{0, 0.00375, 0.0125, 0.03, 0.1, 0.3}
)

const (
	ffguLamda   = 0.03 // paper 003's FFG-U setting (CIFAR-10), and fmnist_ffgu.json's
	ffguSDU     = 0.1
	ensembleLam = 0.1 // paper 003's Ensemble-U setting
	// paperLastRows is M_out of the last layer in paper 003's ablation (appendix J: M × M
	// everywhere else); the project's configs use M × M there too.
	paperLastRows = 10
)

func ffguKey(m int, lam, sd float64) key { return key{"ffgu", m, lam, sd, 1, 0} }
func ensuKey(m int, lam float64) key     { return key{"ensu", m, lam, -1, 1, 0} }

// noPriorKey is FFG-U without noise (λ_max = σ_max = 0) trained with the KL term weighted 0.
func noPriorKey(m int) key { return key{"ffgu", m, 0, 0, 0, 0} }

// shapeKey is FFG-U at the default caps with the paper's last-layer M_out.
func shapeKey(m int) key { return key{"ffgu", m, ffguLamda, ffguSDU, 1, paperLastRows} }

// metric is one reported quantity of a result, in the tables' and the plot's units.
type metric struct {
	name, format string
	get          func(result) float64
}

var metrics = []metric{
	{"accuracy %", "%.2f", func(r result) float64 { return 100 * r.Accuracy }},
	{"NLL", "%.3f", func(r result) float64 { return r.NLL }},
	{"ECE %", "%.2f", func(r result) float64 { return 100 * r.ECE }},
	{"OOD AUROC (entropy)", "%.3f", func(r result) float64 { return r.AUROCEntropy }},
	{"OOD AUROC (MI)", "%.3f", func(r result) float64 { return r.AUROCMI }},
}

func main() {
	results := flag.String("results", "runs/fig4/results.jsonl", "the per-run results (JSON lines)")
	png := flag.String("png", "docs/img/fig4.png", "write the figure here (empty: none)")
	epochs := flag.Int("epochs", 3, "training epochs (for the caption)")
	samples := flag.Int("samples", 20, "Monte Carlo samples of the evaluation (for the caption)")
	trainLimit := flag.Int("train-limit", 0, "training images used, 0 for all (for the caption)")
	gridM := flag.Int("grid-m", 32, "M of the λ_max × σ_max grid and the small-λ_max sweep")
	flag.Parse()
	if err := outfile.CheckOutputs("fig4: ", outfile.Output{Flag: "-png", Path: *png}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	train := "60000"
	if *trainLimit > 0 {
		train = fmt.Sprint(*trainLimit)
	}
	// The step size is the results' own (one per file: read refuses a mix).
	caption := fmt.Sprintf("Fashion-MNIST MLP 784-256-256-10, %d epoch(s) of Adam %%s on %s training images, λ fixed at λ_max; "+
		"%d samples per prediction; OOD: scikit-learn's digits. Mean ± standard error over seeds. "+
		"Paper 003 Fig. 4: ResNet-18 on CIFAR-10, M = 128 in the λ_max and σ_max sweeps (its values are not in our copy of the text).",
		*epochs, train, *samples)
	if err := run(os.Stdout, *results, *png, caption, *gridM); err != nil {
		fmt.Fprintln(os.Stderr, "fig4:", err)
		os.Exit(1)
	}
}

// run prints the tables of the results in path with the grid and the small-λ_max sweep at M =
// gridM, and draws the figure into png unless it is empty. caption has one %s, for the results'
// step size.
func run(w io.Writer, path, png, caption string, gridM int) error {
	if !slices.Contains(ms, gridM) {
		return fmt.Errorf("-grid-m %d is not one of the M sweep's %v", gridM, ms)
	}
	cells, cpu, n, lr, err := read(path)
	if err != nil {
		return err
	}
	step := "3e-3 (the configs')"
	if lr != nil {
		step = fmt.Sprint(*lr)
	}
	fmt.Fprintf(w, caption+"\n\n", step)
	head := func(first string, extra ...string) {
		cols := append(append([]string{first}, extra...), "seeds")
		for _, m := range metrics {
			cols = append(cols, m.name)
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	}
	row := func(k key, labels ...string) {
		rs := cells[k]
		fmt.Fprintf(w, "| %s | %d |", strings.Join(labels, " | "), len(rs))
		for _, m := range metrics {
			fmt.Fprintf(w, " %s |", cell(rs, m))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "FFG-U, M = %d (the paper's Fig. 4 left and middle columns; λ_max = 0: W given U a point estimate, σ_max = 0: U a MAP estimate):\n\n", gridM)
	head("FFG-U λ_max", "σ_max")
	for _, lam := range lamdas {
		for _, sd := range sdUs {
			row(ffguKey(gridM, lam, sd), fmt.Sprint(lam), fmt.Sprint(sd))
		}
	}
	fmt.Fprintf(w, "\nEnsemble-U (5 members), M = %d (the paper's Fig. 4 left column):\n\n", gridM)
	head("Ensemble-U λ_max")
	for _, lam := range lamdas {
		row(ensuKey(gridM, lam), fmt.Sprint(lam))
	}
	fmt.Fprintf(w, "\nM = M_in = M_out at the default caps (the paper's Fig. 4 right column), and FFG-U with a MAP U (σ_max = 0) and with W|U a point estimate as well (λ_max = 0; neither in the paper):\n\n")
	head("method", "M", "λ_max", "σ_max")
	for _, m := range ms {
		row(ffguKey(m, ffguLamda, ffguSDU), "FFG-U", fmt.Sprint(m), fmt.Sprint(ffguLamda), fmt.Sprint(ffguSDU))
	}
	for _, lam := range []float64{ffguLamda, 0} {
		for _, m := range ms {
			row(ffguKey(m, lam, 0), "FFG-U", fmt.Sprint(m), fmt.Sprint(lam), "0")
		}
	}
	for _, m := range ms {
		row(ensuKey(m, ensembleLam), "Ensemble-U", fmt.Sprint(m), fmt.Sprint(ensembleLam), "—")
	}
	fmt.Fprintf(w, "\nSmall λ_max (the paper's grid / 8: the project's prior sd on W is 8× the paper's), M = %d:\n\n", gridM)
	head("method (small λ_max)", "λ_max", "σ_max")
	for _, lam := range smallLamdas {
		row(ffguKey(gridM, lam, ffguSDU), "FFG-U", fmt.Sprint(lam), fmt.Sprint(ffguSDU))
	}
	for _, lam := range smallLamdas {
		row(ensuKey(gridM, lam), "Ensemble-U", fmt.Sprint(lam), "—")
	}
	fmt.Fprintf(w, "\nFFG-U without noise (λ_max = σ_max = 0) over M, the KL term (the whitened prior's ½‖U‖² on U) weighted 1 (the ELBO's) and 0 (U and Z fitted by maximum likelihood alone; not in the paper):\n\n")
	head("FFG-U M (no noise)", "KL weight")
	for _, temp := range []float64{1, 0} {
		for _, m := range ms {
			row(key{"ffgu", m, 0, 0, temp, 0}, fmt.Sprint(m), fmt.Sprint(temp))
		}
	}
	fmt.Fprintf(w, "\nFFG-U at the default caps (λ_max %g, σ_max %g) over M with the last layer's U of M × M (the project's shape) and of %d × M (M_out = %d: the paper's):\n\n", ffguLamda, ffguSDU, paperLastRows, paperLastRows)
	head("FFG-U M (shape)", "last layer's U")
	for _, m := range ms {
		row(ffguKey(m, ffguLamda, ffguSDU), fmt.Sprint(m), fmt.Sprintf("%d × %d", m, m))
		row(shapeKey(m), fmt.Sprint(m), fmt.Sprintf("%d × %d", paperLastRows, m))
	}
	fmt.Fprintf(w, "\nCPU time: %.0f s (%.2f h) of training and evaluation over %d runs.\n", cpu, cpu/3600, n)
	if png == "" {
		return nil
	}
	return drawFigure(png, cells, gridM)
}

// read loads the results, grouped by cell, with the total CPU seconds, the number of runs and
// their step size (nil: the configs'; every run's must be the same).
func read(path string) (map[key][]result, float64, int, *float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	defer f.Close()
	cells := map[key][]result{}
	cpu, n := 0.0, 0
	var lr0 *float64 // the first result's step size: every cell's must be the same
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, 0, 0, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if n == 0 {
			lr0 = r.LR
		} else if lrString(r.LR) != lrString(lr0) {
			return nil, 0, 0, nil, fmt.Errorf("%s:%d: step size %s after %s: one table per step size", path, line, lrString(r.LR), lrString(lr0))
		}
		cells[r.key()] = append(cells[r.key()], r)
		cpu += r.CPUSeconds
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	if n == 0 {
		return nil, 0, 0, nil, errors.New(path + ": no results")
	}
	return cells, cpu, n, lr0, nil
}

// lrString names a result's step size: the configs' when nil.
func lrString(lr *float64) string {
	if lr == nil {
		return "the configs'"
	}
	return fmt.Sprint(*lr)
}

// values is a metric over a cell's seeds.
func values(rs []result, m metric) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = m.get(r)
	}
	return xs
}

// cell formats a table cell: "mean ± se", the mean alone for one seed, "—" for none.
func cell(rs []result, m metric) string { return eval.FormatMeanSE(values(rs, m), m.format) }

// series is one line of a panel: its label and the cell at each x position.
type series struct {
	label string
	cells []key
}

// column is one column of the figure: the x positions' labels and the lines.
type column struct {
	xlabel string
	ticks  []string
	lines  []series
}

// seriesOf returns the series label whose cell at each x position of xs is cell(x).
func seriesOf[X any](label string, xs []X, cell func(X) key) series {
	s := series{label: label}
	for _, x := range xs {
		s.cells = append(s.cells, cell(x))
	}
	return s
}

// tickLabels labels the x positions xs as fmt.Sprint prints them.
func tickLabels[X any](xs []X) []string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func columns(gridM int) []column {
	var byLam, bySD []series
	for _, sd := range sdUs {
		byLam = append(byLam, seriesOf(fmt.Sprintf("FFG-U σ_max = %g", sd), plotLamdas, func(lam float64) key { return ffguKey(gridM, lam, sd) }))
	}
	byLam = append(byLam, seriesOf("Ensemble-U", plotLamdas, func(lam float64) key { return ensuKey(gridM, lam) }))
	for _, lam := range lamdas {
		bySD = append(bySD, seriesOf(fmt.Sprintf("FFG-U λ_max = %g", lam), sdUs, func(sd float64) key { return ffguKey(gridM, lam, sd) }))
	}
	byM := []series{
		seriesOf(fmt.Sprintf("FFG-U (%g, %g)", ffguLamda, ffguSDU), ms, func(m int) key { return ffguKey(m, ffguLamda, ffguSDU) }),
		seriesOf(fmt.Sprintf("Ensemble-U (%g)", ensembleLam), ms, func(m int) key { return ensuKey(m, ensembleLam) }),
		seriesOf(fmt.Sprintf("FFG-U (%g, 0: MAP U)", ffguLamda), ms, func(m int) key { return ffguKey(m, ffguLamda, 0) }),
		seriesOf("FFG-U (0, 0: no noise)", ms, func(m int) key { return ffguKey(m, 0, 0) }),
		seriesOf("FFG-U (0, 0), KL weight 0", ms, noPriorKey),
		seriesOf(fmt.Sprintf("FFG-U (%g, %g), last layer M_out = %d", ffguLamda, ffguSDU, paperLastRows), ms, shapeKey),
	}
	return []column{
		{fmt.Sprintf("λ_max (M = %d)", gridM), tickLabels(plotLamdas), byLam},
		{fmt.Sprintf("σ_max (FFG-U, M = %d)", gridM), []string{"0", "0.1", "0.3"}, bySD},
		{"M (default caps; FFG-U also at σ_max = 0, without the KL, with the paper's last layer)", tickLabels(ms), byM},
	}
}

var colours = trainplot.Tableau[:6]

// drawFigure draws metrics (accuracy, NLL, ECE, AUROC by entropy; rows) against the columns'
// settings, each point a cell's mean with ± one standard error; cells without runs are skipped.
func drawFigure(path string, cells map[key][]result, gridM int) error {
	cols := columns(gridM)
	rows := metrics[:4]
	grid := make([][]*plot.Plot, len(rows))
	for i, m := range rows {
		for _, c := range cols {
			p := plot.New()
			p.Title.Text = m.name + " against " + c.xlabel
			p.Y.Label.Text = m.name
			if i == len(rows)-1 {
				p.X.Label.Text = c.xlabel
			}
			p.Add(plotter.NewGrid())
			var ticks []plot.Tick
			for x, t := range c.ticks {
				ticks = append(ticks, plot.Tick{Value: float64(x), Label: t})
			}
			p.X.Tick.Marker = plot.ConstantTicks(ticks)
			p.X.Min, p.X.Max = -0.3, float64(len(c.ticks))-0.7
			for k, s := range c.lines {
				var pts plotter.XYs
				var errs plotter.YErrors
				for x, ck := range s.cells {
					rs := cells[ck]
					if len(rs) == 0 {
						continue
					}
					mean, se := eval.MeanSE(values(rs, m))
					pts = append(pts, plotter.XY{X: float64(x), Y: mean})
					errs = append(errs, struct{ Low, High float64 }{se, se})
				}
				if len(pts) == 0 {
					continue
				}
				name := ""
				if i == 0 {
					name = s.label
				}
				if _, _, err := trainplot.AddErrorLine(p, name, pts, errs, colours[k%len(colours)], false); err != nil {
					return fmt.Errorf("plot %s: %w", path, err)
				}
			}
			p.Legend.Top, p.Legend.Left = false, false
			grid[i] = append(grid[i], p)
		}
	}
	const w, h = 16 * vg.Inch, 16 * vg.Inch
	tiles := draw.Tiles{Rows: len(rows), Cols: len(cols), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	return trainplot.SaveGrid(path, grid, w, h, 72, tiles)
}
