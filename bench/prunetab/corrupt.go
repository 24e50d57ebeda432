package main

// The -corrupt mode (bench/prunedc.sh, issue 20 item 6): paper 003's Tables 15–18 — accuracy and
// ECE of pruned FFG-W and FFG-U models on corrupted data against the skew intensity — on
// Fashion-MNIST-C. It takes the model files bench/prunetab.sh made (their paths are in its
// results.jsonl), one per pruning level and seed: the fine-tuned model where the level was
// fine-tuned (the paper's rows are all fine-tuned), the plain one otherwise (the unpruned models,
// and the levels prunetab.sh does not fine-tune). Every model is evaluated through the runtime on
// the first -corrupt-limit test images, clean and under each corruption of data.Corruptions at
// severities 1–5 (data.Corrupt, seed -corrupt-seed; each corrupted set built once for all models),
// with -corrupt-samples Monte Carlo samples, so each number is the one `edgebnn eval --samples K
// --seed S --test-limit L --data fmnist-c:C:S MODEL` prints. Each model's numbers are cached in
// <model>.corrupt.json beside it, reused while newer than the model and made with the same
// samples, seed and limit.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edgebnn/edgebnn/bench/internal/sevtab"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot/vg"
)

// corruptOptions are the -corrupt mode's settings.
type corruptOptions struct {
	samples, limit int
	seed           uint64
	dataDir, png   string
	force          bool
	caption        string // the models' training and fine-tuning, for the tables' captions
	archive        string // write the results and evaluations of the table's models here
}

// paperCorrupt is paper 003's ResNet-50 CIFAR-10-C row for a pruning level (Table 15: accuracy
// %, Table 16: ECE %, skew intensities 1–5; mean over the 19 corruptions, all rows fine-tuned
// 50 epochs after pruning). Its ± (over the corruptions, not over seeds) is left out.
type paperCorrupt struct{ acc, ece [5]float64 }

var paperC10 = map[string]paperCorrupt{
	"FFG-W 1":     {[5]float64{83.80, 76.22, 69.30, 61.82, 50.72}, [5]float64{13.05, 12.14, 11.56, 10.77, 10.86}},
	"FFG-W 0.5":   {[5]float64{83.39, 75.58, 68.43, 60.69, 49.75}, [5]float64{14.27, 13.19, 12.36, 11.59, 11.43}},
	"FFG-W 0.1":   {[5]float64{84.04, 76.21, 69.35, 61.65, 50.51}, [5]float64{12.50, 11.66, 11.33, 10.86, 11.28}},
	"FFG-W 0.01":  {[5]float64{84.16, 76.48, 69.72, 62.72, 51.26}, [5]float64{9.86, 9.17, 8.85, 8.87, 11.10}},
	"FFG-W 0.001": {[5]float64{46.33, 41.92, 38.91, 36.03, 32.43}, [5]float64{10.08, 7.82, 6.74, 7.34, 8.77}},
	"FFG-U 1":     {[5]float64{86.90, 80.33, 74.34, 67.23, 57.00}, [5]float64{2.47, 4.93, 7.77, 11.27, 16.16}},
	"FFG-U 0.75":  {[5]float64{86.99, 80.64, 74.99, 67.87, 57.33}, [5]float64{2.79, 3.92, 5.27, 7.63, 11.80}},
	"FFG-U 0.5":   {[5]float64{86.93, 80.70, 75.10, 68.14, 57.66}, [5]float64{3.11, 4.26, 5.44, 7.58, 11.38}},
	"FFG-U 0.25":  {[5]float64{85.93, 79.41, 73.48, 66.52, 55.57}, [5]float64{5.27, 5.33, 6.20, 7.95, 11.19}},
}

// cmetrics are one evaluation's numbers.
type cmetrics struct {
	Accuracy float64 `json:"accuracy"`
	NLL      float64 `json:"nll"`
	ECE      float64 `json:"ece"`
}

// corruptResult is one model's evaluation (the cache file's content).
type corruptResult struct {
	Model   string              `json:"model"`
	Samples int                 `json:"samples"`
	Seed    uint64              `json:"seed"`
	Limit   int                 `json:"limit"` // test images per set (0: all 10 000)
	Clean   cmetrics            `json:"clean"`
	Corrupt map[string]cmetrics `json:"corrupt"` // sevtab.Key(corruption, severity) → numbers
}

// complete reports whether r has every corrupted set.
func (r *corruptResult) complete() bool {
	for _, c := range data.Corruptions() {
		for s := 1; s <= data.MaxSeverity; s++ {
			if _, ok := r.Corrupt[sevtab.Key(c, s)]; !ok {
				return false
			}
		}
	}
	return true
}

// at is metric at severity s: the clean number at 0, else the mean over the corruptions.
func (r *corruptResult) at(s int, metric func(cmetrics) float64) float64 {
	return sevtab.SeverityMean(r.Clean, r.Corrupt, s, metric)
}

// corruptRows picks one group per method and kept fraction: the fine-tuned one where there is
// one, else the plain one, in the order of groups.
func corruptRows(groups []*group) []*group {
	var out []*group
	at := map[string]int{}
	for _, g := range groups {
		k := fmt.Sprintf("%s %g", g.method, g.keep)
		if i, ok := at[k]; ok {
			if g.finetuned {
				out[i] = g
			}
			continue
		}
		at[k] = len(out)
		out = append(out, g)
	}
	return out
}

// family is "FFG-U" for FFG-U and its matched rows, else the method.
func family(method string) string {
	if strings.HasPrefix(method, "FFG-U") {
		return "FFG-U"
	}
	return method
}

func runCorrupt(paths []string, o corruptOptions, w io.Writer) error {
	if o.samples < 1 || o.limit < 0 {
		return fmt.Errorf("-corrupt-samples must be positive and -corrupt-limit not negative")
	}
	groups, err := load(paths)
	if err != nil {
		return err
	}
	rows := corruptRows(groups)
	res, err := evaluateCorrupt(rows, o)
	if err != nil {
		return err
	}
	corruptTables(w, rows, res, o)
	if o.archive != "" {
		if err := archiveCorrupt(o.archive, groups, res); err != nil {
			return err
		}
	}
	if o.png == "" {
		return nil
	}
	return corruptPlot(o.png, rows, res)
}

// archiveCorrupt writes into dir what the tables were made from, without the models: every
// result line of groups (model paths reduced to the file's name) to dir/results.jsonl, and each
// evaluated model's cached evaluation beside it as <name>.corrupt.json. `-corrupt -results
// dir/results.jsonl` with the same -corrupt-samples, -corrupt-seed and -corrupt-limit prints the
// same tables from it, and bench/prunetab without -corrupt the clean table: a long run kept in
// the repository (docs/results/prunedc50/), or parts of one run on different machines merged.
func archiveCorrupt(dir string, groups []*group, res map[string]*corruptResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var lines []byte
	names := map[string]string{}
	for _, g := range groups {
		for _, r := range g.rs {
			name := filepath.Base(r.Path)
			if prev, ok := names[name]; ok && prev != r.Path {
				return fmt.Errorf("-archive: two models named %s (%s and %s)", name, prev, r.Path)
			}
			names[name] = r.Path
			a := r
			a.Path, a.Archived = name, true
			raw, err := json.Marshal(a)
			if err != nil {
				return err
			}
			lines = append(append(lines, raw...), '\n')
			c, ok := res[r.Path]
			if !ok {
				continue // a plain model of a fine-tuned level: in the clean table only
			}
			c2 := *c
			c2.Model = name
			raw, err = json.MarshalIndent(&c2, "", "  ")
			if err != nil {
				return err
			}
			cache := filepath.Join(dir, strings.TrimSuffix(name, ".ebnn")+".corrupt.json")
			if err := outfile.WriteBytes(context.Background(), cache, append(raw, '\n')); err != nil {
				return fmt.Errorf("-archive: %w", err)
			}
		}
	}
	if err := outfile.WriteBytes(context.Background(), filepath.Join(dir, "results.jsonl"), lines); err != nil {
		return fmt.Errorf("-archive: %w", err)
	}
	return nil
}

// evaluateCorrupt returns every model's evaluation by path, from its cache or evaluated now.
func evaluateCorrupt(rows []*group, o corruptOptions) (map[string]*corruptResult, error) {
	res := map[string]*corruptResult{}
	type job struct {
		model *runtime.Model
		path  string
	}
	var pending []job
	defer func() {
		for _, j := range pending {
			j.model.Close()
		}
	}()
	for _, g := range rows {
		for _, r := range g.rs {
			if r.Path == "" {
				return nil, fmt.Errorf("%s seed %d: no model path in the results (rerun bench/prunetab.sh)", g.method, r.Seed)
			}
			if c := cachedCorrupt(r.Path, r.Archived, o); c != nil {
				res[r.Path] = c
				continue
			}
			m, err := runtime.Load(r.Path)
			if err != nil {
				return nil, err
			}
			pending = append(pending, job{m, r.Path})
			res[r.Path] = &corruptResult{Model: r.Path, Samples: o.samples, Seed: o.seed, Limit: o.limit, Corrupt: map[string]cmetrics{}}
		}
	}
	if len(pending) == 0 {
		return res, nil
	}
	// The first L images (FashionMNISTHead reads no more): the same as corrupting all and keeping
	// the first L, as every image is corrupted from its own stream.
	test, err := data.FashionMNISTHead(o.dataDir, "test", o.limit)
	if err != nil {
		return nil, err
	}
	opt := runtime.Options{Samples: o.samples, Seed: o.seed, Strategy: runtime.Auto, MaxBatch: 100}
	evalAll := func(d *data.Dataset, put func(r *corruptResult, m cmetrics)) error {
		for _, j := range pending {
			rep, err := eval.Evaluate(j.model, d, nil, opt)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", j.path, d.Name, err)
			}
			c := rep.Classification
			put(res[j.path], cmetrics{Accuracy: c.Accuracy, NLL: c.NLL, ECE: c.ECE})
		}
		return nil
	}
	fmt.Fprintf(os.Stderr, "prunetab: evaluating %d models on %d images × (1 + %d corrupted sets)\n", len(pending), test.N, 5*len(data.Corruptions()))
	if err := evalAll(test, func(r *corruptResult, m cmetrics) { r.Clean = m }); err != nil {
		return nil, err
	}
	err = sevtab.Sweep(test, o.seed, nil, func(c string, s int, d *data.Dataset) error {
		if s == data.MaxSeverity {
			fmt.Fprintf(os.Stderr, "prunetab: %s done\n", c)
		}
		return evalAll(d, func(r *corruptResult, m cmetrics) { r.Corrupt[sevtab.Key(c, s)] = m })
	})
	if err != nil {
		return nil, err
	}
	for _, j := range pending {
		raw, err := json.MarshalIndent(res[j.path], "", "  ")
		if err != nil {
			return nil, err
		}
		cache := strings.TrimSuffix(j.path, ".ebnn") + ".corrupt.json"
		if err := outfile.WriteBytes(context.Background(), cache, append(raw, '\n')); err != nil {
			return nil, fmt.Errorf("write %s: %w", cache, err)
		}
	}
	return res, nil
}

// cachedCorrupt returns the cached evaluation of the model at path if it is usable: made with
// o's samples, seed and limit, complete, and newer than the model — or, for an archived row whose
// model file does not exist, the archive's evaluation (-archive: the numbers of a model not kept).
func cachedCorrupt(path string, archived bool, o corruptOptions) *corruptResult {
	cache := strings.TrimSuffix(path, ".ebnn") + ".corrupt.json"
	ms, err1 := os.Stat(path)
	cs, err2 := os.Stat(cache)
	gone := archived && errors.Is(err1, fs.ErrNotExist)
	if o.force || err2 != nil || err1 != nil && !gone || err1 == nil && !cs.ModTime().After(ms.ModTime()) {
		return nil
	}
	raw, err := os.ReadFile(cache)
	if err != nil {
		return nil
	}
	var r corruptResult
	if json.Unmarshal(raw, &r) != nil || r.Samples != o.samples || r.Seed != o.seed || r.Limit != o.limit || !r.complete() {
		return nil
	}
	return &r
}

func keptLabel(g *group) string {
	what := "weights"
	if family(g.method) == "FFG-U" {
		what = "of Z"
	}
	ft := ""
	if g.finetuned {
		ft = ", fine-tuned"
	}
	return fmt.Sprintf("%.4g %% %s%s", 100*g.keep, what, ft)
}

// corruptTables writes the accuracy and ECE tables (Tables 15/16 shape, the paper's CIFAR-10 rows
// beside) and the paired difference from the unpruned model of the same seed.
func corruptTables(w io.Writer, rows []*group, res map[string]*corruptResult, o corruptOptions) {
	n := "all 10000"
	if o.limit > 0 {
		n = fmt.Sprintf("the first %d", o.limit)
	}
	acc := func(m cmetrics) float64 { return m.Accuracy }
	ece := func(m cmetrics) float64 { return m.ECE }
	for _, t := range []struct {
		name   string
		metric func(cmetrics) float64
		paper  func(paperCorrupt) [5]float64
		table  string
	}{
		{"Accuracy %", acc, func(p paperCorrupt) [5]float64 { return p.acc }, "15"},
		{"ECE %", ece, func(p paperCorrupt) [5]float64 { return p.ece }, "16"},
	} {
		fmt.Fprintf(w, "%s on Fashion-MNIST-C of the pruned models (%s; %s test images per set, %d samples per prediction; severity 0 = clean, 1–5 the mean over the %d corruptions of data.Corrupt; mean ± s.e. over seeds). Paper 003 Table %s: ResNet-50 on CIFAR-10-C, every row fine-tuned 50 epochs.\n\n",
			t.name, o.caption, n, o.samples, len(data.Corruptions()), t.table)
		fmt.Fprintln(w, "| method | kept | seeds | stored parameters | 0 | 1 | 2 | 3 | 4 | 5 | paper: 1 | 2 | 3 | 4 | 5 |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, g := range rows {
			pm, _ := meanSE(g.rs, func(r result) float64 { return r.Parameters })
			row := fmt.Sprintf("| %s | %s | %d | %.0f", g.method, keptLabel(g), len(g.rs), pm)
			for s := 0; s <= data.MaxSeverity; s++ {
				row += " | " + cell(g.rs, func(r result) float64 { return 100 * res[r.Path].at(s, t.metric) }, "%.2f")
			}
			if p, ok := paperC10[fmt.Sprintf("%s %g", g.method, g.keep)]; ok {
				for _, v := range t.paper(p) {
					row += fmt.Sprintf(" | %.2f", v)
				}
			} else {
				row += strings.Repeat(" | —", 5)
			}
			fmt.Fprintln(w, row+" |")
		}
		fmt.Fprintln(w)
	}
	// The paired difference from the unpruned model of the same family and seed.
	ref := map[string]map[int]string{} // family → seed → unpruned model path
	for _, g := range rows {
		if g.keep == 1 && g.method == family(g.method) {
			ref[g.method] = map[int]string{}
			for _, r := range g.rs {
				ref[g.method][r.Seed] = r.Path
			}
		}
	}
	fmt.Fprintf(w, "Pruned minus unpruned (the same family and seed; percentage points, mean ± s.e. over seeds): accuracy and ECE on the clean images (severity 0), averaged over severities 1–5, and at severity 5.\n\n")
	fmt.Fprintln(w, "| method | kept | Δ accuracy clean | Δ accuracy sev. 1–5 | Δ accuracy sev. 5 | Δ ECE clean | Δ ECE sev. 1–5 | Δ ECE sev. 5 |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, g := range rows {
		fam := family(g.method)
		if g.keep == 1 && g.method == fam || ref[fam] == nil {
			continue
		}
		var paired []result // seeds that have an unpruned model
		for _, r := range g.rs {
			if _, ok := ref[fam][r.Seed]; ok {
				paired = append(paired, r)
			}
		}
		if len(paired) == 0 {
			continue
		}
		row := fmt.Sprintf("| %s | %s", g.method, keptLabel(g))
		for _, metric := range []func(cmetrics) float64{acc, ece} {
			for _, sev := range [][]int{{0}, {1, 2, 3, 4, 5}, {5}} {
				d := func(r result) float64 {
					t := 0.0
					for _, s := range sev {
						t += res[r.Path].at(s, metric) - res[ref[fam][r.Seed]].at(s, metric)
					}
					return 100 * t / float64(len(sev))
				}
				row += " | " + cell(paired, d, "%.2f")
			}
		}
		fmt.Fprintln(w, row+" |")
	}
}

// corruptPlot draws accuracy and ECE against severity, one line per pruning level, FFG-W in the
// top row and FFG-U (with its matched rows) in the bottom one.
func corruptPlot(path string, rows []*group, res map[string]*corruptResult) error {
	palette := append([]color.Color{color.Black}, trainplot.Tableau...)
	var panels []sevtab.Panel
	for _, fam := range []string{"FFG-W", "FFG-U"} {
		if !slices.ContainsFunc(rows, func(g *group) bool { return family(g.method) == fam }) {
			continue // a family without rows (bench/appk.sh's FFG-U only) gets no empty panels
		}
		for _, m := range []struct {
			name   string
			metric func(cmetrics) float64
		}{
			{"accuracy (%)", func(m cmetrics) float64 { return m.Accuracy }},
			{"ECE (%)", func(m cmetrics) float64 { return m.ECE }},
		} {
			what := "|μ|/σ"
			if fam == "FFG-U" {
				what = "Z"
			}
			pn := sevtab.Panel{Title: fmt.Sprintf("%s pruned by %s: Fashion-MNIST-C %s", fam, what, strings.Fields(m.name)[0]),
				XLabel: "severity (mean over 9 corruptions; 0 = clean)", YLabel: m.name, LegendTop: m.name == "ECE (%)"}
			for _, g := range rows {
				if family(g.method) != fam {
					continue
				}
				name := keptLabel(g)
				if g.method != fam {
					name = g.method + ": " + name
				}
				ln := sevtab.Line{Name: name, Color: palette[len(pn.Lines)%len(palette)], Dashed: g.method != fam}
				for s := 0; s <= data.MaxSeverity; s++ {
					mean, se := meanSE(g.rs, func(r result) float64 { return 100 * res[r.Path].at(s, m.metric) })
					ln.Y, ln.Err = append(ln.Y, mean), append(ln.Err, se)
				}
				pn.Lines = append(pn.Lines, ln)
			}
			panels = append(panels, pn)
		}
	}
	return sevtab.Plot(path, panels, 2, 13*vg.Inch, 5*vg.Inch*vg.Length(len(panels)/2))
}
