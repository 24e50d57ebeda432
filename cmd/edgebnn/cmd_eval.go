//go:build !device

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/plot"
	"math"
	"os"
)

const evalUsage = `Usage: edgebnn eval [flags] MODEL.ebnn

Evaluates a model file (a converted model or a training checkpoint) on a
labelled data set through the runtime.

Classification: accuracy, NLL, ECE (15 bins), Brier score, precision, recall,
F1 and AUROC of the predictive probabilities (two classes: of class 1; more:
macro averages, AUROC one-vs-rest), selective prediction (accuracy, F1 and
AUROC on the 90…50 % most certain inputs) and, with an OOD set (held-out
classes, or --ood: scikit-learn's digits or pixel-shuffled test images),
out-of-distribution detection (AUROC, AUPR), each by four uncertainty scores:
1 − max probability, entropy, mutual information and model disagreement MD²
(the variance of the class probabilities over the samples, summed over the
classes; paper 000 Eq. 60).

Regression: RMSE of the mean prediction (paper 000 Eq. 58), the moment-matched
Gaussian NLL (nll: one Gaussian with the samples' variance plus the noise
variance) and the sampled mixture NLL (mixture_nll, paper 000 Eq. 57:
−log (1/L) Σ_l N(y; f(x; θ_l), noise variance), by log-sum-exp) with L the
--samples count (the paper uses L = 100: --samples 100).

--json prints every metric with a "definitions" section saying what each is.
For a training checkpoint the data settings default to the ones it was
trained with. An Ensemble-W model (an ensemble_w checkpoint or its converted
file) predicts with one sample per member unless --samples says otherwise:
sample s runs member s mod K.

--psis (training checkpoints of ffg_w, fcg_w, bernstein_last, vifa, fa_em,
fa_sga and swag, on MLPs) also checks the posterior q against the exact
posterior of the model it was trained for: it draws --psis-draws parameter
vectors θ_s ~ q and fits a generalized Pareto distribution to the tail of the
importance ratios p(θ_s) p(D | θ_s) / q(θ_s) over the checkpoint's training set
(Pareto-smoothed importance sampling, Yao et al. 2018). k̂ < 0.5: q is close to
the posterior; 0.5–0.7: usable; > 0.7: q misses the posterior's tails. It also
prints the ELBO at temperature 1 and the importance-sampling estimate of the
log evidence log p(D). Layers without a posterior are held fixed. Cost: draws ×
training examples × parameters multiply-adds, refused above 2e12.`

func runEval(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("eval")
	dataFlag := fs.String("data", "", "data set: fmnist, fmnist-c:CORRUPTION:SEVERITY, csv:PATH, toy1d, toy1d:N (N points) or moons (default: the checkpoint's, else fmnist)")
	dataDir := fs.String("data-dir", "", "directory of the Fashion-MNIST IDX files")
	classes := fs.String("classes", "", "the classes the model was trained on, e.g. 0-4 (the others are OOD data)")
	oodFlag := fs.String("ood", "", "out-of-distribution set: classes (held-out classes, with --classes), digits (scikit-learn's 8×8 digits upsampled to 28×28), digits:PATH or fmnist-shuffled (the test images with their pixels permuted; default: the checkpoint's, else classes with --classes)")
	testLimit := fs.Int("test-limit", -1, "evaluate only the first N test examples (0: all)")
	samples := fs.Int("samples", 0, "Monte Carlo samples per prediction, also L of the regression mixture NLL (default: the K the model's policy was fitted with, else one per member of an ensemble, else the checkpoint's test_samples, else 32)")
	seed := fs.Uint64("seed", 42, "seed of the Monte Carlo draws (default: the seed a calibrated model's policy records, else 42;\na CSV's test split and generated data keep the checkpoint's seed)")
	strategy := fs.String("strategy", "auto", "sampling strategy: auto, weight or local (auto: a calibrated model's policy's, if it records one)")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	plotPrefix := fs.String("plots", "", "write <prefix>.reliability.png and <prefix>.selective.png")
	psis := fs.Bool("psis", false, "also compute the PSIS k̂ of a training checkpoint's posterior against its log joint")
	psisDraws := fs.Int("psis-draws", train.DefaultPSISDraws, "draws from q for --psis")
	pos, err := parseInterspersed(fs, evalUsage, args, stdout) // flags before or after the file
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("need exactly one model file, got %d arguments besides the flags", len(pos))
	}
	path := pos[0]
	st, stErr := train.ReadState(path)
	var fe *format.Error // not a model file at all: loading it below says why, after the output checks
	if stErr != nil && !errors.Is(stErr, train.ErrNoState) && !errors.As(stErr, &fe) {
		return stErr // a checkpoint whose training state is bad, not a model without one
	}
	cfg := train.DefaultConfig()
	if stErr == nil {
		cfg = st.Config
	}
	if *samples < 0 || *samples > train.MaxSamples {
		return usagef("--samples %d outside [1, %d]", *samples, train.MaxSamples)
	}
	if *testLimit < -1 {
		return usagef("--test-limit %d is negative", *testLimit)
	}
	if *psis && (*psisDraws < train.MinPSISDraws || *psisDraws > train.MaxPSISDraws) {
		return usagef("--psis-draws %d outside [%d, %d]", *psisDraws, train.MinPSISDraws, train.MaxPSISDraws)
	}
	ckptData := cfg.Data
	if *dataFlag != "" {
		cfg.Data = *dataFlag
	}
	if strings.HasPrefix(cfg.Data, "csv:") && (stErr != nil || cfg.Data != ckptData) {
		// Not the file the model's test split was taken from: every row is test data.
		cfg.EvalAllRows = true
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if *classes != "" {
		cfg.Classes = *classes
	}
	if *oodFlag != "" {
		cfg.OOD = *oodFlag
	}
	if *testLimit >= 0 {
		cfg.TestLimit = *testLimit
	}
	if *samples > 0 {
		cfg.TestSamples = *samples
	} else if stErr != nil {
		cfg.TestSamples = 32
	}
	// cfg.Seed stays the checkpoint's: with another seed a CSV's "test" split would hold
	// training rows. --seed seeds the Monte Carlo draws only.
	var plotPaths []string
	if *plotPrefix != "" {
		if strings.HasSuffix(*plotPrefix, "/") || strings.HasSuffix(*plotPrefix, string(filepath.Separator)) || isDir(*plotPrefix) {
			return usagef("--plots %s is a directory: give a file name prefix (%s), which gets .reliability.png and .selective.png",
				*plotPrefix, filepath.Join(*plotPrefix, "eval"))
		}
		plotPaths = []string{*plotPrefix + ".reliability.png", *plotPrefix + ".selective.png"}
		inputs := evalInputs(path, cfg)
		for _, p := range plotPaths {
			if err := outfile.Check("--plots", p, inputs...); err != nil {
				return err
			}
			outfile.Watch(ctx, filepath.Dir(p))
		}
	}
	strat, err := runtime.ParseStrategy(*strategy)
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	m, err := runtime.Load(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if *plotPrefix != "" && m.Task() == runtime.Regression {
		// They had been left out silently.
		return usagef("--plots draws a classifier's reliability diagram and selective-prediction curve; %s is a regression model", path)
	}
	if *psis {
		// The file is a model; PSIS needs the training state of a checkpoint.
		if stErr != nil {
			return fmt.Errorf("--psis needs a training checkpoint (the log joint is its prior, likelihood and training data): %w", stErr)
		}
		if err := train.CheckPSIS(cfg.Posterior); err != nil {
			return fmt.Errorf("--psis: %s: %w", path, err)
		}
	}
	if stErr != nil {
		// A converted model: describe the data from the model itself.
		if m.Task() == runtime.Regression {
			cfg.Task = "regression"
		}
	}
	if m.Members() > 1 && !m.Mixture() && *samples <= 0 {
		// Ensemble-W: one sample per member, the deep-ensemble predictive.
		cfg.TestSamples = m.Members()
	}
	if M := m.Members(); m.Mixture() && *samples <= 0 {
		// A mixture of posteriors: as many samples from every member.
		cfg.TestSamples = (max(cfg.TestSamples, M) + M - 1) / M * M
	}
	if pol := m.Policy(); pol != nil && pol.Samples > 0 && *samples <= 0 {
		// A calibrated model: the K its policy's thresholds were fitted with, as predict and
		// serve use by default, so that the selective-prediction numbers are the policy's.
		cfg.TestSamples = pol.Samples
	}
	if err := cfg.ValidateData(); err != nil { // --data, --ood, --classes out of their domain
		return &usageError{msg: err.Error()}
	}
	test, ood, err := train.LoadEvalData(cfg)
	if err != nil {
		return err
	}
	if err := checkEvalClasses(cfg.Classes, m); err != nil {
		return err
	}
	if test != nil {
		// A CSV's string labels are numbered by the names in that file: map them to the model's.
		var names []string
		if pre := m.Preprocessing(); pre != nil {
			names = pre.ClassNames
		}
		if err := test.MatchClassNames(names); err != nil {
			return err
		}
	}
	if *psis && (test == nil || test.N == 0) {
		// A run without a test set (test_fraction 0): the PSIS diagnostic needs only the training set.
		rep, err := runPSIS(ctx, path, *dataFlag, *dataDir, *psisDraws, *seed)
		if err != nil {
			return err
		}
		if *jsonOut {
			return writeJSON(stdout, struct {
				PSIS *train.PSISReport `json:"psis"`
			}{rep})
		}
		fmt.Fprintf(stdout, "%s: no test set; %s\n", path, rep.Line())
		fmt.Fprintf(stdout, "  likelihood %s; prior %s; %.1f s\n", rep.Likelihood, rep.Prior, rep.Seconds)
		return nil
	}
	// PSIS first: its checks (the resumed checkpoint, the cost bound) fail before the evaluation's
	// work, and nothing is written before every part of the command has succeeded.
	var psisRep *train.PSISReport
	if *psis {
		if psisRep, err = runPSIS(ctx, path, *dataFlag, *dataDir, *psisDraws, *seed); err != nil {
			return err
		}
	}
	// A calibrated model: its policy's draws (seed and strategy) unless --seed is given, as
	// predict and serve, so that the selective-prediction numbers are the device's.
	opt := runtime.Options{Samples: cfg.TestSamples, Seed: *seed, PolicySeed: !flagSet(fs, "seed"), Strategy: strat, MaxBatch: 100}
	report, err := eval.Evaluate(m, test, ood, opt)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: write no plots
	}
	var plots []*outfile.Staged // rendered beside their paths, committed when the report is out
	defer func() {
		for _, s := range plots {
			s.Discard() // a no-op for a committed plot
		}
	}()
	if *plotPrefix != "" && report.Classification != nil {
		if plots, err = stageEvalPlots(ctx, plotPaths, report); err != nil {
			return err
		}
	}
	if err := printEval(stdout, path, cfg.TestSamples, *jsonOut, report, psisRep); err != nil {
		return err
	}
	return commitPlots(ctx, plots)
}

// printEval writes eval's report (and the PSIS diagnostic, when psisRep is not nil) to stdout as
// text or, with asJSON, as JSON.
func printEval(stdout io.Writer, path string, samples int, asJSON bool, report *eval.Report, psisRep *train.PSISReport) error {
	if asJSON {
		report.Describe()
		if psisRep != nil {
			report.Definitions["psis"] = "Pareto-smoothed importance sampling of the posterior against the log joint of the training set: " +
				"khat is the generalized-Pareto shape of the tail of the ratios p(θ)p(D|θ)/q(θ), θ ~ q (< 0.5 good, 0.5–0.7 ok, > 0.7 unreliable; " +
				"null when every ratio is equal); elbo the mean log ratio; log_evidence_is the log of the mean ratio; is_ess (Σr)²/Σr²"
			return writeJSON(stdout, struct {
				*eval.Report
				PSIS *train.PSISReport `json:"psis"`
			}{report, psisRep})
		}
		return writeJSON(stdout, report)
	}
	fmt.Fprintf(stdout, "%s (%d samples): %s\n", path, samples, reportLine(report))
	fmt.Fprint(stdout, evalText(report))
	if psisRep != nil {
		fmt.Fprintln(stdout, psisRep.Line())
		fmt.Fprintf(stdout, "  likelihood %s; prior %s; %.1f s\n", psisRep.Likelihood, psisRep.Prior, psisRep.Seconds)
	}
	return nil
}

// evalInputs are the files eval reads, which its outputs must not be: the model at path, the data (a CSV
// file or the Fashion-MNIST IDX files), the OOD set's file (digits, digits:PATH or data:PATH) and
// fsvi's context points, which --psis's resumed checkpoint may load.
func evalInputs(path string, cfg train.Config) []string {
	return append([]string{path}, dataInputs(cfg)...)
}

// stageEvalPlots renders the reliability diagram and the selective-prediction curve of report
// into staging files beside paths[0] and paths[1], which commitPlots then moves into place. On
// an error nothing is left staged.
func stageEvalPlots(ctx context.Context, paths []string, report *eval.Report) ([]*outfile.Staged, error) {
	bins := make([]plot.Bin, len(report.Reliability))
	for i, b := range report.Reliability {
		bins[i] = plot.Bin{Lo: b.Lo, Hi: b.Hi, Count: b.Count, Confidence: b.Confidence, Accuracy: b.Accuracy}
	}
	var ss []plot.Series
	for _, s := range eval.Scores {
		ss = append(ss, plot.Series{Name: "by " + s, X: eval.SelectiveFractions, Y: report.Selective[s]})
	}
	draw := []func(string) error{
		func(p string) error {
			return plot.Reliability(p, fmt.Sprintf("reliability (ECE %.4f)", report.Classification.ECE), bins)
		},
		func(p string) error {
			return plot.Lines(p, "selective prediction", "fraction retained", "accuracy", ss, 6, 4)
		},
	}
	var staged []*outfile.Staged
	for i, p := range paths {
		st, err := stagePlot(ctx, "--plots", p, draw[i])
		if err != nil {
			for _, s := range staged {
				s.Discard()
			}
			return nil, err
		}
		staged = append(staged, st)
	}
	return staged, nil
}

// stagePlot renders a plot with draw into a staging file beside path (flag names the option
// that set path, for the errors); the caller commits or discards it.
func stagePlot(ctx context.Context, flag, path string, draw func(string) error) (*outfile.Staged, error) {
	st, err := outfile.Stage(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := draw(st.Path()); err != nil {
		st.Discard()
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return st, nil
}

// commitPlots moves staged plots into place, in order. Once the first is in place the others
// follow even if ctx is cancelled (an abandoned Tracker still stops them), so that an
// interruption does not leave a new plot beside an old one of the same run.
func commitPlots(ctx context.Context, plots []*outfile.Staged) error {
	for i, s := range plots {
		c := ctx
		if i > 0 {
			c = context.WithoutCancel(ctx)
		}
		if err := s.Commit(c); err != nil {
			for _, r := range plots[i+1:] {
				r.Discard()
			}
			return err
		}
	}
	return nil
}

// runPSIS resumes the training checkpoint at path (with the data flags, when given) and runs
// PSIS over its training set.
func runPSIS(ctx context.Context, path, dataFlag, dataDir string, draws int, seed uint64) (*train.PSISReport, error) {
	tr, err := train.Resume(path, func(c *train.Config) error {
		if dataFlag != "" {
			c.Data = dataFlag
		}
		if dataDir != "" {
			c.DataDir = dataDir
		}
		return nil
	})
	if errors.Is(err, train.ErrPosteriorMismatch) {
		// The learner state PSIS would diagnose is not the posterior of the model tensors
		// evaluated above: the report would mix two posteriors.
		return nil, fmt.Errorf("--psis: %w", err)
	}
	if err != nil {
		// The model file train writes beside its checkpoint (NAME.model.ckpt) has a state but
		// not the prior buffers a resumed run needs.
		return nil, fmt.Errorf("--psis needs the run's training checkpoint (the --out of train, not its .model file): %w", err)
	}
	rep, err := tr.PSIS(ctx, train.PSISOptions{Draws: draws, Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// evalText is the text report's lines after the summary line: for classification the Table 2
// metrics, selective accuracy, F1 and AUROC and OOD detection by every uncertainty score; for
// regression which NLL is which, and the mixture NLL.
func evalText(r *eval.Report) string {
	var b strings.Builder
	if c := r.Classification; c != nil {
		avg := "macro averages over classes, AUROC one-vs-rest"
		if c.Averaging == eval.AverageBinary {
			avg = "of class 1, AUROC of p(y=1)"
		}
		fmt.Fprintf(&b, "precision %.4f  recall %.4f  F1 %.4f  AUROC %s  (%s)\n", c.Precision, c.Recall, c.F1, num4(float64(c.AUROC)), avg)
		fmt.Fprintf(&b, "mean uncertainty: entropy %s  mi %s  md2 %s\n", optNum(r.MeanEntropy), optNum(r.MeanMI), optNum(r.MeanMD2))
		for _, m := range []struct {
			name string
			pct  bool
			vals func(s string) []float64
		}{
			{"accuracy", true, func(s string) []float64 { return r.Selective[s] }},
			{"F1", false, func(s string) []float64 { return r.SelectiveF1[s] }},
			{"AUROC", false, func(s string) []float64 {
				v := make([]float64, len(r.SelectiveAUROC[s]))
				for i, x := range r.SelectiveAUROC[s] {
					v[i] = float64(x)
				}
				return v
			}},
		} {
			for _, s := range eval.Scores {
				vals := m.vals(s)
				if len(vals) != len(eval.SelectiveFractions) {
					continue
				}
				fmt.Fprintf(&b, "selective %-8s by %-8s", m.name, s)
				for i, f := range eval.SelectiveFractions {
					if m.pct {
						fmt.Fprintf(&b, "  %2.0f%%: %.2f%%", 100*f, 100*vals[i])
					} else {
						fmt.Fprintf(&b, "  %2.0f%%: %s", 100*f, num4(vals[i]))
					}
				}
				b.WriteString("\n")
			}
		}
		for _, s := range eval.Scores {
			if o, ok := r.OOD[s]; ok {
				fmt.Fprintf(&b, "OOD by %-8s AUROC %s  AUPR %s\n", s, num4(o.AUROC), num4(o.AUPR))
			}
		}
		if r.OOD != nil {
			fmt.Fprintf(&b, "OOD mean uncertainty: mi %s  md2 %s\n", optNum(r.OODMeanMI), optNum(r.OODMeanMD2))
		}
	}
	if g := r.Regression; g != nil {
		b.WriteString("rmse: of the mean prediction (Eq. 58); nll: moment-matched Gaussian (sample variance + noise variance)\n")
		if g.MixtureNLL != nil {
			fmt.Fprintf(&b, "mixture nll %.4f  (Eq. 57: −log (1/L) Σ_l N(y; f(x; θ_l), noise variance), L = %d)\n", *g.MixtureNLL, g.MixtureSamples)
		}
	}
	return b.String()
}

// checkEvalClasses refuses a class subset whose renumbering (the listed classes become labels
// 0, 1, … in the order given, as for a model trained on them) does not fit the model: with
// another number of outputs the labels no longer mean the model's classes — a 10-way model on
// "5-9" was scored against labels 0–4 — unless the subset keeps every label's number (0, 1, …,
// k−1 in order).
func checkEvalClasses(list string, m *runtime.Model) error {
	if list == "" || m.Task() == runtime.Regression {
		return nil
	}
	classes, err := data.ParseClasses(list)
	if err != nil {
		return usagef("--classes: %v", err)
	}
	if len(classes) == m.OutputSize() {
		return nil
	}
	for i, c := range classes {
		if c != i {
			return fmt.Errorf("--classes %s renumbers the labels 0 to %d, as for a model trained on those %d classes, but the model has %d outputs (a subset of its own classes must be 0, 1, … in order)",
				list, len(classes)-1, len(classes), m.OutputSize())
		}
	}
	return nil
}

// optNum prints an optional report number as %.4g, "-" where it was not computed.
// num4 formats a metric to 4 decimals, or "n/a" where it is undefined (NaN: an AUROC on data of
// one class), as the JSON report's null.
func num4(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.4f", v)
}

func optNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.4g", *v)
}

// isDir reports whether path names an existing directory.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
