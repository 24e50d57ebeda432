// Command fsvi runs paper 004's toy experiments with edgebnn's trainer: FSVI (objective fsvi),
// MFVI (the ELBO with the parameter-space KL, the same q and initialisation) and MAP (the
// deterministic network with the weight decay of the same N(0, 1) prior, 1/N) on the 1-D
// regression data (data toy1d) and Two Moons (data moons). It prints a Markdown table and writes
// one PNG per data set and method (≤ 150 KB, the first seed's) to -out; every number is the mean
// ± standard error over -seeds seeds (seed, seed+1, …). -quick trains for a few hundred steps
// (seconds; for CI) instead of the full runs.
//
//	go run ./bench/fsvi -out docs/img/fsvi          # full, 3 seeds (about 5 min of one core)
//	go run ./bench/fsvi -quick -out /tmp/fsvi       # seconds
//	go run ./bench/fsvi -sweep all -seeds 3         # toy1d variants, mean ± standard error
package main

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/plot"
)

// ffgPrior is the inference config of FSVI and MFVI: q's initial σ 10⁻³, prior N(0, 1) on every
// weight and bias (MAP's weight decay 1/N is the same prior).
const ffgPrior = `{"inference": "ffg", "prior_weight_sd": 1, "prior_bias_sd": 1, "init_sd": 1e-3}`

var methods = []string{"FSVI", "MFVI", "MAP"}

// toySteps is the number of toy1d steps of a full run (Two Moons: 4000).
const toySteps = 16000

func config(method, dataset string, steps int, seed uint64, dir string) (train.Config, error) {
	c := train.DefaultConfig()
	c.Data, c.Seed, c.LR = dataset, seed, 3e-3
	c.EvalEvery, c.CheckpointEvery, c.TestSamples = train.MaxEpochs, train.MaxEpochs, 64
	c.Out = filepath.Join(dir, fmt.Sprintf("%s-%s.ebnn", dataset, method))
	n := 100
	if dataset == "toy1d" {
		// The toy recipe (docs/FSVI.md, -sweep): Adam 10⁻², 4× the steps of Two Moons.
		c.Arch, c.Task, c.NoisePrecision, c.BatchSize = "mlp:1-50-1:tanh", "regression", 100, 100
		c.Epochs, c.LR = toySteps*steps/4000, 1e-2
	} else {
		n = train.MoonsTrain
		c.Arch, c.Task, c.BatchSize = "mlp:2-32-32-2", "classification", 50
		c.Epochs = max(1, steps/(n/c.BatchSize))
	}
	switch method {
	case "MAP":
		c.Posterior, c.WeightDecay, c.TestSamples = "deterministic", 1/float64(n), 1
	default:
		c.Posterior = "ffg_w"
		if err := c.Inference.Set(ffgPrior); err != nil {
			return c, err
		}
		if method == "FSVI" {
			c.Objective, c.Context, c.ContextSize, c.ContextMargin = "fsvi", "uniform", train.DefaultContextSize, 0.5
		}
	}
	return c, nil
}

// row is one data set and method: its metrics (toy or moons) and training seconds, one entry
// per seed.
type row struct {
	dataset, method string
	cols            [][]float64
	seconds         []float64
}

func main() {
	quick := flag.Bool("quick", false, "train briefly (CI)")
	out := flag.String("out", "docs/img/fsvi", "directory of the PNGs")
	seed := flag.Uint64("seed", 1, "the first random seed (not -sweep, which runs seeds 1..n)")
	sweep := flag.String("sweep", "", "toy1d only: run these comma-separated variants (see variants; \"all\") over -seeds seeds and print mean ± standard error")
	seeds := flag.Int("seeds", 3, "seeds per method (mean ± standard error)")
	sets := flag.String("data", "toy1d,moons", "comma-separated data sets to run (toy1d, moons)")
	kl := flag.String("fsvi-kl", "", "FSVI's KL: linearized or last_layer (default: the trainer's default, linearized)")
	flag.Parse()
	if *sweep != "" {
		if err := runSweep(*sweep, *seeds, *quick); err != nil {
			fmt.Fprintln(os.Stderr, "fsvi:", err)
			os.Exit(1)
		}
		return
	}
	steps := 4000
	if *quick {
		steps = 200
	}
	if *seeds < 1 {
		fmt.Fprintln(os.Stderr, "fsvi: -seeds must be at least 1")
		os.Exit(2)
	}
	if err := run(*out, steps, *seed, *seeds, *kl, strings.Split(*sets, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "fsvi:", err)
		os.Exit(1)
	}
}

func run(out string, steps int, first uint64, seeds int, kl string, sets []string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "fsvi-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var rows []row
	for _, ds := range sets {
		if ds != "toy1d" && ds != "moons" {
			return fmt.Errorf("data set %q is not toy1d or moons", ds)
		}
		for _, m := range methods {
			r := row{dataset: ds, method: m}
			for seed := first; seed < first+uint64(seeds); seed++ {
				c, err := config(m, ds, steps, seed, tmp)
				if err != nil {
					return err
				}
				if m == "FSVI" && kl != "" {
					c.FSVIKL = kl
				}
				tr, err := train.New(c)
				if err != nil {
					return fmt.Errorf("%s %s seed %d: %w", ds, m, seed, err)
				}
				start := time.Now()
				if err := tr.Run(context.Background(), train.Hooks{}); err != nil {
					return fmt.Errorf("%s %s seed %d: %w", ds, m, seed, err)
				}
				r.seconds = append(r.seconds, time.Since(start).Seconds())
				model, err := tr.Model()
				if err != nil {
					return err
				}
				opt := runtime.Options{Samples: c.TestSamples, Seed: 7, MaxBatch: 100}
				png := "" // the first seed's figures only
				if seed == first {
					png = filepath.Join(out, ds+"-"+m+".png")
				}
				var cols []float64
				if ds == "toy1d" {
					cols, err = toy(model, opt, tr.Train, png, m)
				} else {
					cols, err = moons(model, opt, tr.Train, tr.Test, png)
				}
				if err != nil {
					return fmt.Errorf("%s %s seed %d: %w", ds, m, seed, err)
				}
				r.cols = append(r.cols, cols)
			}
			rows = append(rows, r)
		}
	}
	// cell is column j over the seeds as eval.FormatMeanSE writes it ("–" where a seed has no
	// value, as a grid with no far point).
	cell := func(r row, j int, format string) string {
		x := make([]float64, len(r.cols))
		for i, c := range r.cols {
			if math.IsNaN(c[j]) {
				return "–"
			}
			x[i] = c[j]
		}
		return eval.FormatMeanSE(x, format)
	}
	for len(rows) > 0 {
		ds, rs := rows[0].dataset, rows[:3]
		rows = rows[3:]
		if ds == "toy1d" {
			fmt.Printf("toy1d (%d steps, Adam 10⁻²): RMSE of the mean against cos(4x+0.8) on the training intervals; mean epistemic sd in the data, in the gap (−0.7, 0.5) and outside (1.2 ≤ |x| ≤ 2); mean ± s.e. over seeds %d..%d\n\n", toySteps*steps/4000, first, first+uint64(seeds)-1)
			fmt.Println("| method | RMSE | sd in data | sd in gap | sd outside | train s |")
		} else {
			fmt.Printf("moons (≈%d steps): test accuracy and NLL (1000 points); mean predictive entropy (nats) on the test set and on far inputs (grid points ≥ 1.5 from every training point); mean ± s.e. over seeds %d..%d\n\n", steps, first, first+uint64(seeds)-1)
			fmt.Println("| method | accuracy | NLL | entropy test | entropy far | train s |")
		}
		fmt.Println("|---|---:|---:|---:|---:|---:|")
		for _, r := range rs {
			const format = "%.3f"
			c0 := cell(r, 0, format)
			if ds == "moons" {
				c0 = cell(r, 0, "%.1f") + " %"
			}
			secs, _ := eval.MeanSE(r.seconds)
			fmt.Printf("| %s | %s | %s | %s | %s | %.1f |\n", r.method, c0, cell(r, 1, format), cell(r, 2, format), cell(r, 3, format), secs)
		}
		fmt.Println()
	}
	return nil
}

// toy returns the RMSE of the predictive mean on the training intervals and the mean epistemic sd
// in the data, in the gap and outside, and draws the fit to path (none when path is empty).
func toy(m *runtime.Model, opt runtime.Options, tr *data.Dataset, path, title string) ([]float64, error) {
	grid := data.Toy1DGrid(201, -2, 2)
	p, err := m.NewPredictor(opt)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	preds := make([]runtime.Prediction, grid.N)
	if err := p.PredictBatch(grid.X, preds); err != nil {
		return nil, err
	}
	b := plot.Band1D{}
	var se, nse float64
	var sd [3]float64
	var nsd [3]int
	for i, pr := range preds {
		x := float64(grid.X[i])
		s := math.Sqrt(float64(pr.EpistemicVar[0]))
		b.X, b.Mean, b.SD = append(b.X, x), append(b.Mean, float64(pr.Mean[0])), append(b.SD, s)
		b.TrueX, b.TrueY = append(b.TrueX, x), append(b.TrueY, data.Toy1DMean(x))
		k := -1
		switch {
		case (x >= -1 && x <= -0.7) || (x >= 0.5 && x <= 1):
			k = 0
			d := float64(pr.Mean[0]) - data.Toy1DMean(x)
			se += d * d
			nse++
		case x > -0.7 && x < 0.5:
			k = 1
		case math.Abs(x) >= 1.2:
			k = 2
		}
		if k >= 0 {
			sd[k] += s
			nsd[k]++
		}
	}
	for i := 0; i < tr.N; i++ {
		b.TrainX, b.TrainY = append(b.TrainX, float64(tr.X[i])), append(b.TrainY, float64(tr.Targets[i]))
	}
	if path != "" {
		if err := plot.Regression1D(path, "toy1d: "+title, b); err != nil {
			return nil, err
		}
	}
	return []float64{math.Sqrt(se / nse), sd[0] / float64(nsd[0]), sd[1] / float64(nsd[1]), sd[2] / float64(nsd[2])}, nil
}

// moons returns the test accuracy (%), NLL and mean predictive entropy and the mean entropy on the
// far grid points (NaN when there are none), and draws the predictive entropy over
// [−2, 3]×[−1.75, 2.25] (white 0, dark ln 2) with the training points (class 0 red, class 1 blue)
// to path (none when path is empty).
func moons(m *runtime.Model, opt runtime.Options, tr, te *data.Dataset, path string) ([]float64, error) {
	p, err := m.NewPredictor(opt)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	preds := make([]runtime.Prediction, te.N)
	if err := p.PredictBatch(te.X, preds); err != nil {
		return nil, err
	}
	var acc, nll, ent float64
	for i, pr := range preds {
		if pr.Class == te.Labels[i] {
			acc++
		}
		nll -= math.Log(max(float64(pr.Probs[te.Labels[i]]), 1e-12))
		ent += pr.Entropy
	}
	n := float64(te.N)
	const px = 150
	x0, x1, y0, y1 := -2.0, 3.0, -1.75, 2.25
	xs := make([]float32, 0, 2*px*px)
	for j := 0; j < px; j++ {
		for i := 0; i < px; i++ {
			xs = append(xs, float32(x0+(x1-x0)*(float64(i)+0.5)/px), float32(y1-(y1-y0)*(float64(j)+0.5)/px))
		}
	}
	gp := make([]runtime.Prediction, px*px)
	if err := p.PredictBatch(xs, gp); err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, px, px))
	var far float64
	var nfar int
	for k, pr := range gp {
		v := min(1, pr.Entropy/math.Ln2)
		g := uint8(255 * (1 - 0.85*v))
		img.Set(k%px, k/px, color.RGBA{R: g, G: g, B: uint8(min(255, float64(g)+30)), A: 255})
		dmin := math.Inf(1)
		for i := 0; i < tr.N; i++ {
			dmin = min(dmin, math.Hypot(float64(xs[2*k]-tr.X[2*i]), float64(xs[2*k+1]-tr.X[2*i+1])))
		}
		if dmin >= 1.5 {
			far += pr.Entropy
			nfar++
		}
	}
	for i := 0; i < tr.N; i++ {
		cx := int((float64(tr.X[2*i]) - x0) / (x1 - x0) * px)
		cy := int((y1 - float64(tr.X[2*i+1])) / (y1 - y0) * px)
		col := color.RGBA{R: 200, G: 30, B: 30, A: 255}
		if tr.Labels[i] == 1 {
			col = color.RGBA{R: 20, G: 60, B: 200, A: 255}
		}
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				img.Set(cx+dx, cy+dy, col)
			}
		}
	}
	if path != "" {
		if err := outfile.Write(context.Background(), path, func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
			return nil, err
		}
	}
	farMean := math.NaN()
	if nfar > 0 {
		farMean = far / float64(nfar)
	}
	return []float64{100 * acc / n, nll / n, ent / n, farMean}, nil
}
