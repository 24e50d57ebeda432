// Command medsel runs paper 000 §4.3's evaluation protocol — Table 2 (accuracy, precision,
// recall, F1, AUROC and training time of VIFA against gradient descent) and Tables 3, 12 and 13
// (accuracy, F1 and AUROC of selective prediction on the 90 … 50 % most certain test inputs, by
// predictive entropy and by the model-disagreement score MD², Eq. 60) — on binary tasks this
// machine has, in place of the paper's diabetic-retinopathy images (not available here): by
// default Fashion-MNIST's pullovers against coats (-data fmnist:2,4, 14 000 images, a task about
// as hard as the paper's: 90–91 % accuracy), or the Wisconsin breast-cancer biopsies (-data
// bench/data/breast_cancer_wisconsin.csv, 683 rows, 9 features, written by
// bench/uci/export_breastcancer.R; nearly separable, so its selective tables saturate); an MLP
// in place of the paper's ResNet-18.
//
// Protocol, as §4.3.2 states it unless said here (docs/results/medsel.md lists every difference):
// -seeds random 50/20/30 train/validation/test splits (split s shuffles with PCG(seed, s));
// inputs standardised with the training part's statistics; per split, a deterministic network
// trained on the training part (Adam 10⁻³, -pretrain-epochs) stands in for the pre-trained
// ResNet-18 weights both methods start from; then -search random draws of the prior precision α
// (log-uniform in [0.01, 10]) and the learning rate η (log-uniform in [10⁻⁶, 5·10⁻⁴]), the same
// draws for both methods, each trained -epochs epochs with Adam, minibatches of 16 and gradients
// clipped at norm 10; the draw with the lowest validation NLL is evaluated on the test part with
// S = -samples posterior samples. VIFA: latent dimension K = 1, one learning rate η for c, F and
// log ψ, the two-stage schedule (-stage1 epochs training c alone with F and ψ fixed at small
// values, then F's and ψ's learning rates ramped up from 0 over -ramp epochs), prior N(0, α⁻¹I).
// Gradient descent: Adam on the negative log-likelihood with weight decay α/N (the MAP
// estimate under the same prior). Neither has a learning-rate decay (the paper decays c's, with
// a scheduler it does not name).
//
//	go run ./bench/medsel                 # the tables (about half an hour of one core)
//	go run ./bench/medsel -quick          # their shape in seconds (tests/bench_quick_test.go)
//	go run ./bench/medsel -data bench/data/breast_cancer_wisconsin.csv
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/bench/internal/quickflag"
	"github.com/edgebnn/edgebnn/bench/internal/tabular"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// options are the command's settings.
type options struct {
	data               string
	hidden             string
	seeds, search      int
	seed               uint64
	epochs             int
	stage1, ramp       int
	batch, mcSamples   int
	samples            int
	pretrainEpochs     int
	limit              int
	alphaLo, alphaHi   float64
	lrLo, lrHi         float64
	initLogVar, fScale float64
	work               string
}

// methods are the two arms of paper 000's Table 2, in its column order.
var methods = []string{"vifa", "gd"}

func main() {
	var o options
	flag.StringVar(&o.data, "data", "fmnist:2,4", "the binary task: a CSV file (features, then the 0/1 label in the last column) or fmnist:A,B (Fashion-MNIST's classes A and B, training and test images pooled)")
	flag.StringVar(&o.hidden, "hidden", "50-50", "hidden layer widths of the ReLU MLP")
	flag.IntVar(&o.seeds, "seeds", 5, "random train/validation/test splits, each a seed (paper 000: 5)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the splits, the draws and training")
	flag.IntVar(&o.search, "search", 6, "random-search draws of (α, η) per split (paper 000: 6)")
	flag.IntVar(&o.epochs, "epochs", 10, "training epochs of both methods (paper 000: 10)")
	flag.IntVar(&o.stage1, "stage1", 2, "vifa: epochs training c alone (paper 000: 2)")
	flag.IntVar(&o.ramp, "ramp", 2, "vifa: epochs over which F's and ψ's learning rates rise from 0 (paper 000: not stated)")
	flag.IntVar(&o.batch, "batch", 16, "minibatch size (paper 000: 16)")
	flag.IntVar(&o.mcSamples, "mc-samples", 1, "vifa: parameter samples L per update, each on its own minibatch (paper 000: 12)")
	flag.IntVar(&o.samples, "samples", 100, "posterior samples per prediction, validation and test (paper 000: S = 100)")
	flag.IntVar(&o.pretrainEpochs, "pretrain-epochs", 30, "epochs of the deterministic network both methods start from")
	flag.Float64Var(&o.alphaLo, "alpha-lo", 0.01, "lower end of α's search range")
	flag.Float64Var(&o.alphaHi, "alpha-hi", 10, "upper end of α's search range")
	flag.Float64Var(&o.lrLo, "lr-lo", 1e-6, "lower end of η's search range")
	flag.Float64Var(&o.lrHi, "lr-hi", 5e-4, "upper end of η's search range")
	flag.Float64Var(&o.initLogVar, "init-log-var", 2*math.Log(1e-4), "vifa: initial log ψ (paper 000: F and ψ start below 10⁻⁴ in absolute value; ψ = 10⁻⁸)")
	flag.Float64Var(&o.fScale, "init-factor-scale", 1e-4, "vifa: norm of F's initial column")
	flag.IntVar(&o.limit, "limit", 0, "use only the first N examples of the task (0: all), before the splits are drawn")
	flag.StringVar(&o.work, "work", "", "directory for the checkpoints (default a temporary one, removed)")
	quick := flag.Bool("quick", false, "a short run for the tables' shape: -seeds 2 -search 2 -epochs 3 -stage1 1 -ramp 1 -pretrain-epochs 3 -samples 10 -limit 2000, each unless given")
	flag.Parse()
	if *quick {
		quickflag.Set(map[string]int{"seeds": 2, "search": 2, "epochs": 3, "stage1": 1, "ramp": 1, "pretrain-epochs": 3,
			"samples": 10, "limit": 2000})
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "medsel:", err)
		os.Exit(1)
	}
}

// outcome is one method's result on one split: the test report of the draw chosen on the
// validation part, that draw and its training time.
type outcome struct {
	rep          *eval.Report
	alpha, lr    float64
	trainSeconds float64
}

func (o options) validate() error {
	switch {
	case o.limit < 0:
		return fmt.Errorf("-limit %d must be ≥ 0", o.limit)
	case o.seeds < 1 || o.search < 1 || o.epochs < 1 || o.batch < 1 || o.mcSamples < 1 || o.samples < 1 || o.pretrainEpochs < 1:
		return errors.New("-seeds, -search, -epochs, -batch, -mc-samples, -samples and -pretrain-epochs must be ≥ 1")
	case o.stage1 < 0 || o.ramp < 0 || o.stage1 >= o.epochs:
		return fmt.Errorf("-stage1 %d and -ramp %d must be ≥ 0, and -stage1 below -epochs %d", o.stage1, o.ramp, o.epochs)
	case !(o.alphaLo > 0 && o.alphaHi >= o.alphaLo && o.lrLo > 0 && o.lrHi >= o.lrLo):
		return errors.New("the search ranges need 0 < lo ≤ hi")
	}
	return nil
}

func run(o options, w, log io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	all, err := load(o.data)
	if err != nil {
		return err
	}
	if o.limit > 0 {
		all = all.Head(o.limit)
	}
	if all.Classes != 2 {
		return fmt.Errorf("%s: %d classes, the protocol needs a binary task", o.data, all.Classes)
	}
	sizes, err := tabular.Sizes(all.N, 0.5, 0.2)
	if err != nil {
		return fmt.Errorf("%s: %w", o.data, err)
	}
	work, cleanup, err := tabular.WorkDir(o.work, "medsel")
	if err != nil {
		return err
	}
	defer cleanup()
	o.work = work
	res := map[string][]outcome{}
	start := time.Now()
	for s := 0; s < o.seeds; s++ {
		parts, err := tabular.Partition(all, sizes, o.seed, uint64(s))
		if err != nil {
			return err
		}
		st := tabular.Fit(parts[0])
		tr, va, te := st.Apply(parts[0]), st.Apply(parts[1]), st.Apply(parts[2])
		out, err := runSplit(o, tr, va, te, s, log)
		if err != nil {
			return fmt.Errorf("split %d: %w", s, err)
		}
		line := fmt.Sprintf("split %d", s)
		for _, m := range methods {
			res[m] = append(res[m], out[m])
			c := out[m].rep.Classification
			line += fmt.Sprintf("  %s: α %.3g η %.2g acc %.4f F1 %.4f AUROC %.4f", m, out[m].alpha, out[m].lr, c.Accuracy, c.F1, float64(c.AUROC))
		}
		fmt.Fprintf(log, "%s  (%s)\n", line, time.Since(start).Round(time.Second))
	}
	fmt.Fprintf(w, "%d splits of %s (%d train / %d validation / %d test), MLP %d-%s-2, %d draws of (α, η), %d epochs (vifa: %d of c alone, ramp %d, L = %d), S = %d; %s\n\n",
		o.seeds, filepath.Base(o.data), sizes[0], sizes[1], sizes[2], all.Dim, o.hidden, o.search, o.epochs, o.stage1, o.ramp, o.mcSamples, o.samples, time.Since(start).Round(time.Second))
	writeTables(w, res)
	return nil
}

// load reads the task: "fmnist:A,B" pools Fashion-MNIST's training and test images of classes A
// and B (labels 0 and 1 in that order; the protocol draws its own splits), anything else is a
// CSV file whose last column is the label.
func load(spec string) (*data.Dataset, error) {
	pair, ok := strings.CutPrefix(spec, "fmnist:")
	if !ok {
		return data.ReadCSVFile(spec, data.CSVOptions{})
	}
	classes, err := data.ParseClasses(pair)
	if err != nil || len(classes) != 2 {
		return nil, fmt.Errorf("data %s: want fmnist:A,B with two classes", spec)
	}
	var all *data.Dataset
	for _, split := range []string{"train", "test"} {
		d, err := data.FashionMNIST(data.DefaultFashionMNISTDir, split)
		if err != nil {
			return nil, err
		}
		if d, err = d.SelectClasses(classes, true); err != nil {
			return nil, err
		}
		if all == nil {
			all = d
			continue
		}
		all.X, all.Labels, all.N = append(all.X, d.X...), append(all.Labels, d.Labels...), all.N+d.N
	}
	all.Name = spec
	return all, nil
}

// draw returns the k-th (α, η) of split s, log-uniform in the ranges; both methods get the same.
func (o options) draw(s, k int) (alpha, lr float64) {
	r := rand.New(rand.NewPCG(o.seed+1, uint64(s)<<16|uint64(k)))
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))) }
	return logU(o.alphaLo, o.alphaHi), logU(o.lrLo, o.lrHi)
}

// config is a run's configuration on the training part tr.
func (o options) config(method string, tr *data.Dataset, alpha, lr float64, epochs int, out string, seed uint64) train.Config {
	c := train.DefaultConfig()
	// NewWithData gets the data; c.Data only names them in the checkpoint.
	c.Data, c.Task, c.Arch = "csv:"+o.data, "classification", fmt.Sprintf("mlp:%d-%s-2:relu", tr.Dim, o.hidden)
	c.Epochs, c.BatchSize, c.LR, c.Optimizer, c.Clip = epochs, o.batch, lr, "adam", 10
	c.TestSamples, c.Seed, c.Out = o.samples, seed, out
	switch method {
	case "gd":
		c.Posterior, c.WeightDecay = "deterministic", alpha/float64(tr.N)
	case "vifa":
		c.Posterior, c.LatentDim, c.MCSamples, c.PriorPrecision = "vifa", 1, o.mcSamples, alpha
		c.FAMeanOnlyEpochs, c.FARampEpochs = o.stage1, o.ramp
		c.FAInitLogVar, c.FAInitFactorScale = o.initLogVar, o.fScale
	}
	return c
}

// runSplit pre-trains the starting network and runs the random search of both methods on one
// split; it returns each method's test outcome at its best draw by validation NLL.
func runSplit(o options, tr, va, te *data.Dataset, s int, log io.Writer) (map[string]outcome, error) {
	seed := o.seed + uint64(s)
	pre := filepath.Join(o.work, fmt.Sprintf("pre%d.ebnn", s))
	if _, err := tabular.Train(o.config("gd", tr, 0, 1e-3, o.pretrainEpochs, pre, seed), tr, va); err != nil {
		return nil, fmt.Errorf("pre-training: %w", err)
	}
	opt := runtime.Options{Samples: o.samples, Seed: seed}
	out := map[string]outcome{}
	for _, m := range methods {
		best := math.Inf(1)
		for k := 0; k < o.search; k++ {
			alpha, lr := o.draw(s, k)
			c := o.config(m, tr, alpha, lr, o.epochs, filepath.Join(o.work, fmt.Sprintf("%s%d_%d.ebnn", m, s, k)), seed)
			c.InitFrom = pre
			t, err := tabular.Train(c, tr, va)
			if err != nil {
				return nil, fmt.Errorf("draw %d (α %g, η %g): %w", k, alpha, lr, err)
			}
			model, err := t.Model()
			if err != nil {
				return nil, err
			}
			vrep, err := eval.Evaluate(model, va, nil, opt)
			if err != nil {
				// A draw whose network predicts NaN (runtime.ErrNonFinite) loses the search.
				fmt.Fprintf(log, "split %d %s draw %d (α %g, η %g): %v\n", s, m, k, alpha, lr, err)
			} else if vrep.Classification.NLL < best {
				trep, err := eval.Evaluate(model, te, nil, opt)
				if err != nil {
					model.Close()
					return nil, fmt.Errorf("%s draw %d on the test part: %w", m, k, err)
				}
				best = vrep.Classification.NLL
				out[m] = outcome{rep: trep, alpha: alpha, lr: lr, trainSeconds: t.History[len(t.History)-1].TrainSeconds}
			}
			model.Close()
		}
		if _, ok := out[m]; !ok {
			return nil, fmt.Errorf("%s: no draw gave a finite validation NLL", m)
		}
	}
	return out, nil
}

// paper000 holds paper 000's numbers (ResNet-18, diabetic retinopathy, mean ± s.e. over 5
// splits): Table 2 per method, and Tables 3, 12 and 13 (VIFA) per retained fraction and score.
var paper000 = struct {
	table2    map[string][6]string
	selective map[string]map[string][5]string
}{
	table2: map[string][6]string{
		"vifa": {"0.928 ± 0.003", "0.921 ± 0.009", "0.904 ± 0.014", "0.912 ± 0.004", "0.980 ± 0.002", "463.2 ± 2.8 min"},
		"gd":   {"0.927 ± 0.004", "0.914 ± 0.009", "0.907 ± 0.009", "0.911 ± 0.005", "0.979 ± 0.002", "435.7 ± 1.8 min"},
	},
	selective: map[string]map[string][5]string{
		"accuracy": {
			"entropy": {"0.957 ± 0.005", "0.973 ± 0.004", "0.983 ± 0.002", "0.991 ± 0.002", "0.994 ± 0.001"},
			"md2":     {"0.956 ± 0.005", "0.975 ± 0.003", "0.984 ± 0.002", "0.99 ± 0.002", "0.994 ± 0.001"},
		},
		"F1": {
			"entropy": {"0.946 ± 0.007", "0.965 ± 0.005", "0.975 ± 0.004", "0.986 ± 0.003", "0.989 ± 0.002"},
			"md2":     {"0.945 ± 0.007", "0.966 ± 0.004", "0.976 ± 0.004", "0.985 ± 0.003", "0.989 ± 0.002"},
		},
		"AUROC": {
			"entropy": {"0.984 ± 0.002", "0.989 ± 0.002", "0.992 ± 0.002", "0.994 ± 0.002", "0.995 ± 0.001"},
			"md2":     {"0.984 ± 0.003", "0.989 ± 0.002", "0.992 ± 0.002", "0.994 ± 0.002", "0.995 ± 0.002"},
		},
	},
}

// column returns f of every split's outcome.
func column(xs []outcome, f func(outcome) float64) []float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return v
}

// cell formats the mean ± standard error of v over the splits where it is defined (NaN: an
// AUROC of a retained set holding one class), with "(n of N)" when some are not.
func cell(v []float64) string {
	var def []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			def = append(def, x)
		}
	}
	if len(def) == 0 {
		return "—"
	}
	s := eval.FormatMeanSE(def, "%.3f")
	if len(def) < len(v) {
		s += fmt.Sprintf(" (%d of %d)", len(def), len(v))
	}
	return s
}

// writeTables writes Table 2 and the selective-prediction tables as markdown.
func writeTables(w io.Writer, res map[string][]outcome) {
	fmt.Fprintln(w, "Table 2 (test metrics of the draw chosen on validation NLL; mean ± s.e. over the splits):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| metric | VIFA (ours) | gradient descent (ours) | VIFA (paper 000) | gradient descent (paper 000) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	rows := []struct {
		name string
		f    func(outcome) float64
	}{
		{"accuracy", func(x outcome) float64 { return x.rep.Classification.Accuracy }},
		{"precision", func(x outcome) float64 { return x.rep.Classification.Precision }},
		{"recall", func(x outcome) float64 { return x.rep.Classification.Recall }},
		{"F1", func(x outcome) float64 { return x.rep.Classification.F1 }},
		{"AUROC", func(x outcome) float64 { return float64(x.rep.Classification.AUROC) }},
	}
	for i, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.name, cell(column(res["vifa"], r.f)), cell(column(res["gd"], r.f)), paper000.table2["vifa"][i], paper000.table2["gd"][i])
	}
	secs := func(x outcome) float64 { return x.trainSeconds }
	fmt.Fprintf(w, "| training time (s) | %s | %s | %s | %s |\n", cell(column(res["vifa"], secs)), cell(column(res["gd"], secs)), paper000.table2["vifa"][5], paper000.table2["gd"][5])
	for _, extra := range []struct {
		name string
		f    func(outcome) float64
	}{
		{"NLL", func(x outcome) float64 { return x.rep.Classification.NLL }},
		{"ECE", func(x outcome) float64 { return x.rep.Classification.ECE }},
		{"chosen log₁₀ α", func(x outcome) float64 { return math.Log10(x.alpha) }},
		{"chosen log₁₀ η", func(x outcome) float64 { return math.Log10(x.lr) }},
	} {
		fmt.Fprintf(w, "| %s | %s | %s | — | — |\n", extra.name, cell(column(res["vifa"], extra.f)), cell(column(res["gd"], extra.f)))
	}
	for _, m := range []struct {
		name, table string
		vals        func(r *eval.Report, score string) []float64
	}{
		{"accuracy", "3", func(r *eval.Report, s string) []float64 { return r.Selective[s] }},
		{"F1", "12", func(r *eval.Report, s string) []float64 { return r.SelectiveF1[s] }},
		{"AUROC", "13", func(r *eval.Report, s string) []float64 {
			v := make([]float64, len(r.SelectiveAUROC[s]))
			for i, x := range r.SelectiveAUROC[s] {
				v[i] = float64(x)
			}
			return v
		}},
	} {
		fmt.Fprintf(w, "\nTable %s (selective %s of VIFA on the most certain test inputs; gradient descent by entropy beside):\n\n", m.table, m.name)
		fmt.Fprintln(w, "| retained | by entropy (ours) | by MD² (ours) | by entropy (paper 000) | by MD² (paper 000) | gradient descent by entropy (ours) |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for i, f := range eval.SelectiveFractions {
			at := func(method, score string) string {
				return cell(column(res[method], func(x outcome) float64 {
					v := m.vals(x.rep, score)
					if i >= len(v) {
						return math.NaN()
					}
					return v[i]
				}))
			}
			fmt.Fprintf(w, "| %.0f %% | %s | %s | %s | %s | %s |\n", 100*f, at("vifa", "entropy"), at("vifa", "md2"),
				paper000.selective[m.name]["entropy"][i], paper000.selective[m.name]["md2"][i], at("gd", "entropy"))
		}
	}
	fmt.Fprintln(w, "\nMD² of gradient descent is 0 for every input (one network), so it orders nothing; its selective column is by entropy.")
}
