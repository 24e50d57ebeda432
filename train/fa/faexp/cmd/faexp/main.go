// Command faexp runs the factor-analysis validation experiments of train/fa/faexp and prints the
// numbers that docs/RESULTS.md quotes.
//
//	faexp -exp linear   -seeds 10            # VIFA vs closed-form posterior (paper 000 §4.1)
//	faexp -exp logistic -seeds 10            # VIFA vs grid posterior (appendix B.2)
//	faexp -exp online -d 100 -lo 1 -hi 10 -seeds 10 -out DIR   # one JSON file per seed
//	faexp -exp report -out DIR -png docs/fa_online.png         # tables and plot from DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/edgebnn/edgebnn/train/fa/faexp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "faexp:", err)
		os.Exit(1)
	}
}

func run() error {
	exp := flag.String("exp", "linear", "experiment: linear, logistic, online or report")
	seeds := flag.Int("seeds", 10, "number of seeds (0, 1, …)")
	first := flag.Int("first-seed", 0, "first seed")
	d := flag.Int("d", 100, "online: observation dimension D")
	k := flag.Int("k", 10, "online: latent dimension K")
	lo := flag.Float64("lo", 1, "online: spectrum lower bound")
	hi := flag.Float64("hi", 10, "online: spectrum upper bound")
	out := flag.String("out", "faexp-out", "online/report: directory of per-seed JSON results")
	png := flag.String("png", "", "report: write the plot to this PNG file")
	batchIter := flag.Int("batch-max-iter", 0, "online: EM iteration cap of the batch fits (0: 5000)")
	batchCold := flag.Bool("batch-cold", false, "online: start every batch fit from PPCA (no warm start)")
	flag.Parse()
	switch *exp {
	case "linear", "logistic":
		return regression(*exp, *first, *seeds)
	case "online":
		return online(*out, *d, *k, *lo, *hi, *first, *seeds, *batchIter, *batchCold)
	case "report":
		return report(*out, *png)
	}
	return fmt.Errorf("unknown -exp %q", *exp)
}

func regression(kind string, first, seeds int) error {
	type variant struct {
		name string
		cfg  faexp.RegressionConfig
	}
	vs := []variant{{"literal (SGD, last iterate)", faexp.LiteralRegression()}, {"decay + tail average", faexp.PaperRegression()}}
	if kind == "logistic" {
		fast := faexp.PaperRegression()
		fast.LRF = 0.01
		vs = append(vs, variant{"decay + tail average, η_F = 0.01", fast})
		for i := range vs {
			vs[i].cfg.N = 3000
		}
	}
	res := make([][3][]float64, len(vs))
	for s := first; s < first+seeds; s++ {
		var rs []*faexp.RegressionResult
		if kind == "linear" {
			for _, v := range vs {
				r, err := faexp.LinearRegression(v.cfg, uint64(s))
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
		} else {
			cfgs := make([]faexp.RegressionConfig, len(vs))
			for i, v := range vs {
				cfgs[i] = v.cfg
			}
			var err error
			if rs, err = faexp.LogisticRegressionVariants(cfgs, uint64(s)); err != nil {
				return err
			}
		}
		for i, r := range rs {
			res[i][0] = append(res[i][0], r.Distances.RelMean)
			res[i][1] = append(res[i][1], r.Distances.RelCov)
			res[i][2] = append(res[i][2], r.Distances.W2PerDim)
		}
	}
	for i, v := range vs {
		fmt.Printf("%s regression, %s, seeds %d..%d: rel. mean %v | rel. cov %v | W2/dim %v\n",
			kind, v.name, first, first+seeds-1, faexp.Summarize(res[i][0]), faexp.Summarize(res[i][1]), faexp.Summarize(res[i][2]))
	}
	return nil
}

type onlineRecord struct {
	D, K   int
	Lo, Hi float64
	Seed   int
	faexp.OnlineResult
}

func online(dir string, d, k int, lo, hi float64, first, seeds, batchIter int, batchCold bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for s := first; s < first+seeds; s++ {
		r, err := faexp.OnlineFA(faexp.OnlineConfig{D: d, K: k, Lo: lo, Hi: hi,
			Checkpoints: faexp.DefaultCheckpoints, Warmup: 100, SGALR: 0.001, BatchMaxIter: batchIter, BatchCold: batchCold}, uint64(s))
		if err != nil {
			return err
		}
		rec := onlineRecord{D: d, K: k, Lo: lo, Hi: hi, Seed: s, OnlineResult: *r}
		data, err := json.MarshalIndent(rec, "", " ")
		if err != nil {
			return err
		}
		name := filepath.Join(dir, fmt.Sprintf("online_D%d_K%d_%g-%g_seed%d.json", d, k, lo, hi, s))
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s (%v)\n", name, r.Elapsed.Round(1e9))
	}
	return nil
}

type group struct {
	key  string
	recs []onlineRecord
}

func report(dir, png string) error {
	files, err := filepath.Glob(filepath.Join(dir, "online_*.json"))
	if err != nil {
		return err
	}
	groups := map[string]*group{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r onlineRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		key := fmt.Sprintf("D=%d, K=%d, spectrum [%g, %g]", r.D, r.K, r.Lo, r.Hi)
		if groups[key] == nil {
			groups[key] = &group{key: key}
		}
		groups[key].recs = append(groups[key].recs, r)
	}
	keys := make([]string, 0, len(groups))
	for key := range groups {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := groups[keys[i]].recs[0], groups[keys[j]].recs[0]
		if a.D != b.D {
			return a.D < b.D
		}
		return a.Hi < b.Hi
	})
	var plots []*plot.Plot
	for _, key := range keys {
		g := groups[key]
		ts := g.recs[0].T
		fmt.Printf("\n%s, %d seeds: relative covariance distance (mean ± s.e.)\n\n", key, len(g.recs))
		fmt.Println("| T | batch ML (EM) | online EM (Alg. 2) | online EM, weights ∝ t | online SGA | Alg. 2 / batch | weighted / batch |")
		fmt.Println("|---|---|---|---|---|---|---|")
		series := [4][]faexp.Summary{}
		for i, t := range ts {
			var b, e, w, s []float64
			for _, r := range g.recs {
				if i < len(r.Batch) {
					b = append(b, r.Batch[i])
				}
				e = append(e, r.EM[i])
				if i < len(r.EMWeighted) {
					w = append(w, r.EMWeighted[i])
				}
				s = append(s, r.SGA[i])
			}
			sb, se, sw, ss := faexp.Summarize(b), faexp.Summarize(e), faexp.Summarize(w), faexp.Summarize(s)
			series[0] = append(series[0], sb)
			series[1] = append(series[1], se)
			series[2] = append(series[2], sw)
			series[3] = append(series[3], ss)
			fmt.Printf("| %d | %v | %v | %v | %v | %.2f | %.2f |\n", t, sb, se, sw, ss, se.Mean/sb.Mean, sw.Mean/sb.Mean)
		}
		p := plot.New()
		p.Title.Text = key
		p.X.Label.Text = "T (observations)"
		p.Y.Label.Text = "relative covariance distance"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
		names := []string{"batch ML (EM)", "online EM (Alg. 2)", "online EM, weight w_t = t", "online SGA"}
		colors := []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{44, 160, 44, 255}}
		for si, ser := range series {
			if len(ser) == 0 || (si == 2 && len(g.recs[0].EMWeighted) == 0) {
				continue
			}
			pts := make(plotter.XYs, len(ts))
			errs := make(plotter.YErrors, len(ts))
			for i, t := range ts {
				pts[i].X, pts[i].Y = float64(t), ser[i].Mean
				errs[i].Low, errs[i].High = ser[i].SE, ser[i].SE
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = colors[si]
			l.Width = vg.Points(1.5)
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{pts, errs})
			if err != nil {
				return err
			}
			eb.Color = colors[si]
			p.Add(l, eb)
			p.Legend.Add(names[si], l)
		}
		p.Legend.Top = true
		plots = append(plots, p)
	}
	if png == "" || len(plots) == 0 {
		return nil
	}
	cols := 2
	rows := (len(plots) + cols - 1) / cols
	img := vgimgCanvas(vg.Length(cols)*5*vg.Inch, vg.Length(rows)*4*vg.Inch)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	dc := draw.New(img)
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range plots {
		grid[i/cols][i%cols] = p
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[i/cols][i%cols])
	}
	return savePNG(img, png)
}
