// Command prunetab summarises bench/prunetab.sh: it reads the per-model results (JSON lines),
// prints the Markdown table of paper 003's Tables 7–8 shape (mean ± standard error over seeds,
// the paper's CIFAR-10 numbers beside) and draws accuracy and ECE against file bytes.
//
// With -corrupt (bench/prunedc.sh) it instead evaluates the same model files on Fashion-MNIST-C
// and prints paper 003's Tables 15–18 shape: see corrupt.go.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// result is one evaluated model file.
type result struct {
	Method       string  `json:"method"`
	Keep         float64 `json:"keep"`
	Seed         int     `json:"seed"`
	Finetuned    bool    `json:"finetuned"`
	Path         string  `json:"path"` // the model file (bench/prunetab.sh records it since -corrupt)
	Bytes        float64 `json:"bytes"`
	Parameters   float64 `json:"parameters"`
	Accuracy     float64 `json:"accuracy"`
	NLL          float64 `json:"nll"`
	ECE          float64 `json:"ece"`
	Brier        float64 `json:"brier"`
	AUROCMaxProb float64 `json:"auroc_maxprob"`
	AUROCEntropy float64 `json:"auroc_entropy"`
	// Archived marks a row of an archive (-archive): Path is then the file name of a model that
	// was not kept, beside the results file, and its evaluation is <name>.corrupt.json there.
	Archived bool `json:"archived,omitempty"`
}

// paperRow is paper 003's ResNet-50 / CIFAR-10 row (Table 7: accuracy %, NLL, ECE %; Table 8:
// AUROC C10 → C100 and C10 → SVHN).
type paperRow struct{ acc, nll, ece, aurocC100, aurocSVHN string }

var paper = map[string]paperRow{
	"FFG-W 1":     {"94.13", "0.18", "0.50", ".88", ".90"},
	"FFG-W 0.5":   {"94.07", "0.18", "0.40", ".88", ".90"},
	"FFG-W 0.1":   {"94.17", "0.18", "0.58", ".88", ".90"},
	"FFG-W 0.01":  {"93.60", "0.19", "0.80", ".88", ".90"},
	"FFG-W 0.001": {"58.59", "1.15", "7.33", ".65", ".38"},
	"FFG-U 1":     {"94.40", "0.17", "0.64", ".89", ".94"},
	"FFG-U 0.75":  {"94.45", "0.18", "2.19", ".89", ".94"},
	"FFG-U 0.5":   {"94.31", "0.18", "2.31", ".89", ".93"},
	"FFG-U 0.25":  {"93.34", "0.22", "4.83", ".88", ".92"},
}

type group struct {
	method    string
	keep      float64
	finetuned bool
	rs        []result
}

func meanSE(rs []result, f func(result) float64) (m, se float64) {
	for _, r := range rs {
		m += f(r)
	}
	m /= float64(len(rs))
	if len(rs) < 2 {
		return m, math.NaN()
	}
	ss := 0.0
	for _, r := range rs {
		ss += (f(r) - m) * (f(r) - m)
	}
	return m, math.Sqrt(ss / float64(len(rs)-1) / float64(len(rs)))
}

func cell(rs []result, f func(result) float64, format string) string {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return eval.FormatMeanSE(xs, format)
}

func main() {
	var results resultFiles
	flag.Var(&results, "results", "the per-model results (JSON lines; default runs/prunetab/results.jsonl); given more than once, the files are read as one")
	png := flag.String("png", "docs/img/prunetab.png", "write the plot here")
	epochs := flag.Int("epochs", 12, "training epochs (for the caption)")
	finetune := flag.Int("finetune", 1, "fine-tuning epochs (for the caption)")
	ftlr := flag.String("finetune-lr", "3e-4", "fine-tuning learning rate (for the caption)")
	ftlimit := flag.Int("finetune-limit", 20000, "training images of the fine-tuning epochs (for the caption)")
	samples := flag.Int("samples", 16, "Monte Carlo samples of the evaluation (for the caption)")
	model := flag.String("model", "mlp", "the network pruned, for the captions: mlp (784-256-256-10) or resnet (the residual CNN of bench/uvsw.sh --model resnet, classes 0–4)")
	corrupt := flag.Bool("corrupt", false, "evaluate the models on Fashion-MNIST-C instead (paper 003 Tables 15–18; bench/prunedc.sh)")
	var co corruptOptions
	flag.IntVar(&co.samples, "corrupt-samples", 8, "with -corrupt: Monte Carlo samples per prediction")
	flag.IntVar(&co.limit, "corrupt-limit", 0, "with -corrupt: evaluate on the first N test images, clean and corrupted (0: all 10 000)")
	flag.Uint64Var(&co.seed, "corrupt-seed", 42, "with -corrupt: the corruption and sampling seed")
	flag.StringVar(&co.dataDir, "data-dir", data.DefaultFashionMNISTDir, "with -corrupt: directory of the Fashion-MNIST IDX files")
	flag.StringVar(&co.png, "corrupt-png", "", "with -corrupt: write the accuracy/ECE-against-severity plot here")
	flag.BoolVar(&co.force, "force", false, "with -corrupt: re-evaluate models that have a cached evaluation")
	flag.StringVar(&co.archive, "archive", "", "with -corrupt: also write the results and the evaluations the tables were made from (not the models) into this directory, to be read again with -results DIR/results.jsonl")
	flag.Parse()
	// Outputs that cannot be written are refused before the evaluations, not after them.
	if err := outfile.CheckOutputs("prunetab: ", outfile.Output{Flag: "-png", Path: *png}, outfile.Output{Flag: "-corrupt-png", Path: co.png}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	net, ok := networks[*model]
	if !ok {
		fmt.Fprintf(os.Stderr, "prunetab: -model is mlp or resnet, not %q\n", *model)
		os.Exit(2)
	}
	if *corrupt {
		co.caption = fmt.Sprintf("Fashion-MNIST %s, %d epochs; the pruned models fine-tuned %d epoch(s) of %s at lr %s where the kept column says so",
			net.Caption, *epochs, *finetune, trainingImages(*ftlimit), *ftlr)
		if err := runCorrupt(results.list(), co, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "prunetab:", err)
			os.Exit(1)
		}
		return
	}
	caption := fmt.Sprintf("Fashion-MNIST %s, %d epochs; fine-tuning %d epoch(s) of %s%s at lr %s; "+
		"%d samples per prediction; OOD: scikit-learn's digits. Mean ± s.e. over seeds. Paper: ResNet-50 on CIFAR-10 (Tables 7–8, "+
		"fine-tuned 50 epochs at 1e-4), not comparable in absolute terms.", net.Caption, *epochs, *finetune, trainingImages(*ftlimit), net.Of, *ftlr, *samples)
	if err := run(results.list(), *png, caption, net); err != nil {
		fmt.Fprintln(os.Stderr, "prunetab:", err)
		os.Exit(1)
	}
}

// resultFiles is the -results flag: every file it was given, in order.
type resultFiles []string

func (r *resultFiles) String() string { return strings.Join(*r, " ") }

func (r *resultFiles) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// list returns the files, or the default when none was given.
func (r resultFiles) list() []string {
	if len(r) == 0 {
		return []string{"runs/prunetab/results.jsonl"}
	}
	return r
}

// trainingImages names the fine-tuning's training set in the captions: the first limit
// training images, all of them for limit 0 (edgebnn train --train-limit 0).
func trainingImages(limit int) string {
	if limit <= 0 {
		return "all the training images"
	}
	return fmt.Sprintf("the first %d training images", limit)
}

// network is a -model: what the captions and the plot's titles call it.
type network struct {
	Caption string // in the captions
	Of      string // after "training images" in the caption: the classes fine-tuned on
	Title   string // the plot's titles start "Fashion-MNIST <Title>: "
}

// networks are the -model values.
var networks = map[string]network{
	"mlp": {Caption: "MLP 784-256-256-10", Title: "MLP"},
	"resnet": {Caption: "residual CNN of bench/configs/fmnist_resnet5_arch.json (bench/uvsw.sh --model resnet), classes 0–4",
		Of: " of classes 0–4", Title: "residual CNN"},
}

func run(paths []string, png, caption string, net network) error {
	groups, err := load(paths)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n\n", caption)
	fmt.Println("| method | kept | fine-tuned | seeds | stored parameters | file bytes | accuracy % | NLL | ECE % | Brier | OOD AUROC max prob | OOD AUROC entropy | paper acc % / NLL / ECE % / AUROC C10→C100, →SVHN |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	// The paper's rows are fine-tuned: print them beside our fine-tuned row, or beside the plain
	// one when that setting was not fine-tuned.
	tuned := map[string]bool{}
	for _, g := range groups {
		if g.finetuned {
			tuned[fmt.Sprintf("%s %g", g.method, g.keep)] = true
		}
	}
	for _, g := range groups {
		pr := "—"
		key := fmt.Sprintf("%s %g", g.method, g.keep)
		if p, ok := paper[key]; ok && (g.finetuned || !tuned[key]) {
			pr = fmt.Sprintf("%s / %s / %s / %s, %s", p.acc, p.nll, p.ece, p.aurocC100, p.aurocSVHN)
		}
		ft := "no"
		if g.finetuned {
			ft = "yes"
		}
		what := "weights"
		if strings.HasPrefix(g.method, "FFG-U") {
			what = "of Z"
		}
		pm, _ := meanSE(g.rs, func(r result) float64 { return r.Parameters })
		bm, _ := meanSE(g.rs, func(r result) float64 { return r.Bytes })
		fmt.Printf("| %s | %.4g %% %s | %s | %d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s |\n",
			g.method, 100*g.keep, what, ft, len(g.rs), pm, bm,
			cell(g.rs, func(r result) float64 { return 100 * r.Accuracy }, "%.2f"),
			cell(g.rs, func(r result) float64 { return r.NLL }, "%.3f"),
			cell(g.rs, func(r result) float64 { return 100 * r.ECE }, "%.2f"),
			cell(g.rs, func(r result) float64 { return r.Brier }, "%.3f"),
			cell(g.rs, func(r result) float64 { return r.AUROCMaxProb }, "%.3f"),
			cell(g.rs, func(r result) float64 { return r.AUROCEntropy }, "%.3f"),
			pr)
	}
	if png == "" {
		return nil
	}
	return draw2(png, groups, net)
}

// load reads the per-model results and groups them by method, kept fraction and fine-tuning,
// sorted by method, then kept fraction (largest first), the plain row before the fine-tuned one.
//
// paths are one results file or several read as one (the runs of one table split by seed over
// several directories, bench/prunetab.sh --first-seed); the model paths of an archive's rows
// (-archive) are relative to its directory, the others as bench/prunetab.sh wrote them.
func load(paths []string) ([]*group, error) {
	var groups []*group
	find := func(r result) *group {
		for _, g := range groups {
			if g.method == r.Method && g.keep == r.Keep && g.finetuned == r.Finetuned {
				return g
			}
		}
		g := &group{method: r.Method, keep: r.Keep, finetuned: r.Finetuned}
		groups = append(groups, g)
		return g
	}
	type key struct {
		method string
		keep   float64
		seed   int
		ft     bool
	}
	seen := map[key]string{}
	read := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		rows := 0
		for line := 1; sc.Scan(); line++ {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
			k := key{r.Method, r.Keep, r.Seed, r.Finetuned}
			if prev, ok := seen[k]; ok {
				return fmt.Errorf("%s:%d: %s kept %g seed %d (fine-tuned %v) is already in %s", path, line, r.Method, r.Keep, r.Seed, r.Finetuned, prev)
			}
			seen[k] = fmt.Sprintf("%s:%d", path, line)
			if r.Archived {
				if r.Path == "" || r.Path != filepath.Base(r.Path) {
					return fmt.Errorf("%s:%d: an archived row's path must be a file name, not %q", path, line, r.Path)
				}
				r.Path = filepath.Join(filepath.Dir(path), r.Path)
			}
			g := find(r)
			g.rs = append(g.rs, r)
			rows++
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if rows == 0 && len(paths) > 1 {
			return fmt.Errorf("%s: no results", path) // a part of a merged run missing
		}
		return nil
	}
	for _, path := range paths {
		if err := read(path); err != nil {
			return nil, err
		}
	}
	if len(groups) == 0 {
		return nil, errors.New("no results")
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.method != b.method {
			return a.method < b.method
		}
		if a.keep != b.keep {
			return a.keep > b.keep
		}
		return !a.finetuned && b.finetuned
	})
	return groups, nil
}

// draw2 plots accuracy and ECE (means over seeds) against file bytes, one line per method and
// fine-tuning.
func draw2(path string, groups []*group, net network) error {
	type line struct {
		name string
		pts  [2]plotter.XYs
	}
	var lines []*line
	get := func(name string) *line {
		for _, l := range lines {
			if l.name == name {
				return l
			}
		}
		l := &line{name: name}
		lines = append(lines, l)
		return l
	}
	for _, g := range groups {
		family := "FFG-W (|μ|/σ)"
		if strings.HasPrefix(g.method, "FFG-U") {
			family = "FFG-U (Z)"
		}
		if g.finetuned {
			family += ", fine-tuned"
		}
		l := get(family)
		bm, _ := meanSE(g.rs, func(r result) float64 { return r.Bytes })
		am, _ := meanSE(g.rs, func(r result) float64 { return 100 * r.Accuracy })
		em, _ := meanSE(g.rs, func(r result) float64 { return 100 * r.ECE })
		l.pts[0] = append(l.pts[0], plotter.XY{X: bm, Y: am})
		l.pts[1] = append(l.pts[1], plotter.XY{X: bm, Y: em})
		// The unpruned models belong to both the plain and the fine-tuned curves.
		if g.keep == 1 && !g.finetuned {
			l2 := get(family + ", fine-tuned")
			l2.pts[0] = append(l2.pts[0], plotter.XY{X: bm, Y: am})
			l2.pts[1] = append(l2.pts[1], plotter.XY{X: bm, Y: em})
		}
	}
	colors := trainplot.Tableau[:4]
	var plots [2]*plot.Plot
	for k, ylabel := range []string{"accuracy (%)", "ECE (%)"} {
		p := plot.New()
		p.Title.Text = "Fashion-MNIST " + net.Title + ": " + strings.Split(ylabel, " ")[0] + " against file bytes"
		p.X.Label.Text, p.Y.Label.Text = "model file bytes (log scale)", ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		for i, l := range lines {
			pts := append(plotter.XYs(nil), l.pts[k]...)
			sort.Slice(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
			lp, sp, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			c := colors[i%len(colors)]
			lp.Color, sp.Color = c, c
			lp.Width = vg.Points(1.5)
			if strings.HasSuffix(l.name, "fine-tuned") {
				lp.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(lp, sp)
			p.Legend.Add(l.name, lp, sp)
		}
		p.Legend.Top = k == 1
		p.Legend.Left = k == 0
		plots[k] = p
	}
	const w, h = 12 * vg.Inch, 4.5 * vg.Inch
	return trainplot.SaveGrid(path, [][]*plot.Plot{{plots[0], plots[1]}}, w, h, vgimg.DefaultDPI, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4})
}
