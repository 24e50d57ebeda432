// Command faexp runs the factor-analysis validation experiments of train/fa/faexp and prints the
// numbers that docs/RESULTS.md quotes.
//
//	faexp -exp linear   -seeds 10            # VIFA vs closed-form posterior (paper 000 §4.1)
//	faexp -exp logistic -seeds 10            # VIFA vs grid posterior (appendix B.2)
//	faexp -exp online -d 100 -lo 1 -hi 10 -seeds 10 -out DIR   # one JSON file per seed
//	faexp -exp online -d 1000 ... -batch-from OLD              # reuse OLD's batch fits (same seeds)
//	faexp -exp report -out DIR -png docs/results/fa_online.png # tables and plots from DIR
//	faexp -exp sgd -seeds 10                 # SGD iterates as posterior samples (thesis 001 Table 6.1)
//	faexp -exp uci-linear -seeds 5           # VIFA vs exact posterior on Boston housing (paper 000 App. C, Table 7)
//	faexp -exp uci-logistic -seeds 5         # VIFA vs NUTS on Wisconsin breast cancer (paper 000 App. D, Table 10)
//
// bench/fa_papers.sh runs them all with the documented settings. -quick shrinks every experiment
// to seconds for a check of its output's shape (tests/bench_quick_test.go), never its values:
// 20 epochs of the regressions on 300 inputs, online checkpoints T = 100, 200, 500, the SGD runs' pretraining
// and collection to 20 and 10 epochs, the UCI runs to 5 epochs and NUTS to 4 × (100 + 100).
//
// The online experiment streams the same observations into online EM (Algorithm 2 as printed),
// online EM with step t^(−α) and Polyak–Ruppert averaging of the statistics (-alpha,
// -average-after; -alpha 0 leaves it out), online SGA and a moment accumulator for the batch ML
// fit.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/train/fa/faexp"
	"github.com/edgebnn/edgebnn/train/mcmc"
	trainplot "github.com/edgebnn/edgebnn/train/plot"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "faexp:", err)
		os.Exit(1)
	}
}

func run() error {
	exp := flag.String("exp", "linear", "experiment: linear, logistic, online, report, sgd, uci-linear or uci-logistic")
	dataPath := flag.String("data", "", "uci-*: the CSV data set, target last (default: bench/data/boston_housing.csv for uci-linear, bench/data/breast_cancer_wisconsin.csv for uci-logistic)")
	epochs := flag.Int("epochs", 0, "uci-*: VIFA epochs (0: the paper's Table 6 / 9 value)")
	rank := flag.Int("rank", 0, "uci-*: VIFA's latent dimension K (0: the paper's Table 6 / 9 value; thesis 001 Table 6.4 uses 6 for Boston)")
	intercept := flag.Bool("intercept", true, "uci-logistic: append an intercept column of ones (LIBSVM's models have none: -intercept=false with a data set whose columns are the paper's inputs)")
	nutsDraws := flag.Int("nuts-draws", 5000, "uci-logistic: NUTS draws per chain (4 chains, 1000 warm-up each)")
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
	batchFrom := flag.String("batch-from", "", "online: take the batch fits from the JSON results of the same seeds and setting in this directory (the data stream depends only on the seed)")
	alpha := flag.Float64("alpha", 0.6, "online: step exponent α of averaged online EM (0: leave it out)")
	delay := flag.Int("step-delay", 0, "online: averaged online EM keeps the step 1/t for this many observations (0: D)")
	after := flag.Int("average-after", 5000, "online: averaged online EM averages the statistics after this many observations")
	weighted := flag.Bool("weighted", false, "online: also run online EM with weights ∝ t")
	recenter := flag.Bool("recenter", true, "online: also run averaged online EM with re-centred statistics (needs -alpha)")
	quick := flag.Bool("quick", false, "shrink every experiment to seconds (the output's shape, not its values)")
	w2 := flag.Bool("w2", true, "online: also record every estimate's 2-Wasserstein distance / D (O(D³) per estimate and checkpoint)")
	flag.Parse()
	switch *exp {
	case "linear", "logistic":
		return regression(*exp, *first, *seeds, *quick)
	case "online":
		if *delay == 0 {
			*delay = *d
		}
		cfg := faexp.OnlineConfig{D: *d, K: *k, Lo: *lo, Hi: *hi, Checkpoints: faexp.DefaultCheckpoints,
			Warmup: 100, SGALR: 0.001, BatchMaxIter: *batchIter, BatchCold: *batchCold,
			EMStepExponent: *alpha, EMStepDelay: *delay, EMAverageAfter: *after, Weighted: *weighted,
			EMRecenter: *recenter && *alpha != 0, W2: *w2}
		if *quick {
			cfg.Checkpoints = []int{100, 200, 500}
		}
		return online(*out, cfg, *first, *seeds, *batchFrom)
	case "report":
		return report(*out, *png)
	case "sgd":
		return sgd(*first, *seeds, *png, *quick)
	case "uci-linear", "uci-logistic":
		if *quick {
			*epochs, *nutsDraws = 5, 100
		}
		return uci(*exp, *dataPath, *first, *seeds, *epochs, *rank, *nutsDraws, *intercept, *quick)
	}
	return fmt.Errorf("unknown -exp %q", *exp)
}

func regression(kind string, first, seeds int, quick bool) error {
	type variant struct {
		name string
		cfg  faexp.RegressionConfig
	}
	vs := []variant{{"literal (SGD, last iterate)", faexp.LiteralRegression()}, {"decay + tail average", faexp.PaperRegression()}}
	if kind == "linear" {
		// Thesis 001 Table 6.2's second row: the same run with K = 2 latent dimensions.
		lit2 := faexp.LiteralRegression()
		lit2.Rank = 2
		pap2 := faexp.PaperRegression()
		pap2.Rank = 2
		vs = append(vs, variant{"literal, K = 2", lit2}, variant{"decay + tail average, K = 2", pap2})
	}
	if kind == "logistic" {
		fast := faexp.PaperRegression()
		fast.LRF = 0.01
		vs = append(vs, variant{"decay + tail average, η_F = 0.01", fast})
		for i := range vs {
			vs[i].cfg.N = 3000
		}
	}
	if quick {
		for i := range vs {
			vs[i].cfg.Epochs, vs[i].cfg.N = 20, min(vs[i].cfg.N, 300)
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
	// Alpha and AverageAfter configure the averaged online EM (EMAveraged).
	Alpha        float64 `json:",omitempty"`
	StepDelay    int     `json:",omitempty"`
	AverageAfter int     `json:",omitempty"`
	// BatchFrom names the file the batch fits were taken from (empty: fitted in this run).
	BatchFrom string `json:",omitempty"`
	faexp.OnlineResult
}

func recordName(dir string, d, k int, lo, hi float64, seed int) string {
	return filepath.Join(dir, fmt.Sprintf("online_D%d_K%d_%g-%g_seed%d.json", d, k, lo, hi, seed))
}

// writeRecord writes rec as indented JSON to name atomically (outfile.WriteBytes: staged beside
// name, fsynced, renamed over it), so that a failed write (a full disk, say) leaves no partial
// record for -exp report to trip over and an earlier record at name as it was. A name that is not
// a regular file (a symbolic link, a directory) is refused, not written through.
func writeRecord(name string, rec *onlineRecord) error {
	data, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := outfile.Check("record", name); err != nil {
		return err
	}
	if err := outfile.WriteBytes(context.Background(), name, data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func online(dir string, cfg faexp.OnlineConfig, first, seeds int, batchFrom string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for s := first; s < first+seeds; s++ {
		// Refuse a record path that cannot be written (a symbolic link, a directory) before the fit.
		if err := outfile.Check("record", recordName(dir, cfg.D, cfg.K, cfg.Lo, cfg.Hi, s)); err != nil {
			return err
		}
		c := cfg
		var old *onlineRecord
		if batchFrom != "" {
			name := recordName(batchFrom, cfg.D, cfg.K, cfg.Lo, cfg.Hi, s)
			data, err := os.ReadFile(name)
			if err != nil {
				return fmt.Errorf("batch fits: %w", err)
			}
			old = &onlineRecord{}
			if err := json.Unmarshal(data, old); err != nil {
				return fmt.Errorf("batch fits: %s: %w", name, err)
			}
			if old.D != cfg.D || old.K != cfg.K || old.Lo != cfg.Lo || old.Hi != cfg.Hi || old.Seed != s ||
				fmt.Sprint(old.T) != fmt.Sprint(cfg.Checkpoints) || len(old.Batch) != len(cfg.Checkpoints) {
				return fmt.Errorf("batch fits: %s is for another setting or has no batch fits", name)
			}
			c.SkipBatch = true
		}
		r, err := faexp.OnlineFA(c, uint64(s))
		if err != nil {
			return err
		}
		rec := onlineRecord{D: cfg.D, K: cfg.K, Lo: cfg.Lo, Hi: cfg.Hi, Seed: s, OnlineResult: *r}
		if cfg.EMStepExponent != 0 {
			rec.Alpha, rec.StepDelay, rec.AverageAfter = cfg.EMStepExponent, cfg.EMStepDelay, cfg.EMAverageAfter
		}
		if old != nil {
			rec.Batch, rec.BatchIters, rec.BatchConverged = old.Batch, old.BatchIters, old.BatchConverged
			rec.BatchFrom = recordName(batchFrom, cfg.D, cfg.K, cfg.Lo, cfg.Hi, s)
		}
		name := recordName(dir, cfg.D, cfg.K, cfg.Lo, cfg.Hi, s)
		if err := writeRecord(name, &rec); err != nil {
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

// series names, in plot and table order.
var seriesNames = []string{"batch ML (EM)", "online EM (Alg. 2)", "online EM, SA + averaging", "online SGA", "online EM, weights w_t = t",
	"online EM, SA + averaging, re-centred"}

var seriesColors = []color.Color{color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255},
	color.RGBA{148, 103, 189, 255}, color.RGBA{44, 160, 44, 255}, color.RGBA{214, 39, 40, 255},
	color.RGBA{0, 0, 0, 255}}

// values returns one series of a record (nil when it was not run).
func (r *onlineRecord) values(series int) []float64 {
	return [][]float64{r.Batch, r.EM, r.EMAveraged, r.SGA, r.EMWeighted, r.EMRecentred}[series]
}

// w2values returns one series' W2/D (nil when it was not recorded).
func (r *onlineRecord) w2values(series int) []float64 {
	w := r.W2
	if w == nil {
		return nil
	}
	return [][]float64{w.Batch, w.EM, w.EMAveraged, w.SGA, w.EMWeighted, w.EMRecentred}[series]
}

// w2Table prints the groups' W2/D table (thesis 001 Table A.2) for the series every record has,
// and returns its plot (nil when no series has W2 in every record).
func w2Table(key string, recs []onlineRecord, ts []int) (*plot.Plot, error) {
	present := make([]bool, len(seriesNames))
	found := false
	for si := range seriesNames {
		present[si] = true
		for _, r := range recs {
			if len(r.w2values(si)) != len(ts) {
				present[si] = false
			}
		}
		found = found || present[si]
	}
	if !found {
		return nil, nil
	}
	fmt.Printf("\n**%s**: 2-Wasserstein distance to the true Gaussian / D (thesis 001 Fig. 5.2, Table A.2), mean ± s.e.\n\n", key)
	hdr, sep := "| T |", "|---|"
	for si, n := range seriesNames {
		if present[si] {
			hdr += " " + n + " |"
			sep += "---|"
		}
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	series := make([][]faexp.Summary, len(seriesNames))
	for i, t := range ts {
		line := fmt.Sprintf("| %d |", t)
		for si := range seriesNames {
			if !present[si] {
				continue
			}
			var v []float64
			for _, r := range recs {
				v = append(v, r.w2values(si)[i])
			}
			series[si] = append(series[si], faexp.Summarize(v))
			line += fmt.Sprintf(" %v |", series[si][i])
		}
		fmt.Println(line)
	}
	return curvePlot(key, "W2 / D", ts, series, present, true)
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
	var plots, ratioPlots, w2Plots []*plot.Plot
	for _, key := range keys {
		g := groups[key]
		sort.Slice(g.recs, func(i, j int) bool { return g.recs[i].Seed < g.recs[j].Seed })
		ts := g.recs[0].T
		present := make([]bool, len(seriesNames))
		for si := range seriesNames {
			present[si] = true
			for _, r := range g.recs {
				if len(r.values(si)) != len(ts) {
					present[si] = false
				}
			}
		}
		if !present[0] {
			return fmt.Errorf("%s: some records have no batch fits", key)
		}
		seedList := make([]int, len(g.recs))
		for i, r := range g.recs {
			seedList[i] = r.Seed
		}
		fmt.Printf("\n**%s, %d seeds %v** (relative covariance distance, mean ± s.e.; ratio = mean / batch mean)\n\n", key, len(g.recs), seedList)
		hdr, sep := "| T |", "|---|"
		for si, n := range seriesNames {
			if present[si] {
				hdr += " " + n + " |"
				sep += "---|"
			}
		}
		for si := 1; si < len(seriesNames); si++ {
			if present[si] && si != 3 {
				hdr += " " + seriesNames[si] + " / batch |"
				sep += "---|"
			}
		}
		fmt.Println(hdr)
		fmt.Println(sep)
		series := make([][]faexp.Summary, len(seriesNames))
		ratios := make([][]faexp.Summary, len(seriesNames))
		for i, t := range ts {
			line := fmt.Sprintf("| %d |", t)
			for si := range seriesNames {
				if !present[si] {
					continue
				}
				var v, q []float64
				for _, r := range g.recs {
					v = append(v, r.values(si)[i])
					q = append(q, r.values(si)[i]/r.Batch[i])
				}
				series[si] = append(series[si], faexp.Summarize(v))
				ratios[si] = append(ratios[si], faexp.Summarize(q))
				line += fmt.Sprintf(" %v |", series[si][i])
			}
			for si := 1; si < len(seriesNames); si++ {
				if present[si] && si != 3 {
					line += fmt.Sprintf(" %.2f |", series[si][i].Mean/series[0][i].Mean)
				}
			}
			fmt.Println(line)
		}
		fits, unconverged, reused := 0, 0, 0
		for _, r := range g.recs {
			for _, c := range r.BatchConverged {
				fits++
				if !c {
					unconverged++
				}
			}
			if r.BatchFrom != "" {
				reused++
			}
		}
		fmt.Printf("\nBatch fits: %d of %d stopped at the iteration cap; %d of %d seeds' fits taken from an earlier run (-batch-from).\n",
			unconverged, fits, reused, len(g.recs))
		last := len(ts) - 1
		for si := 1; si < len(seriesNames); si++ {
			if !present[si] {
				continue
			}
			within := 0
			worst := 0.0
			for _, r := range g.recs {
				q := r.values(si)[last] / r.Batch[last]
				worst = math.Max(worst, q)
				if q <= 1.2 {
					within++
				}
			}
			fmt.Printf("\nT = %d, %s: ratio of means %.3f; per-seed ratio %v (worst %.2f), %d of %d seeds within 1.2×",
				ts[last], seriesNames[si], series[si][last].Mean/series[0][last].Mean, ratios[si][last], worst, within, len(g.recs))
		}
		fmt.Println()
		p, err := curvePlot(key, "relative covariance distance", ts, series, present, true)
		if err != nil {
			return err
		}
		plots = append(plots, p)
		rp := make([]bool, len(present))
		copy(rp, present)
		rp[0] = false
		q, err := curvePlot(key, "ratio to the batch fit (per-seed mean ± s.e.)", ts, ratios, rp, false)
		if err != nil {
			return err
		}
		ratioPlots = append(ratioPlots, q)
		wp, err := w2Table(key, g.recs, ts)
		if err != nil {
			return err
		}
		if wp != nil {
			w2Plots = append(w2Plots, wp)
		}
	}
	if png == "" || len(plots) == 0 {
		return nil
	}
	if err := savePlots(plots, png); err != nil {
		return err
	}
	if len(w2Plots) > 0 {
		if err := savePlots(w2Plots, strings.TrimSuffix(png, ".png")+"_w2.png"); err != nil {
			return err
		}
	}
	return savePlots(ratioPlots, strings.TrimSuffix(png, ".png")+"_ratio.png")
}

// curvePlot draws mean ± s.e. curves against T (log scale) for the present series.
func curvePlot(title, ylabel string, ts []int, series [][]faexp.Summary, present []bool, logY bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "T (observations)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	} else {
		p.Y.Min = 0
		ref, err := plotter.NewLine(plotter.XYs{{X: float64(ts[0]), Y: 1.2}, {X: float64(ts[len(ts)-1]), Y: 1.2}})
		if err != nil {
			return nil, err
		}
		ref.Color = color.Gray{Y: 128}
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ref)
		p.Legend.Add("1.2 × batch", ref)
	}
	for si, ser := range series {
		if !present[si] || len(ser) == 0 {
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
			return nil, err
		}
		l.Color = seriesColors[si]
		l.Width = vg.Points(1.5)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return nil, err
		}
		eb.Color = seriesColors[si]
		p.Add(l, eb)
		p.Legend.Add(seriesNames[si], l)
	}
	p.Legend.Top = true
	return p, nil
}

// savePlots tiles the plots two per row into one PNG.
func savePlots(plots []*plot.Plot, png string) error {
	cols := 2
	rows := (len(plots) + cols - 1) / cols
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range plots {
		grid[i/cols][i%cols] = p
	}
	if err := trainplot.SaveGrid(png, grid, vg.Length(cols)*5*vg.Inch, vg.Length(rows)*4*vg.Inch, vgimg.DefaultDPI, tiles); err != nil {
		return err
	}
	fmt.Println("wrote", png)
	return nil
}

// sgd prints thesis 001 Table 6.1 (SGD iterates of the linear regression as posterior samples,
// four learning rate / λ settings) and the finite-window iterate averaging of its Fig. 6.2, with
// online and batch FA fitted to the same samples, mean ± standard error over the seeds; with png,
// the samples of the first seed over the posterior's contours, one panel per setting (Figs.
// 6.1–6.2).
func sgd(first, seeds int, png string, quick bool) error {
	win := func(batch, w int) faexp.SGDConfig {
		c := faexp.ThesisSGD(0.1, 0.001)
		c.Batch, c.Window = batch, w
		return c
	}
	rows := []sgdRow{
		{"lr 0.1, λ 0.1", faexp.ThesisSGD(0.1, 0.1), "0.0666 ± 0.0078 / 0.6200 ± 0.0750 / 0.4946 ± 0.1013"},
		{"lr 0.1, λ 0.001", faexp.ThesisSGD(0.1, 0.001), "0.0006 ± 0.0001 / 0.8065 ± 0.0101 / 0.0439 ± 0.0012"},
		{"lr 0.01, λ 0.1", faexp.ThesisSGD(0.01, 0.1), "0.0620 ± 0.0070 / 1.7110 ± 0.6187 / 0.4641 ± 0.0937"},
		{"lr 0.01, λ 0.001", faexp.ThesisSGD(0.01, 0.001), "0.0010 ± 0.0002 / 0.9870 ± 0.0042 / 0.0739 ± 0.0010"},
		{"lr 0.1, λ 0.001, batch 100, windows of 10", win(100, 10), "(Fig. 6.2 a: not representative)"},
		{"lr 0.1, λ 0.001, batch 10, windows of 50", win(10, 50), "(Fig. 6.2 b: better)"},
	}
	if quick {
		for i := range rows {
			rows[i].cfg.PretrainEpochs, rows[i].cfg.CollectEpochs = 20, 10
		}
	}
	// The other reading of the pre-training: with the same weight decay as the collection (the
	// four rows of Table 6.1 only; the window rows have λ = 0.001, where it makes no difference).
	decayed := make([]sgdRow, 4)
	for i, r := range rows[:4] {
		r.cfg.PretrainLambda = r.cfg.Lambda
		decayed[i] = r
	}
	var panels []*plot.Plot
	for t, table := range [][]sgdRow{rows, decayed} {
		caption := "pre-training without weight decay"
		if t == 1 {
			fmt.Println()
			caption = "the other reading: pre-training with the same weight decay λ"
		}
		fmt.Printf("SGD iterates as samples of the posterior of paper 000's linear regression (thesis 001 Table 6.1; %s), seeds %d..%d, mean ± s.e.\n\n", caption, first, first+seeds-1)
		ps, err := sgdTable(table, first, seeds, png != "" && t == 0)
		if err != nil {
			return err
		}
		panels = append(panels, ps...)
	}
	if png == "" {
		return nil
	}
	return savePlots(panels, png)
}

// sgdRow is one setting of the SGD-sampling tables and the thesis's numbers for it.
type sgdRow struct {
	name   string
	cfg    faexp.SGDConfig
	thesis string
}

// sgdTable prints one Markdown table of SGD-sampling rows, one line per row (mean ± s.e. over the
// seeds), and returns the first seed's panels when draw is set.
func sgdTable(rows []sgdRow, first, seeds int, draw bool) ([]*plot.Plot, error) {
	fmt.Println("| setting | samples | rel. dist. mean | rel. dist. covariance | W2 / dim | thesis (mean / cov / W2) | online EM FA: rel. cov. to posterior | online EM FA vs samples: rel. cov. | averaged online EM vs samples | batch FA vs samples |")
	fmt.Println("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
	var panels []*plot.Plot
	for _, r := range rows {
		var mean, cov, w2, ofa, ovs, avs, bvs []float64
		n := 0
		for s := first; s < first+seeds; s++ {
			res, err := faexp.SGDSampling(r.cfg, uint64(s))
			if err != nil {
				return nil, err
			}
			n = res.Samples
			if s == first && draw {
				p, err := sgdPanel(r.name, res)
				if err != nil {
					return nil, err
				}
				panels = append(panels, p)
			}
			mean = append(mean, res.Iterates.RelMean)
			cov = append(cov, res.Iterates.RelCov)
			w2 = append(w2, res.Iterates.W2PerDim)
			ofa = append(ofa, res.OnlineFA.RelCov)
			ovs = append(ovs, res.OnlineVsSamples.RelCov)
			avs = append(avs, res.AveragedVsSamples.RelCov)
			bvs = append(bvs, res.BatchVsSamples.RelCov)
		}
		fmt.Printf("| %s | %d | %v | %v | %v | %s | %v | %v | %v | %v |\n", r.name, n, faexp.Summarize(mean), faexp.Summarize(cov),
			faexp.Summarize(w2), r.thesis, faexp.Summarize(ofa), faexp.Summarize(ovs), faexp.Summarize(avs), faexp.Summarize(bvs))
	}
	return panels, nil
}

// sgdPanel draws one run's samples (red), the exact posterior's 1, 2 and 3 standard-deviation
// ellipses, the pre-trained iterate (white circle) and the samples' mean (black star).
func sgdPanel(title string, r *faexp.SGDResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "θ₁", "θ₂"
	// Ellipse of the covariance S: m + k·L (cos t, sin t), L the Cholesky factor of S.
	m, s := r.PosteriorMean, r.PosteriorCov
	l00 := math.Sqrt(s[0])
	l10 := s[2] / l00
	l11 := math.Sqrt(s[3] - l10*l10)
	for k := 1; k <= 3; k++ {
		pts := make(plotter.XYs, 101)
		for i := range pts {
			t := 2 * math.Pi * float64(i) / 100
			c, sn := math.Cos(t), math.Sin(t)
			pts[i].X = m[0] + float64(k)*l00*c
			pts[i].Y = m[1] + float64(k)*(l10*c+l11*sn)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{B: 200, A: 255}
		p.Add(l)
	}
	pts := make(plotter.XYs, len(r.Points))
	for i, v := range r.Points {
		pts[i].X, pts[i].Y = v[0], v[1]
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius = color.RGBA{R: 220, A: 255}, vg.Points(1.2)
	pre, err := plotter.NewScatter(plotter.XYs{{X: r.Pretrained[0], Y: r.Pretrained[1]}})
	if err != nil {
		return nil, err
	}
	pre.GlyphStyle.Shape, pre.GlyphStyle.Radius = draw.CircleGlyph{}, vg.Points(4)
	pre.GlyphStyle.Color = color.Gray{Y: 120}
	mean, err := plotter.NewScatter(plotter.XYs{{X: r.SampleMean[0], Y: r.SampleMean[1]}})
	if err != nil {
		return nil, err
	}
	mean.GlyphStyle.Shape, mean.GlyphStyle.Radius = draw.PyramidGlyph{}, vg.Points(4)
	mean.GlyphStyle.Color = color.Black
	p.Add(sc, pre, mean)
	return p, nil
}

// uci runs paper 000's appendix C (uci-linear) or D (uci-logistic) protocol on splits first …
// first+seeds−1 and prints each variant's distances (mean ± standard error) beside the paper's.
func uci(exp, path string, first, seeds, epochs, rank, nutsDraws int, intercept, quick bool) error {
	linear := exp == "uci-linear"
	if path == "" {
		path = "bench/data/boston_housing.csv"
		if !linear {
			path = "bench/data/breast_cancer_wisconsin.csv"
		}
	}
	data, err := faexp.ReadUCICSV(path)
	if err != nil {
		return err
	}
	paper := faexp.PaperUCILinear()
	if !linear {
		paper = faexp.PaperUCILogistic()
	}
	if epochs > 0 {
		paper.Epochs = epochs
	}
	if rank < 0 {
		return fmt.Errorf("-rank %d: want 0 (the paper's) or a latent dimension ≥ 1", rank)
	}
	if rank > 0 {
		paper.Rank = rank
	}
	avg := paper
	avg.FinalDecay, avg.TailAverage = 1, 0.5
	type variant struct {
		name string
		cfg  faexp.RegressionConfig
	}
	vs := []variant{{"paper's settings (SGD, last iterate)", paper}, {"+ decay and tail average", avg}}
	fast := avg
	fast.LRMean, fast.LRF, fast.LRLogVar = 0.01, 0.01, 0.01
	vs = append(vs, variant{"+ decay and tail average, η = 0.01", fast})
	cfgs := make([]faexp.RegressionConfig, len(vs))
	for i, v := range vs {
		cfgs[i] = v.cfg
	}
	mc := mcmc.DefaultConfig()
	mc.Draws = nutsDraws
	if quick {
		mc.Warmup = 100
	}
	res := make([][3][]float64, len(vs))
	var alphas, betas, rhats, esss []float64
	dim, n := 0, 0
	for s := first; s < first+seeds; s++ {
		var rs []*faexp.UCIResult
		if linear {
			rs, err = faexp.UCILinear(data, cfgs, uint64(s))
		} else {
			rs, err = faexp.UCILogistic(context.Background(), data, cfgs, mc, uint64(s), intercept)
		}
		if err != nil {
			return err
		}
		for i, r := range rs {
			res[i][0] = append(res[i][0], r.Distances.RelMean)
			res[i][1] = append(res[i][1], r.Distances.RelCov)
			res[i][2] = append(res[i][2], r.Distances.W2PerDim)
		}
		r := rs[0]
		dim, n = r.Dim, r.N
		alphas, betas = append(alphas, r.Alpha), append(betas, r.Beta)
		rhats, esss = append(rhats, r.RhatMax), append(esss, r.ESSMin)
	}
	if linear {
		fmt.Printf("%s: %d parameters on %d rows (the test half of each split); evidence-maximising α %v, β %v (paper's Table 6 for Boston: 0.2859, 0.0429)\n",
			path, dim, n, faexp.Summarize(alphas), faexp.Summarize(betas))
		fmt.Println("paper 000 Table 7, Boston: rel. mean 0.0262 | rel. cov 0.3185 | W2/dim 0.0468")
		fmt.Println("thesis 001 Table 6.5, Boston (K = 6, 20 000 epochs, η = 0.001: -rank 6 -epochs 20000): rel. mean 0.0253 | rel. cov 0.1467 | W2/dim 0.0333")
	} else {
		icpt := "and an intercept"
		if !intercept {
			icpt = "no intercept"
		}
		fmt.Printf("%s: %d parameters (inputs scaled to [−1, 1], %s) on %d rows; prior precision %g; NUTS 4 × (%d + %d): R̂ max %v, bulk ESS min %v\n",
			path, dim, icpt, n, paper.Alpha, mc.Warmup, nutsDraws, faexp.Summarize(rhats), faexp.Summarize(esss))
		fmt.Println("paper 000 Table 10, Breast-cancer-scale (341 rows, 10 input variables): rel. mean 0.0205 | rel. cov 0.1729 | W2/dim 0.0297")
	}
	for i, v := range vs {
		fmt.Printf("%s, %s, K = %d, %d epochs, splits %d..%d: rel. mean %v | rel. cov %v | W2/dim %v\n",
			exp, v.name, v.cfg.Rank, v.cfg.Epochs, first, first+seeds-1, faexp.Summarize(res[i][0]), faexp.Summarize(res[i][1]), faexp.Summarize(res[i][2]))
	}
	return nil
}
