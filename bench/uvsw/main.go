// Command uvsw evaluates the models bench/uvsw.sh trains — paper 003's U-versus-W comparison on
// Fashion-MNIST classes 0–4, with the MLP 784-256-256-5 (-model mlp) or the residual CNN of
// bench/configs/fmnist_resnet5_arch.json (-model resnet) — through the runtime, and prints two
// Markdown tables in the shape of paper 003's Tables 2–3 (parameters stored, file bytes,
// accuracy, NLL, ECE, OOD AUROC by entropy / mutual information / max probability against the
// held-out classes 5–9 and against scikit-learn's digits) and Tables 11–12 (accuracy and ECE
// against corruption severity, averaged over data.Corruptions), each cell mean ± standard error
// over the seeds, paper 003's CIFAR-10 numbers beside; and draws accuracy and ECE against
// severity, one line per method, as a PNG.
//
// It reads from -dir the converted model files <method>_<seed>.model.ebnn (-methods, by default
// det, ensw, ffgw, ffgu, fcgu, ensembleu5; also faem, swag, vifa: the factor-analysis posteriors
// of papers 000 and 001, evaluated the same way; det uses the seeds 1, M+1, … of the first member of each
// Ensemble-W) and keeps each model's evaluation in <model>.uvsw.json, reused when present, newer
// than the model and for the same sampling seed, samples and -test-limit (-force re-evaluates):
// per part — the clean and OOD numbers, and each corrupted set's (those of another -corrupt-limit
// dropped) — so a run after a -no-corrupt one evaluates only the corruptions, and an interrupted
// sweep (the cache is written after the clean sets and after every corrupted set) resumes where
// it stopped.
//
// Samples per prediction: 1 for the deterministic network, one per member for Ensemble-W (the
// deep-ensemble predictive), -samples (default 10) for the variational posteriors. The sampling
// seed and the corruption seed are -seed (42, edgebnn eval's default), so every number is the one
// `edgebnn eval --classes 0-4 --samples K [--ood digits] [--data fmnist-c:C:S] MODEL` prints.
//
//	go run ./bench/uvsw -dir runs/uvsw -seeds 3 -png docs/img/uvsw_corruption.png
//	go run ./bench/uvsw -model resnet -dir runs/uvsw_resnet -seeds 3 -corrupt-limit 1000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgebnn/edgebnn/bench/internal/sevtab"
	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot/vg"
)

// method is one row of the tables.
type method struct {
	Key  string // file stem: <Key>_<seed>.model.ebnn
	Name string
	// Paper 003's ResNet-50 CIFAR-10 numbers (Tables 2/5, 3, 9–10, 11, 12): accuracy %, ECE %,
	// AUROC (max prob) C10→C100 and C10→SVHN, parameters relative to a deterministic net (%),
	// corrupted accuracy and ECE (%) at severities 1–5. NaN where the paper has no such row.
	PaperAcc, PaperECE, PaperC100, PaperSVHN, PaperRel float64
	PaperCAcc, PaperCECE                               [5]float64
}

var nan = math.NaN()

// allMethods in table order. Paper 003 has no FCG-U row on CIFAR (FCG-U is in its toy only).
var allMethods = []method{
	{"det", "deterministic", 94.72, 4.46, .84, .93, 100,
		[5]float64{87.90, 82.02, 76.31, 68.91, 57.94}, [5]float64{10.41, 15.58, 20.56, 27.06, 37.26}},
	{"ensw", "Ensemble-W", 95.90, 1.08, .89, .95, 500,
		[5]float64{89.45, 83.94, 78.40, 71.18, 60.15}, [5]float64{4.12, 7.01, 10.10, 14.12, 20.48}},
	{"ffgw", "FFG-W", 94.13, 0.50, .88, .90, 199.8,
		[5]float64{83.80, 76.22, 69.30, 61.82, 50.72}, [5]float64{13.05, 12.14, 11.56, 10.77, 10.86}},
	{"ffgu", "FFG-U", 94.40, 0.64, .89, .94, 24.28,
		[5]float64{86.90, 80.33, 74.34, 67.23, 57.00}, [5]float64{2.47, 4.93, 7.77, 11.27, 16.16}},
	{"fcgu", "FCG-U", nan, nan, nan, nan, nan,
		[5]float64{nan, nan, nan, nan, nan}, [5]float64{nan, nan, nan, nan, nan}},
	{"ensembleu5", "Ensemble-U", 94.94, 0.45, .90, .93, 27.10,
		[5]float64{87.35, 80.45, 73.89, 66.52, 54.89}, [5]float64{2.77, 5.86, 9.06, 12.54, 19.66}},
	// The factor-analysis posteriors of papers 000 and 001 (not in paper 003's tables).
	{"faem", "FA, online EM", nan, nan, nan, nan, nan,
		[5]float64{nan, nan, nan, nan, nan}, [5]float64{nan, nan, nan, nan, nan}},
	{"swag", "SWAG", nan, nan, nan, nan, nan,
		[5]float64{nan, nan, nan, nan, nan}, [5]float64{nan, nan, nan, nan, nan}},
	{"vifa", "VIFA", nan, nan, nan, nan, nan,
		[5]float64{nan, nan, nan, nan, nan}, [5]float64{nan, nan, nan, nan, nan}},
}

// defaultMethods are the -methods of paper 003's comparison.
const defaultMethods = "det,ensw,ffgw,ffgu,fcgu,ensembleu5"

// selectMethods returns the methods named in list (comma-separated keys), in table order.
func selectMethods(list string) ([]method, error) {
	want := map[string]bool{}
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		known := false
		for _, m := range allMethods {
			known = known || m.Key == k
		}
		if !known {
			keys := make([]string, len(allMethods))
			for i, m := range allMethods {
				keys[i] = m.Key
			}
			return nil, fmt.Errorf("-methods: unknown method %q (known: %s)", k, strings.Join(keys, ", "))
		}
		want[k] = true
	}
	var out []method
	for _, m := range allMethods {
		if want[m.Key] {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-methods names no method")
	}
	return out, nil
}

// network is the -model the models are: what the tables' caption and the plot's titles call it.
type network struct {
	Caption string // in the first table's caption
	Short   string // in the plot's titles ("" for the MLP: its titles as before -model)
}

// networks are the -model values.
var networks = map[string]network{
	"mlp":    {Caption: "MLP 784-256-256-5"},
	"resnet": {Caption: "residual CNN of bench/configs/fmnist_resnet5_arch.json: conv stem, two BasicBlocks with BatchNorm, linear 32→5", Short: "residual CNN"},
}

// oodSets are the OOD sets of the tables: the held-out classes and the digits.
var oodSets = []string{"classes", "digits"}

// scores are the OOD uncertainty scores reported.
var scores = []string{"entropy", "mi", "maxprob"}

// metrics are one evaluation's numbers.
type metrics struct {
	Accuracy float64 `json:"accuracy"`
	NLL      float64 `json:"nll"`
	ECE      float64 `json:"ece"`
	Brier    float64 `json:"brier"`
}

// result is one model's evaluation (the cache file's content).
type result struct {
	Model   string `json:"model"`
	Samples int    `json:"samples"`
	Seed    uint64 `json:"seed"`
	// CorruptLimit is how many images of classes 0–4 each corrupted set has (0: all).
	CorruptLimit int `json:"corrupt_limit"`
	// TestLimit is how many Fashion-MNIST test images (of all ten classes, before the class
	// selection and the corruptions) the evaluation used (0: all 10 000).
	TestLimit  int   `json:"test_limit,omitempty"`
	Parameters int64 `json:"parameters"`
	DetParams  int64 `json:"deterministic_parameters"`
	FileBytes  int64 `json:"file_bytes"`
	Clean      metrics
	// OOD is the AUROC by set (classes, digits) and score (entropy, mi, maxprob).
	OOD map[string]map[string]float64 `json:"ood"`
	// Corrupt holds "corruption:severity" → metrics, severities 1–5.
	Corrupt map[string]metrics `json:"corrupt"`
}

// cleanComplete reports whether r holds the clean test set's and both OOD sets' numbers.
func (r *result) cleanComplete() bool {
	if r.OOD == nil {
		return false
	}
	for _, s := range oodSets {
		if len(r.OOD[s]) < len(scores) {
			return false
		}
	}
	return true
}

// missing returns the keys (sevtab.Key) of the corrupted sets r has no numbers for, in sweep
// order.
func (r *result) missing() []string {
	var out []string
	for _, c := range data.Corruptions() {
		for s := 1; s <= data.MaxSeverity; s++ {
			if _, ok := r.Corrupt[sevtab.Key(c, s)]; !ok {
				out = append(out, sevtab.Key(c, s))
			}
		}
	}
	return out
}

// complete reports whether r holds every number the tables need (the corruptions' only with
// corrupt).
func (r *result) complete(corrupt bool) bool {
	return r.cleanComplete() && (!corrupt || len(r.missing()) == 0)
}

// reuse returns what of the cached evaluation r a run with these settings keeps, per entry: nil
// when nothing (r is for another sampling seed, test limit or number of samples k), else r with
// the maps it lacks made and, when the run evaluates the corruptions (corrupt) and r's are for
// another -corrupt-limit, its corruption numbers dropped. The caller then evaluates only what the
// kept result lacks: the clean and OOD sets unless cleanComplete, the corrupted sets in missing.
func reuse(r *result, seed uint64, k, limit, testLimit int, corrupt bool) *result {
	if r == nil || r.Seed != seed || r.TestLimit != testLimit || r.Samples != k {
		return nil
	}
	if corrupt && r.CorruptLimit != limit {
		r.Corrupt, r.CorruptLimit = nil, limit
	}
	if r.OOD == nil {
		r.OOD = map[string]map[string]float64{}
	}
	if r.Corrupt == nil {
		r.Corrupt = map[string]metrics{}
	}
	return r
}

// entry is one model to evaluate.
type entry struct {
	Method method
	Seed   int
	Path   string
	Model  *runtime.Model // nil when its cached evaluation has every number the run needs
	Opt    runtime.Options
	Res    *result
	Cache  string
	// NeedClean: the clean and OOD sets are to be evaluated (the cache has not got them).
	NeedClean bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "uvsw:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("uvsw", flag.ContinueOnError)
	model := fl.String("model", "mlp", "the network the models are, for the captions: mlp or resnet")
	dir := fl.String("dir", "runs/uvsw", "directory of the models (<method>_<seed>.model.ebnn)")
	seeds := fl.Int("seeds", 3, "seeds per method")
	members := fl.Int("members", 5, "members of each Ensemble-W (det uses seeds 1, M+1, …)")
	samples := fl.Int("samples", 10, "Monte Carlo samples per prediction of the variational posteriors")
	epochs := fl.Int("epochs", 12, "training epochs (for the tables' captions)")
	seed := fl.Uint64("seed", 42, "sampling and corruption seed")
	dataDir := fl.String("data-dir", data.DefaultFashionMNISTDir, "directory of the Fashion-MNIST IDX files")
	digits := fl.String("digits", data.DefaultDigitsPath, "scikit-learn's digits.csv.gz")
	limit := fl.Int("corrupt-limit", 2000, "evaluate each corrupted set on its first N images of classes 0–4 (0: all 5000)")
	testLimit := fl.Int("test-limit", 0, "evaluate on the first N Fashion-MNIST test images only, before the class selection and the corruptions (0: all 10 000; for quick runs: the numbers then differ from edgebnn eval's)")
	force := fl.Bool("force", false, "re-evaluate models that have a cached evaluation")
	noCorrupt := fl.Bool("no-corrupt", false, "skip the corruptions: the U-versus-W and OOD tables only, no plot")
	pngPath := fl.String("png", "", "write the accuracy/ECE-against-severity plot here")
	mdPath := fl.String("md", "", "also write the tables to this Markdown file")
	methodList := fl.String("methods", defaultMethods, "comma-separated methods, the table's rows: det, ensw, ffgw, ffgu, fcgu, ensembleu5, faem, swag, vifa")
	if err := fl.Parse(args); err != nil {
		return err
	}
	// Outputs that cannot be written are refused before the evaluations, not after them.
	if err := outfile.CheckOutputs("", outfile.Output{Flag: "-png", Path: *pngPath}, outfile.Output{Flag: "-md", Path: *mdPath}); err != nil {
		return err
	}
	ms, err := selectMethods(*methodList)
	if err != nil {
		return err
	}
	net, ok := networks[*model]
	if !ok {
		return fmt.Errorf("-model is mlp or resnet, not %q", *model)
	}
	if *seeds < 1 || *members < 1 || *samples < 1 {
		return fmt.Errorf("-seeds, -members and -samples must be positive")
	}
	if *limit < 0 || *testLimit < 0 {
		return fmt.Errorf("-corrupt-limit and -test-limit must not be negative")
	}
	corrupt := !*noCorrupt
	entries, err := load(ms, *dir, *seeds, *members, *samples, *seed, *limit, *testLimit, corrupt, *force)
	if err != nil {
		return err
	}
	defer func() {
		for _, e := range entries {
			if e.Model != nil {
				e.Model.Close()
			}
		}
	}()
	if err := evaluate(entries, *dataDir, *digits, *seed, *limit, *testLimit, corrupt); err != nil {
		return err
	}
	var b strings.Builder
	if *testLimit > 0 {
		fmt.Fprintf(&b, "(evaluated on the first %d Fashion-MNIST test images only: -test-limit)\n\n", *testLimit)
	}
	tables(&b, ms, net, entries, *seeds, *members, *samples, *epochs, *limit, corrupt)
	fmt.Fprint(stdout, b.String())
	if *mdPath != "" {
		if err := outfile.WriteBytes(context.Background(), *mdPath, []byte(b.String())); err != nil {
			return fmt.Errorf("write %s: %w", *mdPath, err)
		}
	}
	if *pngPath != "" && corrupt {
		if err := severityPlot(*pngPath, ms, net, entries); err != nil {
			return err
		}
	}
	return nil
}

// load opens every model of the methods and its cached evaluation, if usable.
func load(methods []method, dir string, seeds, members, samples int, seed uint64, limit, testLimit int, corrupt, force bool) ([]*entry, error) {
	var out []*entry
	for _, m := range methods {
		for s := 1; s <= seeds; s++ {
			fileSeed := s
			if m.Key == "det" {
				fileSeed = (s-1)*members + 1
			}
			path := filepath.Join(dir, fmt.Sprintf("%s_%d.model.ebnn", m.Key, fileSeed))
			st, err := os.Stat(path)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "uvsw: %s missing, %s seed %d left out\n", path, m.Name, s)
				continue
			} else if err != nil {
				return nil, err
			}
			e := &entry{Method: m, Seed: s, Path: path, Cache: strings.TrimSuffix(path, ".model.ebnn") + ".uvsw.json"}
			if e.Model, err = runtime.Load(path); err != nil {
				return nil, err
			}
			k := samples
			switch {
			case e.Model.Members() > 1 && !e.Model.Mixture():
				k = e.Model.Members() // Ensemble-W: one pass per member
			case !e.Model.Stochastic():
				k = 1
			}
			e.Opt = runtime.Options{Samples: k, Seed: seed, Strategy: runtime.Auto, MaxBatch: 100}
			if cs, err := os.Stat(e.Cache); err == nil && !force && cs.ModTime().After(st.ModTime()) {
				var r result
				raw, err := os.ReadFile(e.Cache)
				if err != nil {
					return nil, err
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					return nil, fmt.Errorf("%s: %w", e.Cache, err)
				}
				e.Res = reuse(&r, seed, k, limit, testLimit, corrupt)
			}
			if e.Res == nil {
				ins, err := convert.Inspect(path, false)
				if err != nil {
					return nil, err
				}
				e.Res = &result{Model: path, Samples: k, Seed: seed, CorruptLimit: limit, TestLimit: testLimit, Parameters: ins.Parameters,
					DetParams: ins.DeterministicParameters, FileBytes: ins.FileBytes,
					OOD: map[string]map[string]float64{}, Corrupt: map[string]metrics{}}
			}
			e.NeedClean = !e.Res.cleanComplete()
			if e.Res.complete(corrupt) {
				e.Model.Close() // everything cached
				e.Model = nil
			}
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no models in %s (bench/uvsw.sh trains them)", dir)
	}
	return out, nil
}

// evaluate fills in what the entries' results lack (the entries with a model: the others are
// complete): the clean test set and the two OOD sets where NeedClean, then, with corrupt, each
// corruption and severity a result has no numbers for (each corrupted set built once and shared
// by the models that lack it; none built when no model lacks any).
func evaluate(entries []*entry, dataDir, digitsPath string, seed uint64, limit, testLimit int, corrupt bool) error {
	var pending []*entry
	for _, e := range entries {
		if e.Model != nil {
			pending = append(pending, e)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	full, err := data.FashionMNISTHead(dataDir, "test", testLimit)
	if err != nil {
		return err
	}
	in := []int{0, 1, 2, 3, 4}
	test, err := full.SelectClasses(in, true)
	if err != nil {
		return err
	}
	held, err := full.SelectClasses(data.Complement(in, full.Classes), false)
	if err != nil {
		return err
	}
	digits, err := data.Digits(digitsPath, 28)
	if err != nil {
		return fmt.Errorf("ood digits (apt-get install python3-sklearn): %w", err)
	}
	digits.Scale = test.Scale // as train.loadOOD: values on the test images' scale
	for _, e := range pending {
		if !e.NeedClean {
			continue
		}
		fmt.Fprintf(os.Stderr, "uvsw: evaluating %s on the clean and OOD sets (%d samples)\n", e.Path, e.Opt.Samples)
		p, err := eval.Predict(e.Model, test, e.Opt, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		for _, set := range oodSets {
			d := held
			if set == "digits" {
				d = digits
			}
			po, err := eval.Predict(e.Model, d, e.Opt, 0)
			if err != nil {
				return fmt.Errorf("%s: ood %s: %w", e.Path, set, err)
			}
			r, err := eval.FromPredictions(p, test, po)
			if err != nil {
				return fmt.Errorf("%s: %w", e.Path, err)
			}
			e.Res.Clean = metricsOf(r)
			e.Res.OOD[set] = map[string]float64{}
			for _, s := range scores {
				e.Res.OOD[set][s] = r.OOD[s].AUROC
			}
		}
	}
	if err := save(pending); err != nil {
		return err
	}
	// As edgebnn eval --data fmnist-c:C:S --classes 0-4: corrupt, then select.
	prep := func(cd *data.Dataset) (*data.Dataset, error) {
		cd, err := cd.SelectClasses(in, true)
		if err != nil {
			return nil, err
		}
		return cd.Head(limit), nil
	}
	lacking := 0 // the pending models that lack a corrupted set
	for _, e := range pending {
		if len(e.Res.missing()) > 0 {
			lacking++
		}
	}
	if corrupt && lacking > 0 {
		fmt.Fprintf(os.Stderr, "uvsw: evaluating %d models on the corrupted sets they lack\n", lacking)
		err = sevtab.Sweep(full, seed, prep, func(c string, s int, cd *data.Dataset) error {
			for _, e := range pending {
				if _, ok := e.Res.Corrupt[sevtab.Key(c, s)]; ok {
					continue
				}
				r, err := eval.Evaluate(e.Model, cd, nil, e.Opt)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", e.Path, cd.Name, err)
				}
				e.Res.Corrupt[sevtab.Key(c, s)] = metricsOf(r)
			}
			fmt.Fprintf(os.Stderr, "uvsw: %s done\n", cd.Name)
			return save(pending) // an interrupted sweep resumes after the last set done
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// save writes the results of the entries to their cache files.
func save(entries []*entry) error {
	for _, e := range entries {
		raw, err := json.MarshalIndent(e.Res, "", "  ")
		if err != nil {
			return err
		}
		if err := outfile.WriteBytes(context.Background(), e.Cache, append(raw, '\n')); err != nil {
			return fmt.Errorf("write %s: %w", e.Cache, err)
		}
	}
	return nil
}

func metricsOf(r *eval.Report) metrics {
	c := r.Classification
	return metrics{Accuracy: c.Accuracy, NLL: c.NLL, ECE: c.ECE, Brier: c.Brier}
}

// evaluated yields, in the order of methods, each method that has results among entries,
// with its results in seed order: the rows of the tables and the lines of the plot.
func evaluated(methods []method, entries []*entry) iter.Seq2[method, []*result] {
	byKey := map[string][]*result{}
	for _, e := range entries {
		byKey[e.Method.Key] = append(byKey[e.Method.Key], e.Res)
	}
	return func(yield func(method, []*result) bool) {
		for _, m := range methods {
			if r := byKey[m.Key]; len(r) > 0 && !yield(m, r) {
				return
			}
		}
	}
}

// meanSE returns the mean and standard error (sample sd/√n; NaN for n < 2) of x.
func meanSE(x []float64) (float64, float64) {
	n := float64(len(x))
	if len(x) == 0 {
		return nan, nan
	}
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= n
	if len(x) < 2 {
		return m, nan
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / (n - 1) / n)
}

// cell formats mean ± s.e. of x with format f (after multiplying by scale).
func cell(x []float64, scale float64, f string) string {
	v := make([]float64, len(x))
	for i := range x {
		v[i] = x[i] * scale
	}
	if m, _ := meanSE(v); math.IsNaN(m) {
		return "—"
	}
	return eval.FormatMeanSE(v, f)
}

// pick returns f(r) for every result.
func pick(rs []*result, f func(*result) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// severityMean is the mean over data.Corruptions of metric at severity s (0: clean).
func severityMean(r *result, s int, metric func(metrics) float64) float64 {
	return sevtab.SeverityMean(r.Clean, r.Corrupt, s, metric)
}

func paperNum(v float64, f string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf(f, v)
}

// tables writes the U-versus-W tables and the corruption tables.
func tables(w io.Writer, methods []method, net network, entries []*entry, seeds, members, samples, epochs, limit int, corrupt bool) {
	rows := evaluated(methods, entries)
	acc := func(m metrics) float64 { return m.Accuracy }
	ece := func(m metrics) float64 { return m.ECE }
	fmt.Fprintf(w, "U versus W on Fashion-MNIST (%s, classes 0–4, %d epochs; mean ± s.e. over the seeds, %d per method unless the seeds column says otherwise; Ensemble-W = %d networks; %d samples per prediction for the variational methods). Paper 003: ResNet-50 on CIFAR-10 (Tables 2, 5, 9).\n\n", net.Caption, epochs, seeds, members, samples)
	fmt.Fprintln(w, "| method | seeds | parameters stored | rel. to det. | file bytes (f32) | accuracy % | NLL | ECE % | paper: rel. size | paper: accuracy % | paper: ECE % |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for m, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %.1f %% | %d | %s | %s | %s | %s | %s | %s |\n", m.Name, len(r),
			r[0].Parameters, 100*float64(r[0].Parameters)/float64(r[0].DetParams), r[0].FileBytes,
			cell(pick(r, func(x *result) float64 { return x.Clean.Accuracy }), 100, "%.2f"),
			cell(pick(r, func(x *result) float64 { return x.Clean.NLL }), 1, "%.4f"),
			cell(pick(r, func(x *result) float64 { return x.Clean.ECE }), 100, "%.2f"),
			paperNum(m.PaperRel, "%.1f %%"), paperNum(m.PaperAcc, "%.2f"), paperNum(m.PaperECE, "%.2f"))
	}
	fmt.Fprintf(w, "\nOOD detection (AUROC; in-distribution: the test images of classes 0–4). Paper 003 Table 3: CIFAR-10 → CIFAR-100 and → SVHN, by max probability.\n\n")
	fmt.Fprintln(w, "| method | classes 5–9: entropy | MI | max prob | digits: entropy | MI | max prob | paper: C10→C100 | paper: C10→SVHN |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for m, r := range rows {
		row := "| " + m.Name
		for _, set := range oodSets {
			for _, s := range scores {
				row += " | " + cell(pick(r, func(x *result) float64 { return x.OOD[set][s] }), 1, "%.3f")
			}
		}
		fmt.Fprintf(w, "%s | %s | %s |\n", row, paperNum(m.PaperC100, "%.2f"), paperNum(m.PaperSVHN, "%.2f"))
	}
	if !corrupt {
		fmt.Fprintf(w, "\n(corruptions not evaluated: -no-corrupt)\n")
		return
	}
	for _, t := range []struct {
		name   string
		metric func(metrics) float64
		paper  func(method) [5]float64
	}{
		{"Accuracy %", acc, func(m method) [5]float64 { return m.PaperCAcc }},
		{"ECE %", ece, func(m method) [5]float64 { return m.PaperCECE }},
	} {
		n := "all 5000"
		if limit > 0 {
			n = fmt.Sprintf("the first %d", limit)
		}
		fmt.Fprintf(w, "\n%s on Fashion-MNIST-C (%s test images of classes 0–4 per corruption and severity, 0 = the clean 5000; mean over the %d corruptions of data.Corrupt, then mean ± s.e. over seeds). Paper 003 Tables 11–12: CIFAR-10-C, ResNet-50.\n\n", t.name, n, len(data.Corruptions()))
		fmt.Fprintln(w, "| method | 0 | 1 | 2 | 3 | 4 | 5 | paper: 1 | 2 | 3 | 4 | 5 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for m, r := range rows {
			row := "| " + m.Name
			for s := 0; s <= data.MaxSeverity; s++ {
				row += " | " + cell(pick(r, func(x *result) float64 { return severityMean(x, s, t.metric) }), 100, "%.2f")
			}
			for _, v := range t.paper(m) {
				row += " | " + paperNum(v, "%.2f")
			}
			fmt.Fprintln(w, row+" |")
		}
	}
	fmt.Fprintf(w, "\nPer corruption at severity 5: accuracy %% / ECE %% (mean ± s.e. over seeds).\n\n")
	fmt.Fprint(w, "| method")
	for _, c := range data.Corruptions() {
		fmt.Fprintf(w, " | %s", c)
	}
	fmt.Fprintln(w, " |")
	fmt.Fprintln(w, "|---"+strings.Repeat("|---:", len(data.Corruptions()))+"|")
	for m, r := range rows {
		row := "| " + m.Name
		for _, c := range data.Corruptions() {
			a := cell(pick(r, func(x *result) float64 { return x.Corrupt[sevtab.Key(c, 5)].Accuracy }), 100, "%.1f")
			e := cell(pick(r, func(x *result) float64 { return x.Corrupt[sevtab.Key(c, 5)].ECE }), 100, "%.1f")
			row += " | " + a + " / " + e
		}
		fmt.Fprintln(w, row+" |")
	}
}

// colours of the methods, in the order of allMethods.
var colours = []color.Color{color.Black, trainplot.Orange, trainplot.Red, trainplot.Blue, trainplot.Purple, trainplot.Green,
	trainplot.Brown, trainplot.Pink, color.Gray{Y: 128}}

// colourOf returns m's colour: the same for a method whichever -methods are drawn.
func colourOf(m method) color.Color {
	for i, a := range allMethods {
		if a.Key == m.Key {
			return colours[i%len(colours)]
		}
	}
	return color.Black
}

// severityPlot draws accuracy and ECE (mean over corruptions, mean over seeds, ± s.e. error bars)
// against severity 0–5, one line per method, side by side, and writes a PNG.
func severityPlot(path string, methods []method, net network, entries []*entry) error {
	rows := evaluated(methods, entries)
	classes := "classes 0–4"
	if net.Short != "" {
		classes = net.Short + ", " + classes
	}
	var panels []sevtab.Panel
	for _, panel := range []struct {
		title, ylabel string
		metric        func(metrics) float64
	}{
		{"Fashion-MNIST-C accuracy (" + classes + ")", "accuracy (%)", func(m metrics) float64 { return m.Accuracy }},
		{"Fashion-MNIST-C ECE (" + classes + ")", "ECE (%)", func(m metrics) float64 { return m.ECE }},
	} {
		// The empty corners: bottom left for accuracy, top left for ECE.
		pn := sevtab.Panel{Title: panel.title, XLabel: "severity (mean over 9 corruptions; 0 = clean)", YLabel: panel.ylabel,
			LegendTop: panel.ylabel == "ECE (%)"}
		for m, r := range rows {
			ln := sevtab.Line{Name: m.Name, Color: colourOf(m)}
			for s := 0; s <= data.MaxSeverity; s++ {
				mean, se := meanSE(pick(r, func(x *result) float64 { return 100 * severityMean(x, s, panel.metric) }))
				ln.Y, ln.Err = append(ln.Y, mean), append(ln.Err, se)
			}
			pn.Lines = append(pn.Lines, ln)
		}
		panels = append(panels, pn)
	}
	return sevtab.Plot(path, panels, 2, 13*vg.Inch, 5*vg.Inch)
}
