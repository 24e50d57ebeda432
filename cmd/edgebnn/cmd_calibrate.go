//go:build !device

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/calibrate"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/plot"
)

const calibrateUsage = `Usage: edgebnn calibrate --model M.ebnn --out M2.ebnn (--target-risk R | --target-coverage C)
                         [--on both] [--tolerance T] [--data fmnist|csv:PATH] [--split 0.5] [--seed S]
                         [--samples K] [--strategy local|weight] [--plot P.png]

Fits a model's decision policy on labelled data — a classifier acts on a
prediction only when its confidence (the predicted class's probability) is at
least a threshold and/or its mutual information (epistemic uncertainty) at most
one; a regression model only when the largest epistemic standard deviation of
its outputs is at most a threshold (--on epistemic_std, its default), an error
there being a prediction with an output farther than --tolerance T from its
target (required; --data csv:PATH, the target in --csv-target) — and writes
M2: the model file M with a "policy" section holding the thresholds (every
other section copied byte for byte; an existing policy is replaced). Devices
read the policy (edgebnn predict, the runtime's Model.Decide).

It predicts every input with K samples, splits the inputs at random (seeded)
into a fit part and a held-out part, chooses the thresholds on the fit part —
--target-risk R: error rate among accepted inputs ≤ R, accepting as many as
possible; --target-coverage C: accept at least ⌈C·(n+1)⌉ of the n fit
inputs (on one score, a fraction C of new inputs on average: split
conformal; not so on both), with the lowest error rate — and reports the
result on both parts, with an exact (Clopper–Pearson) 95% upper bound on the
held-out risk. docs/CALIBRATE.md has the details.`

// minCalibrationInputs is the fit-part size below which calibrate says its thresholds are
// unstable.
const minCalibrationInputs = 100

// calibrateWorkers is the fixed number of goroutines calibrate predicts with: the batches (and so
// the bits of every prediction) do not depend on the machine's cores.
const calibrateWorkers = 4

// calibrateCoverages are the coverages of the printed risk–coverage table.
var calibrateCoverages = []float64{1, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5}

// calibrateFlags are calibrate's options after parsing.
type calibrateFlags struct {
	model, out, data, dataDir, csvTarget, plot string
	target                                     calibrate.Target
	on                                         calibrate.On
	split, tolerance                           float64
	seed                                       uint64
	samples, limit, grid                       int
	strategy                                   runtime.Strategy
}

func parseCalibrateFlags(args []string, stdout io.Writer) (*calibrateFlags, error) {
	fs := newFlagSet("calibrate")
	o := &calibrateFlags{}
	fs.StringVar(&o.model, "model", "", "the model file `M` to calibrate (a classifier)")
	fs.StringVar(&o.out, "out", "", "write the calibrated model file `M2` (not M)")
	fs.StringVar(&o.data, "data", "fmnist", "labelled data: fmnist (the Fashion-MNIST test set) or csv:PATH (every row)")
	fs.StringVar(&o.dataDir, "data-dir", "", "directory of the Fashion-MNIST IDX files (default "+data.DefaultFashionMNISTDir+")")
	fs.StringVar(&o.csvTarget, "csv-target", "", "CSV label column: a header name or 0-based index (default: the last)")
	fs.IntVar(&o.limit, "limit", 0, "use only the first `N` inputs (0: all)")
	risk := fs.Float64("target-risk", math.NaN(), "accept as many inputs as possible with an error rate ≤ `R` among them")
	coverage := fs.Float64("target-coverage", math.NaN(), "accept at least a fraction `C` of the inputs, with the lowest error rate")
	on := fs.String("on", "", "threshold confidence, mutual_info or both (a classifier; default both), or epistemic_std\n(a regression model, the default)")
	tolerance := fs.Float64("tolerance", math.NaN(), "regression: an error is a prediction with an output farther than `T` from its target")
	fs.Float64Var(&o.split, "split", calibrate.DefaultSplit, "fraction of the inputs to fit on; the rest is held out")
	fs.Uint64Var(&o.seed, "seed", 42, "random `seed` of the split and of the predictions (recorded in the policy: predict, eval\nand serve use it by default)")
	fs.IntVar(&o.samples, "samples", 0, "Monte Carlo samples `K` per prediction (default: the model's policy's, else one per\nmember of an ensemble, else 32; a mixture of M: 32 rounded up to a multiple of M; a\ndeterministic network: 1)")
	fs.IntVar(&o.grid, "grid", calibrate.DefaultGrid, "candidate thresholds per score for --on both")
	strategy := fs.String("strategy", "local", "sampling `strategy` of the predictions, weight or local, recorded in the policy\n(the default of the model's predictions): both give an input the same samples in any\nbatch (auto's choice depends on it)")
	fs.StringVar(&o.plot, "plot", "", "write the risk–coverage curves to `P.png`")
	if err := parseFlagsOnly(fs, calibrateUsage, args, stdout); err != nil {
		return nil, err
	}
	st, err := runtime.ParseStrategy(*strategy)
	if err != nil || st == runtime.Auto {
		return nil, usagef("--strategy %s is not weight or local (auto's samples depend on the batch)", clip.Q(*strategy))
	}
	o.strategy = st
	// Which target was given comes from the flags set, not their values: an explicit NaN is a
	// bad value, not a missing flag.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case o.model == "":
		return nil, usagef("missing --model M")
	case o.out == "":
		return nil, usagef("missing --out M2")
	case set["target-risk"] == set["target-coverage"]:
		return nil, usagef("give exactly one of --target-risk and --target-coverage")
	case set["target-risk"]:
		if !(*risk >= 0 && *risk < 1) {
			return nil, usagef("--target-risk %g is not in [0, 1)", *risk)
		}
		o.target = calibrate.Target{Kind: calibrate.TargetRisk, Value: *risk}
	default:
		if !(*coverage > 0 && *coverage <= 1) {
			return nil, usagef("--target-coverage %g is not in (0, 1]", *coverage)
		}
		o.target = calibrate.Target{Kind: calibrate.TargetCoverage, Value: *coverage}
	}
	if *on != "" {
		var err error
		if o.on, err = calibrate.ParseOn(*on); err != nil {
			return nil, usagef("--on: %v", err)
		}
	}
	if set["tolerance"] {
		if !(*tolerance > 0 && *tolerance <= 1e15) {
			return nil, usagef("--tolerance %g is not in (0, 1e15]", *tolerance)
		}
		o.tolerance = *tolerance
	}
	switch {
	case !(o.split > 0 && o.split < 1):
		return nil, usagef("--split %g is not in (0, 1)", o.split)
	case o.samples < 0 || o.samples > maxSamplesFlag:
		return nil, usagef("--samples %d outside [1, %d]", o.samples, maxSamplesFlag)
	case o.limit < 0:
		return nil, usagef("--limit %d is negative", o.limit)
	case o.grid < 2 || o.grid > 4096:
		return nil, usagef("--grid %d outside [2, 4096]", o.grid)
	}
	if o.data != "fmnist" && !strings.HasPrefix(o.data, "csv:") {
		return nil, usagef("--data %q is not fmnist or csv:PATH", o.data)
	}
	switch {
	case o.data == "csv:":
		return nil, usagef("--data csv: names no file (csv:PATH)")
	case o.data == "fmnist" && set["csv-target"]:
		return nil, usagef("--csv-target is for --data csv:PATH, not fmnist")
	case o.data != "fmnist" && set["data-dir"]:
		return nil, usagef("--data-dir is for --data fmnist, not %s", o.data)
	}
	if o.plot != "" {
		if err := plot.CheckFormat(o.plot); err != nil {
			return nil, usagef("--plot %s: %v", o.plot, err)
		}
	}
	return o, nil
}

// csvPath is the CSV file of --data, or "".
func (o *calibrateFlags) csvPath() string {
	p, _ := strings.CutPrefix(o.data, "csv:")
	if p == o.data {
		return ""
	}
	return p
}

// forTask checks the options against the model's task and fills in the default score.
func (o *calibrateFlags) forTask(task runtime.Task) error {
	if task == runtime.Regression {
		switch {
		case o.on == "":
			o.on = calibrate.OnEpistemicStd
		case o.on != calibrate.OnEpistemicStd:
			return usagef("--on %s is for classifiers; --model %s is a regression model (--on epistemic_std)", o.on, o.model)
		}
		if o.tolerance == 0 {
			return usagef("--model %s is a regression model: give --tolerance T, the distance from a target beyond which a prediction counts as an error", o.model)
		}
		if o.csvPath() == "" {
			return usagef("--model %s is a regression model: --data must be csv:PATH with real-valued targets, not %s", o.model, o.data)
		}
		return nil
	}
	switch {
	case o.on == "":
		o.on = calibrate.OnBoth
	case o.on == calibrate.OnEpistemicStd:
		return usagef("--on epistemic_std is for regression models; --model %s is a classifier", o.model)
	}
	if o.tolerance != 0 {
		return usagef("--tolerance is for regression models; --model %s is a classifier", o.model)
	}
	return nil
}

// loadData reads the labelled data (real-valued targets when regression) and a description of
// it for the policy's record.
func (o *calibrateFlags) loadData(regression bool) (*data.Dataset, string, error) {
	var d *data.Dataset
	var what string
	if p := o.csvPath(); p != "" {
		var err error
		if d, err = data.ReadCSVFile(p, data.CSVOptions{Target: o.csvTarget, Regression: regression}); err != nil {
			return nil, "", fmt.Errorf("--data %s: %w", o.data, err)
		}
		what = "csv:" + p
		if n := len(what) - 3900; n > 0 {
			// The policy records at most 4096 bytes of it (runtime.Policy.Validate): keep the
			// end of a long path, where the file's name is.
			for n < len(what) && !utf8.RuneStart(what[n]) {
				n++
			}
			what = "csv:…" + what[n:]
		}
	} else {
		dir := o.dataDir
		if dir == "" {
			dir = data.DefaultFashionMNISTDir
		}
		var err error
		if d, err = data.FashionMNISTHead(dir, "test", o.limit); err != nil {
			return nil, "", fmt.Errorf("--data fmnist (--data-dir %s): %w", dir, err)
		}
		what = "fashion-mnist test set"
		if o.limit > 0 && o.limit <= d.N && d.N < 10000 { // FashionMNISTHead read only the first
			what += fmt.Sprintf(", first %d", d.N)
		}
	}
	if o.limit > 0 && o.limit < d.N {
		d = d.Head(o.limit)
		what += fmt.Sprintf(", first %d", o.limit)
	}
	return d, what, nil
}

func runCalibrate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	o, err := parseCalibrateFlags(args, stdout)
	if err != nil {
		return err
	}
	inputs := []string{o.model, o.csvPath()}
	if o.data == "fmnist" {
		inputs = append(inputs, data.FashionMNISTFiles(o.dataDir)...)
	}
	if err := outfile.Check("--out", o.out, inputs...); err != nil {
		return err
	}
	if o.plot != "" {
		if err := outfile.Check("--plot", o.plot, append(inputs, o.out)...); err != nil {
			return err
		}
		if filepath.Clean(o.plot) == filepath.Clean(o.out) {
			return usagef("--plot and --out are the same file %s", o.out)
		}
		outfile.Watch(ctx, filepath.Dir(o.plot))
	}
	f, err := format.Open(o.model)
	if err != nil {
		return fmt.Errorf("--model %s: %w", o.model, err)
	}
	defer f.Close()
	m, err := runtime.FromFile(f)
	if err != nil {
		return fmt.Errorf("--model %s: %w", o.model, err)
	}
	if err := o.forTask(m.Task()); err != nil {
		return err
	}
	// The K the runtime predicts with by default (the model's policy's, else one per member of an
	// ensemble, …; one for a deterministic model), which the policy then records.
	samples := m.PredictorSamples(runtime.Options{Samples: o.samples})
	d, what, err := o.loadData(m.Task() == runtime.Regression)
	if err != nil {
		return err
	}
	var names []string
	if pre := m.Preprocessing(); pre != nil {
		names = pre.ClassNames
	}
	if err := d.MatchClassNames(names); err != nil {
		return fmt.Errorf("--data %s: %w", o.data, err)
	}
	switch {
	case m.Task() == runtime.Regression && d.Outputs != m.OutputSize():
		return fmt.Errorf("--data %s has %d target(s) per input; the model has %d outputs", o.data, d.Outputs, m.OutputSize())
	case d.Regression() && m.Task() != runtime.Regression:
		return fmt.Errorf("--data %s has real-valued targets; calibrate needs class labels", o.data)
	}
	for i, y := range d.Labels {
		if y < 0 || y >= m.OutputSize() {
			return fmt.Errorf("--data %s: input %d has label %d; the model has %d classes", o.data, i, y, m.OutputSize())
		}
	}
	rep, err := calibrateModel(ctx, m, d, o, samples)
	if err != nil {
		return err
	}
	pol := rep.report.Policy(samples, what)
	// The draws the thresholds were fitted with: predict and serve use them by default.
	seed := o.seed
	pol.Strategy, pol.Seed = o.strategy.String(), &seed
	if err := pol.Validate(m.Task()); err != nil {
		return fmt.Errorf("calibrate: the fitted policy is invalid: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: write nothing
	}
	// Both outputs are staged, then committed together: the model first, then the plot, so that
	// a failed or interrupted run never leaves a new plot beside the old model.
	st, err := writeWithPolicy(ctx, f, o.model, o.out, pol)
	if err != nil {
		return err
	}
	defer st.Discard() // a no-op once committed
	var plots []*outfile.Staged
	if o.plot != "" {
		pst, err := stagePlot(ctx, "--plot", o.plot, func(p string) error { return plotCalibration(p, rep) })
		if err != nil {
			return err
		}
		defer pst.Discard()
		plots = append(plots, pst)
	}
	if err := st.Commit(ctx); err != nil {
		return err
	}
	if err := commitPlots(context.WithoutCancel(ctx), plots); err != nil {
		return err
	}
	return printCalibration(stdout, o, what, samples, rep)
}

// calibration is calibrate's result: the report and the held-out risk–coverage curve of each
// score (a classifier: confidence and mutual information; a regression model: the epistemic
// standard deviation).
type calibration struct {
	report            *calibrate.Report
	curves            []scoreCurve
	n, fitN, holdoutN int
	// Regression: the root-mean-square error over the outputs of the inputs the policy accepts
	// on each part.
	regression        bool
	fitRMSE, holdRMSE float64
}

// scoreCurve is the held-out risk–coverage curve of one score. For a regression model sqSum[a]
// is the squared error (summed over the outputs) of the a held-out inputs of smallest epistemic
// standard deviation: a point accepting a inputs accepts those (ties go together).
type scoreCurve struct {
	score   calibrate.On
	pts     []calibrate.Point
	sqSum   []float64
	outputs int
}

// rmse is the root-mean-square error of the inputs point p of a regression curve accepts.
func (cv scoreCurve) rmse(p calibrate.Point) float64 {
	return rmse(cv.sqSum[p.Accepted], p.Accepted, cv.outputs)
}

// calibrateModel predicts every input of d and runs calibrate.Calibrate on the records: for a
// classifier, confidence, mutual information and whether the class is the label; for a
// regression model, the square root of the largest epistemic variance over the outputs (what
// runtime.Policy.Decide compares with max_epistemic_std) and whether every output is within
// --tolerance of its target.
func calibrateModel(ctx context.Context, m *runtime.Model, d *data.Dataset, o *calibrateFlags, samples int) (*calibration, error) {
	preds, err := eval.Predict(m, d, runtime.Options{Samples: samples, Seed: o.seed, Strategy: o.strategy, MaxBatch: 100}, calibrateWorkers)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	regression := m.Task() == runtime.Regression
	records := make([]calibrate.Record, d.N)
	var sqErr []float64 // regression: per input, the squared error summed over the outputs
	if regression {
		sqErr = make([]float64, d.N)
	}
	for i := range records {
		if !regression {
			records[i] = calibrate.Record{Confidence: preds.Confidence[i], MutualInfo: preds.MutualInfo[i], Correct: preds.Class[i] == d.Labels[i]}
			continue
		}
		o1 := preds.Outputs
		top, ok := float32(0), true
		for j := i * o1; j < (i+1)*o1; j++ {
			top = max(top, preds.EpistemicVar[j])
			e := float64(preds.Mean[j]) - float64(d.Targets[j])
			sqErr[i] += e * e
			ok = ok && math.Abs(e) <= o.tolerance
		}
		records[i] = calibrate.Record{EpistemicStd: math.Sqrt(float64(top)), Correct: ok}
	}
	rep, err := calibrate.Calibrate(records, calibrate.Options{Target: o.target, On: o.on, Grid: o.grid, Split: o.split, Seed: o.seed, Tolerance: o.tolerance})
	if err != nil {
		return nil, err
	}
	fi, hi, err := calibrate.Split(len(records), o.split, o.seed)
	if err != nil {
		return nil, err
	}
	held := make([]calibrate.Record, len(hi))
	for i, k := range hi {
		held[i] = records[k]
	}
	c := &calibration{report: rep, n: len(records), fitN: rep.Fit.N, holdoutN: rep.Holdout.N, regression: regression}
	scores := []calibrate.On{calibrate.OnConfidence, calibrate.OnMutualInfo}
	if regression {
		scores = []calibrate.On{calibrate.OnEpistemicStd}
	}
	for _, sc := range scores {
		pts, err := calibrate.Curve(held, sc)
		if err != nil {
			return nil, err
		}
		c.curves = append(c.curves, scoreCurve{score: sc, pts: pts})
	}
	if regression {
		c.curves[0].sqSum, c.curves[0].outputs = sortedSquaredErrors(held, hi, sqErr), preds.Outputs
		c.fitRMSE = acceptedRMSE(rep.Rule, records, fi, sqErr, preds.Outputs)
		c.holdRMSE = acceptedRMSE(rep.Rule, records, hi, sqErr, preds.Outputs)
	}
	return c, nil
}

// sortedSquaredErrors returns scoreCurve.sqSum of the held-out records (record i is input hi[i]).
func sortedSquaredErrors(held []calibrate.Record, hi []int, sqErr []float64) []float64 {
	order := make([]int, len(held))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return held[order[a]].EpistemicStd < held[order[b]].EpistemicStd })
	sum := make([]float64, len(held)+1)
	for r, i := range order {
		sum[r+1] = sum[r] + sqErr[hi[i]]
	}
	return sum
}

// acceptedRMSE is the root-mean-square error of the inputs idx that the rule accepts.
func acceptedRMSE(r calibrate.Rule, records []calibrate.Record, idx []int, sqErr []float64, outputs int) float64 {
	sum, n := 0.0, 0
	for _, k := range idx {
		if r.Accept(records[k]) {
			sum += sqErr[k]
			n++
		}
	}
	return rmse(sum, n, outputs)
}

// fmtRMSE prints an RMSE, "-" for the NaN of no accepted input.
func fmtRMSE(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4g", v)
}

// rmse is √(sum / (n·outputs)), NaN when nothing is accepted.
func rmse(sum float64, n, outputs int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(sum / float64(n*outputs))
}

// writeWithPolicy stages out: every section of f (the file at path in) except the policy copied
// verbatim, then the policy. It checks that the staged file loads with the policy and returns
// it for the caller to commit or discard.
func writeWithPolicy(ctx context.Context, f *format.File, in, out string, pol *runtime.Policy) (*outfile.Staged, error) {
	b, err := json.Marshal(pol)
	if err != nil {
		return nil, fmt.Errorf("encoding the policy: %w", err)
	}
	w, err := withPolicyBlob(f, b)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", in, err)
	}
	st, err := outfile.Stage(ctx, out)
	if err != nil {
		return nil, err
	}
	if err := w.WriteFile(st.Path(), format.WriteOptions{Sources: []string{in}}); err != nil {
		st.Discard()
		return nil, fmt.Errorf("--out %s: %w", out, err)
	}
	check, err := runtime.Load(st.Path())
	if err == nil {
		if check.Policy() == nil {
			err = errors.New("the policy section is missing")
		}
		check.Close()
	}
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("--out %s: the written file does not load: %w", out, err)
	}
	return st, nil
}

// scoreName names a score in the plot's legend.
var scoreName = map[calibrate.On]string{
	calibrate.OnConfidence:   "confidence",
	calibrate.OnMutualInfo:   "mutual information",
	calibrate.OnEpistemicStd: "epistemic std",
}

// plotCalibration draws the held-out risk–coverage curves with the fitted rule's fit and
// held-out results marked.
func plotCalibration(path string, c *calibration) error {
	series := func(name string, pts []calibrate.Point) plot.Series {
		s := plot.Series{Name: name}
		for _, p := range pts {
			s.X = append(s.X, p.Coverage)
			s.Y = append(s.Y, p.Risk)
		}
		return s
	}
	r := c.report
	marks := []plot.Mark{
		{Name: fmt.Sprintf("policy on fit part (%s)", r.Options.On), X: r.Fit.Coverage, Y: r.Fit.Risk},
		{Name: "policy on held-out part", X: r.Holdout.Coverage, Y: r.Holdout.Risk},
	}
	title := fmt.Sprintf("risk–coverage, held-out part (n = %d); target %s", c.holdoutN, r.Options.Target)
	var ss []plot.Series
	for _, cv := range c.curves {
		ss = append(ss, series("by "+scoreName[cv.score], cv.pts))
	}
	ylabel := "risk (error rate among accepted)"
	if c.regression {
		ylabel = fmt.Sprintf("risk (share of accepted off by > %g)", r.Options.Tolerance)
	}
	return plot.LinesWithMarks(path, title, "coverage", ylabel, ss, marks, 6, 4)
}

func printCalibration(w io.Writer, o *calibrateFlags, what string, samples int, c *calibration) error {
	r := c.report
	fmt.Fprintf(w, "%s on %s: %d inputs, %d samples each; split %g (seed %d): %d to fit, %d held out\n\n",
		o.model, what, c.n, samples, o.split, o.seed, c.fitN, c.holdoutN)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if c.regression {
		fmt.Fprintf(w, "Risk–coverage on the held-out part (risk: share of accepted inputs with an output off by more than %g):\n", o.tolerance)
		fmt.Fprintln(tw, "COVERAGE\tMAX EPISTEMIC STD\tRISK\tRMSE")
		cv := c.curves[0]
		for _, cov := range calibrateCoverages {
			p := calibrate.AtCoverage(cv.pts, cov)
			fmt.Fprintf(tw, "≥ %.0f%%\t%.4g\t%.2f%%\t%s\n", 100*cov, p.Threshold, 100*p.Risk, fmtRMSE(cv.rmse(p)))
		}
	} else {
		fmt.Fprintf(w, "Risk–coverage on the held-out part (risk: error rate among accepted inputs):\n")
		fmt.Fprintln(tw, "COVERAGE\tMIN CONFIDENCE\tRISK\tMAX MUTUAL INFO\tRISK")
		for _, cov := range calibrateCoverages {
			pc, pm := calibrate.AtCoverage(c.curves[0].pts, cov), calibrate.AtCoverage(c.curves[1].pts, cov)
			fmt.Fprintf(tw, "≥ %.0f%%\t%.4f\t%.2f%%\t%.4g\t%.2f%%\n", 100*cov, pc.Threshold, 100*pc.Risk, pm.Threshold, 100*pm.Risk)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTarget %s on %s: ", r.Options.Target, r.Options.On)
	var th []string
	// The thresholds as the policy holds them: Rule.Policy leaves out those every input passes.
	pol := r.Rule.Policy(0)
	threshold := func(name string, v *float64) {
		if v == nil {
			th = append(th, name+" none")
		} else {
			th = append(th, fmt.Sprintf("%s %.6g", name, *v))
		}
	}
	switch r.Options.On {
	case calibrate.OnEpistemicStd:
		threshold("max_epistemic_std", pol.MaxEpistemicStd)
	case calibrate.OnConfidence:
		threshold("min_confidence", pol.MinConfidence)
	case calibrate.OnMutualInfo:
		threshold("max_mutual_info", pol.MaxMutualInfo)
	default:
		threshold("min_confidence", pol.MinConfidence)
		threshold("max_mutual_info", pol.MaxMutualInfo)
	}
	fmt.Fprintln(w, strings.Join(th, ", "))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head, rm := "PART\tN\tACCEPTED\tCOVERAGE\tERRORS\tRISK", []float64{c.fitRMSE, c.holdRMSE}
	if c.regression {
		head += "\tRMSE"
	}
	fmt.Fprintln(tw, head)
	for i, p := range []struct {
		name string
		r    calibrate.Result
	}{{"fit", r.Fit}, {"held out", r.Holdout}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f%%\t%d\t%.2f%%", p.name, p.r.N, p.r.Accepted, 100*p.r.Coverage, p.r.Errors, 100*p.r.Risk)
		if c.regression {
			fmt.Fprintf(tw, "\t%s", fmtRMSE(rm[i]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "held-out risk ≤ %.2f%% with 95%% confidence (Clopper–Pearson, %d errors in %d accepted)\n",
		100*r.HoldoutRiskUpper, r.Holdout.Errors, r.Holdout.Accepted)
	// A risk target is met on the fit part only, a coverage target on new data on average (one
	// score): say when the held-out part misses it.
	switch t := r.Options.Target; {
	case t.Kind == calibrate.TargetRisk && r.Holdout.Risk > t.Value:
		fmt.Fprintf(w, "note: the held-out risk, %.2f%%, is above the target %.2f%%: the target holds on the fit part only (about half the time on new data); a lower --target-risk keeps new data below it (docs/CALIBRATE.md)\n",
			100*r.Holdout.Risk, 100*t.Value)
	case t.Kind == calibrate.TargetCoverage && r.Holdout.Coverage < t.Value && r.Options.On == calibrate.OnBoth:
		// Split conformal's guarantee is for a rule on one score; one on both can refuse a new
		// input on either (docs/CALIBRATE.md).
		fmt.Fprintf(w, "note: the held-out coverage, %.2f%%, is below the target %.2f%%: the target holds on new data on average for a rule on one score (split conformal), not for --on both (docs/CALIBRATE.md)\n",
			100*r.Holdout.Coverage, 100*t.Value)
	case t.Kind == calibrate.TargetCoverage && r.Holdout.Coverage < t.Value:
		fmt.Fprintf(w, "note: the held-out coverage, %.2f%%, is below the target %.2f%%: the target holds on new data on average (split conformal), not in every sample\n",
			100*r.Holdout.Coverage, 100*t.Value)
	}
	if r.Fit.N < minCalibrationInputs {
		fmt.Fprintf(w, "note: the fit part has %d inputs: thresholds from so few move with every input (%d or more: --limit, --split)\n", r.Fit.N, minCalibrationInputs)
	}
	fmt.Fprintf(w, "\nwrote %s with the policy", o.out)
	if o.plot != "" {
		fmt.Fprintf(w, " and %s", o.plot)
	}
	fmt.Fprintln(w)
	return nil
}
