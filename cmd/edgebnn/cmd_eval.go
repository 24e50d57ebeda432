//go:build !device

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/plot"
)

const evalUsage = `Usage: edgebnn eval [flags] MODEL.ebnn

Evaluates a model file (a converted model or a training checkpoint) on a
labelled data set through the runtime: accuracy, NLL, ECE (15 bins), Brier
score, selective prediction (accuracy on the 90…50 % most certain inputs) and,
with held-out classes, out-of-distribution detection (AUROC, AUPR) by max
probability, entropy and mutual information; RMSE and NLL for regression.
For a training checkpoint the data settings default to the ones it was
trained with. An Ensemble-W model (an ensemble_w checkpoint or its converted
file) predicts with one sample per member unless --samples says otherwise:
sample s runs member s mod K.`

var evalCmd = command{
	name:    "eval",
	summary: "evaluate accuracy, NLL and calibration on a data set",
	usage:   evalUsage,
	run:     runEval,
}

func runEval(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("eval")
	dataFlag := fs.String("data", "", "data set: fmnist, fmnist-c:CORRUPTION:SEVERITY, csv:PATH or toy1d (default: the checkpoint's, else fmnist)")
	dataDir := fs.String("data-dir", "", "directory of the Fashion-MNIST IDX files")
	classes := fs.String("classes", "", "the classes the model was trained on, e.g. 0-4 (the others are OOD data)")
	testLimit := fs.Int("test-limit", -1, "evaluate only the first N test examples (0: all)")
	samples := fs.Int("samples", 0, "Monte Carlo samples per prediction (default: one per member of an ensemble, else the checkpoint's test_samples, else 32)")
	seed := fs.Uint64("seed", 42, "random seed")
	strategy := fs.String("strategy", "auto", "sampling strategy: auto, weight or local")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	plotPrefix := fs.String("plots", "", "write <prefix>.reliability.png and <prefix>.selective.png")
	if err := parseFlags(fs, evalUsage, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("need exactly one model file")
	}
	path := fs.Arg(0)
	st, stErr := train.ReadState(path)
	cfg := train.DefaultConfig()
	if stErr == nil {
		cfg = st.Config
	}
	if *dataFlag != "" {
		cfg.Data = *dataFlag
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if *classes != "" {
		cfg.Classes = *classes
	}
	if *testLimit >= 0 {
		cfg.TestLimit = *testLimit
	}
	if *samples > 0 {
		cfg.TestSamples = *samples
	} else if stErr != nil {
		cfg.TestSamples = 32
	}
	cfg.Seed = *seed
	var plotPaths []string
	if *plotPrefix != "" {
		plotPaths = []string{*plotPrefix + ".reliability.png", *plotPrefix + ".selective.png"}
		inputs := []string{path}
		if p, ok := strings.CutPrefix(cfg.Data, "csv:"); ok {
			inputs = append(inputs, p)
		}
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
	cfg.Arch = "mlp:1-1"
	test, ood, err := train.LoadEvalData(cfg)
	if err != nil {
		return err
	}
	opt := runtime.Options{Samples: cfg.TestSamples, Seed: cfg.Seed, Strategy: strat, MaxBatch: 100}
	report, err := eval.Evaluate(m, test, ood, opt)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: write no plots
	}
	if *plotPrefix != "" && report.Classification != nil {
		bins := make([]plot.Bin, len(report.Reliability))
		for i, b := range report.Reliability {
			bins[i] = plot.Bin{Lo: b.Lo, Hi: b.Hi, Count: b.Count, Confidence: b.Confidence, Accuracy: b.Accuracy}
		}
		if err := plot.Reliability(plotPaths[0], fmt.Sprintf("reliability (ECE %.4f)", report.Classification.ECE), bins); err != nil {
			return err
		}
		var ss []plot.Series
		for _, s := range eval.Scores {
			ss = append(ss, plot.Series{Name: "by " + s, X: eval.SelectiveFractions, Y: report.Selective[s]})
		}
		if err := plot.Lines(plotPaths[1], "selective prediction", "fraction retained", "accuracy", ss, 6, 4); err != nil {
			return err
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	fmt.Fprintf(stdout, "%s (%d samples): %s\n", path, cfg.TestSamples, reportLine(report))
	if report.Classification != nil {
		var b strings.Builder
		for _, s := range eval.Scores {
			fmt.Fprintf(&b, "selective accuracy by %-8s", s)
			for i, f := range eval.SelectiveFractions {
				fmt.Fprintf(&b, "  %2.0f%%: %.2f%%", 100*f, 100*report.Selective[s][i])
			}
			b.WriteString("\n")
		}
		for _, s := range eval.Scores {
			if o, ok := report.OOD[s]; ok {
				fmt.Fprintf(&b, "OOD by %-8s AUROC %.4f  AUPR %.4f\n", s, o.AUROC, o.AUPR)
			}
		}
		fmt.Fprint(stdout, b.String())
	}
	return nil
}
