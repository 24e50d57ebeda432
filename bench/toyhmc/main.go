// Command toyhmc compares the variational toy regressions of paper 003 (appendix J.1, Fig. 2:
// FFG-W, FCG-W, FFG-U, FCG-U, Ensemble-U) with the HMC/NUTS reference of
// `edgebnn train --posterior hmc`, through the runtime: runtime.Load, a Predictor with
// KeepSamples, K predictive samples per input.
//
// It reads the models bench/toy_vs_hmc.sh trains into -dir: hmc.model.ebnn (the reference, an
// ensemble of kept NUTS draws) and <method>_s<seed>.model.ebnn for the methods ffgw, fcgw,
// ffgu, fcgu and ensembleu (every seed found). For each model it draws -samples predictive samples of
// f(x) (the network output, without the observation noise) at -grid points of x ∈ [−2, 2] and at
// the training inputs, and computes
//
//   - the predictive mean and epistemic sd (the sd of the K samples of f(x)) at every x;
//   - the in-between / at-data ratio: the mean epistemic sd over the grid points strictly between
//     the two training clusters, x ∈ (−0.7, 0.5) (data.Toy1D draws x from U[−1, −0.7] and
//     U[0.5, 1]), divided by the mean epistemic sd at the 100 training inputs;
//   - the distance of the predictive marginal of f(x) to HMC's at every grid point: the
//     1-Wasserstein distance of the two empirical sample sets (W1) and the two-sample
//     Kolmogorov–Smirnov statistic (KS), averaged over the grid;
//   - the RMSE of the predictive mean against the true function cos(4x + 0.8) over the grid and
//     at the training inputs;
//
// and summarises each method as mean ± standard error over its seeds. It writes -md (a Markdown
// table beside paper 003's qualitative claim for each method), -csv (every model's grid: mean,
// epistemic and total sd, W1, KS) and -png (eight panels: HMC and the five methods with the
// data, the predictive mean and ±2 sd bands, the epistemic sd of all six against x, and each
// method's W1 to HMC against x).
//
//	go run ./bench/toyhmc -export-data runs/toyhmc/toy1d.csv       # the training data as CSV
//	go run ./bench/toyhmc -dir runs/toyhmc -png docs/img/toyhmc.png  # the comparison
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// method is one row of the comparison.
type method struct {
	Key   string // file stem: hmc.model.ebnn, <Key>_s<seed>.model.ebnn
	Name  string
	Claim string // paper 003's qualitative claim (§5.1 / Fig. 2)
}

// methods lists the reference first.
var methods = []method{
	{"hmc", "HMC (NUTS)", "reference: the exact posterior (Fig. 2f), wide between and away from the clusters"},
	{"ffgw", "FFG-W", "fails to represent the increased uncertainty away from the data and in between clusters"},
	{"fcgw", "FCG-W", "better captures the increased predictive variance (Fig. 2e); mean function more like FFG-W's"},
	{"ffgu", "FFG-U", "underestimates predictive uncertainty overall; a small increase away from the data"},
	{"fcgu", "FCG-U", "better captures the increased predictive variance; mean function more like FFG-W's"},
	{"ensembleu", "Ensemble-U", "better captures the increased predictive variance; mean function more like FFG-W's"},
}

// The training clusters of data.Toy1D: x ~ U[−1, −0.7] and U[0.5, 1].
const gapLo, gapHi = -0.7, 0.5

// fit is one model's predictive samples and summaries.
type fit struct {
	Method   method
	Seed     int // -1 for the HMC reference
	X        []float64
	Samples  [][]float64 // per grid point, the K samples of f(x), sorted
	Raw      [][]float64 // the same in sample order (sample k of an ensemble is member k mod M)
	Mean     []float64
	Epi      []float64 // epistemic sd
	Total    []float64 // total predictive sd (with the noise variance)
	AtData   float64   // mean epistemic sd at the training inputs
	InGap    float64   // mean epistemic sd over the grid points in (gapLo, gapHi)
	RMSE     float64   // predictive mean against data.Toy1DMean over the grid
	RMSEData float64   // the same at the training inputs
	W1, KS   []float64 // per grid point, to HMC (nil for HMC)
	MeanW1   float64
	MeanKS   float64
	NSamples int
}

// Ratio is the in-between / at-data epistemic sd ratio.
func (f *fit) Ratio() float64 { return f.InGap / f.AtData }

// options are the command's settings.
type options struct {
	Dir      string
	Samples  int
	Grid     int
	DataSeed uint64
	PredSeed uint64
	MD, CSV  string
	PNG      string
	Note     string
}

func main() {
	var o options
	export := flag.String("export-data", "", "write the toy training data (data.Toy1D(100, -data-seed)) as CSV x,y to this path and exit")
	flag.StringVar(&o.Dir, "dir", "runs/toyhmc", "directory of hmc.model.ebnn and <method>_s<seed>.model.ebnn")
	flag.IntVar(&o.Samples, "samples", 1000, "predictive samples K per input and model")
	flag.IntVar(&o.Grid, "grid", 81, "grid points over x ∈ [−2, 2]")
	flag.Uint64Var(&o.DataSeed, "data-seed", 1, "seed of the toy data the models were trained on (the HMC preset's seed)")
	flag.Uint64Var(&o.PredSeed, "pred-seed", 7, "seed of the runtime's sampling")
	flag.StringVar(&o.MD, "md", "", "Markdown table path (default <dir>/toyhmc.md)")
	flag.StringVar(&o.CSV, "csv", "", "per-grid-point CSV path (default <dir>/toyhmc_grid.csv)")
	flag.StringVar(&o.PNG, "png", "", "eight-panel figure path (default <dir>/toyhmc.png)")
	flag.StringVar(&o.Note, "note", "", "a line printed under the table (what ran)")
	flag.Parse()
	if *export != "" {
		if err := exportData(*export, o.DataSeed); err != nil {
			fmt.Fprintln(os.Stderr, "toyhmc:", err)
			os.Exit(1)
		}
		return
	}
	if o.MD == "" {
		o.MD = filepath.Join(o.Dir, "toyhmc.md")
	}
	if o.CSV == "" {
		o.CSV = filepath.Join(o.Dir, "toyhmc_grid.csv")
	}
	if o.PNG == "" {
		o.PNG = filepath.Join(o.Dir, "toyhmc.png")
	}
	// Outputs that cannot be written are refused before the predictions, not after them.
	if err := outfile.CheckOutputs("toyhmc: ", outfile.Output{Flag: "-md", Path: o.MD}, outfile.Output{Flag: "-csv", Path: o.CSV}, outfile.Output{Flag: "-png", Path: o.PNG}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	table, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "toyhmc:", err)
		os.Exit(1)
	}
	fmt.Print(table)
}

// exportData writes data.Toy1D(100, seed) as CSV with a header x,y; float32 values are written
// with the shortest representation that reads back exactly.
func exportData(path string, seed uint64) error {
	d := data.Toy1D(100, seed)
	var b strings.Builder
	b.WriteString("x,y\n")
	for i := 0; i < d.N; i++ {
		fmt.Fprintf(&b, "%s,%s\n", strconv.FormatFloat(float64(d.X[i]), 'g', -1, 32),
			strconv.FormatFloat(float64(d.Targets[i]), 'g', -1, 32))
	}
	if err := outfile.WriteBytes(context.Background(), path, []byte(b.String())); err != nil {
		return fmt.Errorf("export data: %w", err)
	}
	return nil
}

// run evaluates every model in o.Dir and writes the table, CSV and figure; it returns the table.
func run(o options) (string, error) {
	if o.Samples < 2 || o.Grid < 3 {
		return "", fmt.Errorf("need -samples ≥ 2 and -grid ≥ 3, got %d and %d", o.Samples, o.Grid)
	}
	train := data.Toy1D(100, o.DataSeed)
	grid := make([]float64, o.Grid)
	for i := range grid {
		grid[i] = -2 + 4*float64(i)/float64(o.Grid-1)
	}
	if gapPoints(grid) == 0 {
		return "", fmt.Errorf("a grid of %d points has no point in (%g, %g)", o.Grid, gapLo, gapHi)
	}
	ref, err := evaluate(filepath.Join(o.Dir, "hmc.model.ebnn"), methods[0], -1, grid, train, o)
	if err != nil {
		return "", err
	}
	fits := map[string][]*fit{"hmc": {ref}}
	for _, m := range methods[1:] {
		seeds, err := findSeeds(o.Dir, m.Key)
		if err != nil {
			return "", err
		}
		for _, s := range seeds {
			f, err := evaluate(filepath.Join(o.Dir, fmt.Sprintf("%s_s%d.model.ebnn", m.Key, s)), m, s, grid, train, o)
			if err != nil {
				return "", err
			}
			compare(f, ref)
			fits[m.Key] = append(fits[m.Key], f)
		}
	}
	floorW1, floorKS := halfFloor(ref)
	table := markdown(fits, o, floorW1, floorKS)
	if err := outfile.WriteBytes(context.Background(), o.MD, []byte(table)); err != nil {
		return "", fmt.Errorf("write table: %w", err)
	}
	if err := writeCSV(o.CSV, fits); err != nil {
		return "", err
	}
	if err := panels(o.PNG, fits, train); err != nil {
		return "", fmt.Errorf("figure %s: %w", o.PNG, err)
	}
	return table, nil
}

// seedFile matches <key>_s<seed>.model.ebnn.
var seedFile = regexp.MustCompile(`^([a-z]+)_s([0-9]+)\.model\.ebnn$`)

// findSeeds returns the seeds of the method key's models in dir, increasing.
func findSeeds(dir, key string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var seeds []int
	for _, e := range ents {
		if m := seedFile.FindStringSubmatch(e.Name()); m != nil && m[1] == key {
			s, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, fmt.Errorf("models: %s: %w", e.Name(), err)
			}
			seeds = append(seeds, s)
		}
	}
	sort.Ints(seeds)
	return seeds, nil
}

// gapPoints counts the grid points strictly between the clusters.
func gapPoints(grid []float64) int {
	n := 0
	for _, x := range grid {
		if x > gapLo && x < gapHi {
			n++
		}
	}
	return n
}

// predictSamples returns, for every input, the K samples of f(x) in sample order, and the total
// predictive sd the runtime reports (epistemic plus noise variance).
func predictSamples(m *runtime.Model, xs []float64, o options) ([][]float64, []float64, error) {
	p, err := m.NewPredictor(runtime.Options{Samples: o.Samples, Seed: o.PredSeed, KeepSamples: true, MaxBatch: len(xs)})
	if err != nil {
		return nil, nil, fmt.Errorf("predictor: %w", err)
	}
	defer p.Close()
	in := make([]float32, len(xs))
	for i, x := range xs {
		in[i] = float32(x)
	}
	preds := make([]runtime.Prediction, len(xs))
	if err := p.PredictBatch(in, preds); err != nil {
		return nil, nil, fmt.Errorf("predict: %w", err)
	}
	samples := make([][]float64, len(xs))
	total := make([]float64, len(xs))
	for i := range preds {
		if len(preds[i].Outputs) != o.Samples {
			return nil, nil, fmt.Errorf("predict: %d per-sample outputs at x = %g, want %d (one output per sample)", len(preds[i].Outputs), xs[i], o.Samples)
		}
		s := make([]float64, o.Samples)
		for k, v := range preds[i].Outputs {
			s[k] = float64(v)
		}
		samples[i] = s
		total[i] = math.Sqrt(float64(preds[i].Var[0]))
	}
	return samples, total, nil
}

// evaluate loads the model at path and computes its fit on the grid and at the training inputs.
func evaluate(path string, me method, seed int, grid []float64, train *data.Dataset, o options) (*fit, error) {
	m, err := runtime.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no model (bench/toy_vs_hmc.sh trains it): %w", me.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", me.Name, err)
	}
	if m.Task() != runtime.Regression || m.InputSize() != 1 {
		return nil, fmt.Errorf("%s: %s is not a 1-input regression model", me.Name, path)
	}
	f := &fit{Method: me, Seed: seed, X: grid, NSamples: o.Samples}
	if f.Raw, f.Total, err = predictSamples(m, grid, o); err != nil {
		return nil, fmt.Errorf("%s %s: %w", me.Name, path, err)
	}
	for _, r := range f.Raw {
		s := append([]float64(nil), r...)
		sort.Float64s(s)
		f.Samples = append(f.Samples, s)
	}
	var gap, sq float64
	for i, s := range f.Samples {
		mu, sd := meanSD(s)
		f.Mean, f.Epi = append(f.Mean, mu), append(f.Epi, sd)
		if grid[i] > gapLo && grid[i] < gapHi {
			gap += sd
		}
		d := mu - data.Toy1DMean(grid[i])
		sq += d * d
	}
	f.InGap = gap / float64(gapPoints(grid))
	f.RMSE = math.Sqrt(sq / float64(len(grid)))
	xs := make([]float64, train.N)
	for i := range xs {
		xs[i] = float64(train.X[i])
	}
	at, _, err := predictSamples(m, xs, o)
	if err != nil {
		return nil, fmt.Errorf("%s %s at the training inputs: %w", me.Name, path, err)
	}
	sq = 0
	for i, s := range at {
		mu, sd := meanSD(s)
		f.AtData += sd
		d := mu - data.Toy1DMean(xs[i])
		sq += d * d
	}
	f.AtData /= float64(len(at))
	f.RMSEData = math.Sqrt(sq / float64(len(at)))
	return f, nil
}

// compare fills f's distances to the reference at every grid point and their grid means.
func compare(f, ref *fit) {
	f.W1, f.KS = make([]float64, len(f.X)), make([]float64, len(f.X))
	for i := range f.X {
		f.W1[i], f.KS[i] = W1(f.Samples[i], ref.Samples[i]), KS(f.Samples[i], ref.Samples[i])
		f.MeanW1 += f.W1[i]
		f.MeanKS += f.KS[i]
	}
	f.MeanW1 /= float64(len(f.X))
	f.MeanKS /= float64(len(f.X))
}

// halfFloor returns the grid-mean W1 and KS between the first and the second half of the
// reference's samples in sample order: for the HMC ensemble, whose members are its kept draws
// chain after chain, the first half of the chains against the second. Distances of that size
// are within the reference's own Monte-Carlo (and between-chain) variation.
func halfFloor(ref *fit) (w1, ks float64) {
	for _, r := range ref.Raw {
		h := len(r) / 2
		a, b := append([]float64(nil), r[:h]...), append([]float64(nil), r[h:]...)
		sort.Float64s(a)
		sort.Float64s(b)
		w1 += W1(a, b)
		ks += KS(a, b)
	}
	n := float64(len(ref.Raw))
	return w1 / n, ks / n
}

// pm formats mean ± standard error of the values of one method over its seeds.
func pm(vals []float64, prec int) string {
	return eval.FormatMeanSE(vals, "%."+strconv.Itoa(prec)+"f")
}

// markdown renders the comparison table.
func markdown(fits map[string][]*fit, o options, floorW1, floorKS float64) string {
	var b strings.Builder
	b.WriteString("| method | seeds | epistemic sd in between | epistemic sd at data | in-between / at-data ratio | mean W1 to HMC | mean KS to HMC | RMSE of mean vs cos(4x+0.8), grid | RMSE, training inputs | paper 003's claim (§5.1, Fig. 2) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, m := range methods {
		fs := fits[m.Key]
		if len(fs) == 0 {
			fmt.Fprintf(&b, "| %s | 0 | — | — | — | — | — | — | — | %s |\n", m.Name, m.Claim)
			continue
		}
		var gap, at, ratio, w1, ks, rmse, rmseData []float64
		var seeds []string
		for _, f := range fs {
			gap, at, ratio = append(gap, f.InGap), append(at, f.AtData), append(ratio, f.Ratio())
			w1, ks, rmse = append(w1, f.MeanW1), append(ks, f.MeanKS), append(rmse, f.RMSE)
			rmseData = append(rmseData, f.RMSEData)
			if f.Seed >= 0 {
				seeds = append(seeds, strconv.Itoa(f.Seed))
			}
		}
		seedCol, w1Col, ksCol := strconv.Itoa(len(fs)), pm(w1, 3), pm(ks, 3)
		if m.Key == "hmc" {
			seedCol = "1 (data seed " + strconv.FormatUint(o.DataSeed, 10) + ")"
			w1Col = fmt.Sprintf("(floor %.3f)", floorW1)
			ksCol = fmt.Sprintf("(floor %.3f)", floorKS)
		} else {
			seedCol += " (" + strings.Join(seeds, ", ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", m.Name, seedCol,
			pm(gap, 3), pm(at, 3), pm(ratio, 2), w1Col, ksCol, pm(rmse, 3), pm(rmseData, 3), m.Claim)
	}
	fmt.Fprintf(&b, "\nK = %d samples of f(x) per input and model (runtime seed %d), %d grid points over [−2, 2] "+
		"(%d of them in the gap (%g, %g)), 100 training inputs (data.Toy1D, seed %d). Values are mean ± standard "+
		"error over seeds (one seed: no error). HMC's floor is the same distance between the first and the second "+
		"half of its members (chain after chain: the first half of the chains against the second, K/2 samples a side): "+
		"distances near it are within the reference's own Monte-Carlo variation.\n",
		o.Samples, o.PredSeed, o.Grid, gapPoints(fits["hmc"][0].X), gapLo, gapHi, o.DataSeed)
	if o.Note != "" {
		b.WriteString("\n" + o.Note + "\n")
	}
	return b.String()
}

// writeCSV writes every model's grid summaries.
func writeCSV(path string, fits map[string][]*fit) error {
	var b strings.Builder
	b.WriteString("method,seed,x,mean,epistemic_sd,total_sd,w1_to_hmc,ks_to_hmc\n")
	for _, m := range methods {
		for _, f := range fits[m.Key] {
			for i, x := range f.X {
				w1, ks := "", ""
				if f.W1 != nil {
					w1, ks = strconv.FormatFloat(f.W1[i], 'g', 6, 64), strconv.FormatFloat(f.KS[i], 'g', 6, 64)
				}
				fmt.Fprintf(&b, "%s,%d,%.4f,%.6g,%.6g,%.6g,%s,%s\n", m.Key, f.Seed, x, f.Mean[i], f.Epi[i], f.Total[i], w1, ks)
			}
		}
	}
	if err := outfile.WriteBytes(context.Background(), path, []byte(b.String())); err != nil {
		return fmt.Errorf("write grid CSV: %w", err)
	}
	return nil
}
