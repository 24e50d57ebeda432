// Command fig3 measures paper 003's Fig. 3 on this machine: the cost of a K-sample prediction of
// an inducing-weight ResNet-18 or, with -arch resnet50, ResNet-50 (the paper's network; CIFAR
// shape: 3×32×32 input, 10 classes, U of 64 × 64 in every convolution and 10 × 64 in the last
// layer, as bayesianize's configs/ffg_u_cifar10.json) relative to an ensemble of K deterministic
// networks (Ensemble-W), for K = 1, 2, 4, …, 32, and the memory each needs.
//
// The models are built by convert.Plan (what `edgebnn plan --out` does): the real architecture
// and file format with random stand-in values, since the cost of a prediction does not depend on
// what was learnt. They are written to -dir: det.ebnn (one deterministic network), ffgu.ebnn
// (FFG-U), ensw<K>.ebnn (Ensemble-W of K members, K > 1) and ensu<K>.ebnn (Ensemble-U of K
// members). Plan also reports each model's file bytes, the heap its loaded form holds and the
// predictor's scratch for K samples (RuntimeBytes is their sum).
//
// Every repetition times, for each K, the deterministic forward, Ensemble-W of K members (one
// forward per member), FFG-U with K samples under each strategy (weight, local, auto) and
// Ensemble-U of K members (one sample per member), then the deterministic forward again; a
// method's ratios are its time over the mean of the two deterministic timings and over
// Ensemble-W's time of the same repetition, so every ratio comes from one stretch of machine
// load. -batches adds batch sizes above 1 for the K in -batch-k (weights are sampled once per
// sample and shared by the batch, as in the paper's batch of 500).
//
// -arm FILE adds Cortex-A53 instruction counts (lines "method K instructions", as bench/fig3.sh
// --arm writes them) as ratios to the counted deterministic forward and Ensemble-W. It prints a
// Markdown table (mean ± standard error over the repetitions), writes the raw measurements as
// JSON (-json) and draws the ratios to Ensemble-W against K (-png).
//
// -from FILE measures nothing and prints the table and draws the plot of an earlier -json FILE.
//
//	go run ./bench/fig3 -dir runs/fig3/models -reps 3 -json runs/fig3/fig3.json -png docs/img/fig3_cost.png
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/eval"
	trainplot "github.com/edgebnn/edgebnn/train/plot"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The inference configs, bayesianize's configs/ffg_u_cifar10.json and ensemble_u_cifar10.json
// (the q(U) settings of bench/table9.sh) with the ensemble size filled in.
const (
	ffguConfig = `{"inference": {"Conv2d": {"inference": "inducing", "inducing_rows": 64, "inducing_cols": 64},
 "Linear": {"inference": "inducing", "inducing_rows": 10, "inducing_cols": 64}},
 "whitened_u": true, "q_inducing": "diagonal", "max_lamda": 0.03, "max_sd_u": 0.1, "learn_lamda": true,
 "init_lamda": 0.001, "cache_cholesky": true, "prior_sd": 1.0, "sqrt_width_scaling": true}`
	ensuConfig = `{"inference": {"Conv2d": {"inference": "inducing", "inducing_rows": 64, "inducing_cols": 64},
 "Linear": {"inference": "inducing", "inducing_rows": 10, "inducing_cols": 64}},
 "whitened_u": true, "q_inducing": "ensemble", "ensemble_size": %d, "max_lamda": 0.1, "learn_lamda": true,
 "init_lamda": 0.001, "cache_cholesky": true, "prior_sd": 1.0, "sqrt_width_scaling": true}`
)

// method is one curve of the figure.
type method struct {
	Key, Name string
	strategy  runtime.Strategy
}

// methods in table order; "det" is the baseline and not a row.
var methods = []method{
	{"ensw", "Ensemble-W", runtime.Auto},
	{"ffgu-weight", "FFG-U, weight", runtime.Weight},
	{"ffgu-local", "FFG-U, local", runtime.Local},
	{"ffgu-auto", "FFG-U, auto", runtime.Auto},
	{"ensu", "Ensemble-U", runtime.Auto},
}

// Memory is what convert.Plan reports for one model and predictor.
type Memory struct {
	FileBytes, ModelBytes, ScratchBytes, RuntimeBytes int64
	Parameters                                        int64
}

// Timing is one method's time per prediction call (the whole batch) in one repetition: wall
// clock, and the CPU time of the thread that ran it (NaN where it cannot be read). The ratios
// are of CPU times where there are, of wall-clock times otherwise; WallXEnsW is always of
// wall-clock times.
type Timing struct {
	Rep, K, Batch       int
	Method              string
	Seconds, CPUSeconds float64
	XDet, XEnsW         float64 // over the deterministic forward and over Ensemble-W of K members
	WallXEnsW           float64
}

// cost is what the ratios are taken of: CPU time if there is one.
func (t Timing) cost() float64 {
	if math.IsNaN(t.CPUSeconds) {
		return t.Seconds
	}
	return t.CPUSeconds
}

// Results is what a run measured.
type Results struct {
	Arch    string             // "resnet18" or "resnet50" (empty in files from before -arch: resnet18)
	Load    [3]float64         // load averages (1, 5, 15 min) at the start
	LoadEnd [3]float64         // and at the end
	Memory  map[string]*Memory // by "<method>/<K>" (batch 1); "det/1" for the baseline
	Timings []Timing
	Started time.Time
}

func memKey(method string, k int) string { return fmt.Sprintf("%s/%d", method, k) }

// modelFile is the file a method's K-sample predictor loads.
func modelFile(dir, key string, k int) string {
	switch {
	case key == "det" || (key == "ensw" && k == 1):
		return filepath.Join(dir, "det.ebnn")
	case key == "ensw":
		return filepath.Join(dir, fmt.Sprintf("ensw%d.ebnn", k))
	case key == "ensu":
		return filepath.Join(dir, fmt.Sprintf("ensu%d.ebnn", k))
	}
	return filepath.Join(dir, "ffgu.ebnn")
}

// build writes the models for ks to dir and returns their memory as convert.Plan sizes it.
func build(dir, arch string, ks []int, log io.Writer) (map[string]*Memory, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ffgu := filepath.Join(dir, "ffgu.json")
	if err := outfile.WriteBytes(context.Background(), ffgu, []byte(ffguConfig)); err != nil {
		return nil, err
	}
	mem := map[string]*Memory{}
	planOne := func(key string, k int, o convert.PlanOptions) error {
		o.Arch, o.Classes, o.InputShape, o.MaxBatch = arch, 10, []int{3, 32, 32}, 1
		start := time.Now()
		rep, err := convert.Plan(o)
		if err != nil {
			return fmt.Errorf("fig3: plan %s K=%d: %w", key, k, err)
		}
		mem[memKey(key, k)] = &Memory{FileBytes: rep.FileBytes, ModelBytes: rep.ModelBytes,
			ScratchBytes: rep.ScratchBytes, RuntimeBytes: rep.RuntimeBytes, Parameters: rep.Parameters}
		fmt.Fprintf(log, "fig3: planned %s K=%d (%d parameters, %.1f MiB runtime) in %.1fs\n",
			key, k, rep.Parameters, float64(rep.RuntimeBytes)/(1<<20), time.Since(start).Seconds())
		rep = nil
		debug.FreeOSMemory() // the large ensembles' stand-ins, before the next plan
		return nil
	}
	if err := planOne("det", 1, convert.PlanOptions{Samples: 1, Out: modelFile(dir, "det", 1)}); err != nil {
		return nil, err
	}
	for _, k := range ks {
		mem[memKey("ensw", k)] = mem[memKey("det", 1)]
		if k > 1 {
			if err := planOne("ensw", k, convert.PlanOptions{Members: k, Samples: k, Out: modelFile(dir, "ensw", k)}); err != nil {
				return nil, err
			}
		}
		o := convert.PlanOptions{Config: ffgu, Samples: k}
		if k == ks[0] {
			o.Out = modelFile(dir, "ffgu", k)
		}
		if err := planOne("ffgu", k, o); err != nil {
			return nil, err
		}
		cfg := filepath.Join(dir, fmt.Sprintf("ensu%d.json", k))
		if err := outfile.WriteBytes(context.Background(), cfg, fmt.Appendf(nil, ensuConfig, k)); err != nil {
			return nil, err
		}
		if err := planOne("ensu", k, convert.PlanOptions{Config: cfg, Samples: k, Out: modelFile(dir, "ensu", k)}); err != nil {
			return nil, err
		}
	}
	return mem, nil
}

// timer times one predictor: mean seconds per PredictBatch call over at least minTime and
// minCalls calls, after one untimed call if warm is set (NewPredictor's warm-up runs one block of
// samples, which leaves the pages of an ensemble's other members still to be read from the file).
type timer struct {
	minTime  time.Duration
	minCalls int
}

func (t timer) time(p *runtime.Predictor, xs []float32, n int, warm bool) (wall, cpu float64, err error) {
	out := make([]runtime.Prediction, n)
	if warm {
		if err := p.PredictBatch(xs, out); err != nil {
			return 0, 0, err
		}
	}
	// One thread (Options.Threads 1) runs the whole prediction in this goroutine: pinned to its
	// OS thread, the thread's CPU time is the prediction's.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	calls := 0
	c0, cpuOK := threadCPU()
	start := time.Now()
	for calls < t.minCalls || time.Since(start) < t.minTime {
		if err := p.PredictBatch(xs, out); err != nil {
			return 0, 0, err
		}
		calls++
	}
	wall = time.Since(start).Seconds() / float64(calls)
	cpu = math.NaN()
	if c1, ok := threadCPU(); cpuOK && ok {
		cpu = (c1 - c0) / float64(calls)
	}
	return wall, cpu, nil
}

// predictor loads path and makes a predictor for K samples of batch n.
func predictor(path string, k, n int, st runtime.Strategy) (*runtime.Model, *runtime.Predictor, error) {
	m, err := runtime.Load(path)
	if err != nil {
		return nil, nil, err
	}
	o := runtime.Options{Samples: k, MaxBatch: n, Seed: 1, Strategy: st}
	if m.Members() > 1 {
		o.Samples = m.Members() // each member once: the deep-ensemble predictive
	}
	if !m.Stochastic() {
		o.Samples = 0
	}
	p, err := m.NewPredictor(o)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, p, nil
}

// timeOne loads a method's model, times it and releases it.
func timeOne(t timer, path string, k, n int, st runtime.Strategy, xs []float32) (wall, cpu float64, err error) {
	m, p, err := predictor(path, k, n, st)
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	defer p.Close()
	return t.time(p, xs, n, m.Members() > 1)
}

// measure runs one repetition: for every K (and batch), the deterministic forward, every method,
// the deterministic forward again.
func measure(dir string, rep int, ks, batches, batchKs []int, t timer, log io.Writer) ([]Timing, error) {
	var out []Timing
	rng := rand.New(rand.NewPCG(uint64(rep), 3))
	for _, k := range ks {
		for _, n := range batches {
			if n > 1 && !slices.Contains(batchKs, k) {
				continue
			}
			xs := make([]float32, n*3*32*32)
			for i := range xs {
				xs[i] = rng.Float32()
			}
			ts := map[string]*Timing{}
			for _, key := range append([]string{"det0"}, append(methodKeys(), "det1")...) {
				me, kk := key, k
				if key == "det0" || key == "det1" {
					me, kk = "det", 1
				}
				w, c, err := timeOne(t, modelFile(dir, me, kk), kk, n, strategyOf(me), xs)
				if err != nil {
					return nil, err
				}
				ts[key] = &Timing{Rep: rep, K: k, Batch: n, Method: me, Seconds: w, CPUSeconds: c}
			}
			det := &Timing{Rep: rep, K: k, Batch: n, Method: "det", Seconds: (ts["det0"].Seconds + ts["det1"].Seconds) / 2,
				CPUSeconds: (ts["det0"].CPUSeconds + ts["det1"].CPUSeconds) / 2}
			ts["det"] = det
			ens := ts["ensw"]
			for _, key := range append([]string{"det"}, methodKeys()...) {
				x := ts[key]
				x.XDet, x.XEnsW, x.WallXEnsW = x.cost()/det.cost(), x.cost()/ens.cost(), x.Seconds/ens.Seconds
				out = append(out, *x)
			}
			fmt.Fprintf(log, "fig3: rep %d K=%d batch %d: det %.1f ms CPU (%.1f / %.1f; wall %.1f), × det: ensw %.2f, ffgu weight %.2f local %.2f auto %.2f, ensu %.2f\n",
				rep, k, n, 1e3*det.cost(), 1e3*ts["det0"].cost(), 1e3*ts["det1"].cost(), 1e3*det.Seconds, ens.XDet,
				ts["ffgu-weight"].XDet, ts["ffgu-local"].XDet, ts["ffgu-auto"].XDet, ts["ensu"].XDet)
		}
	}
	return out, nil
}

func methodKeys() []string {
	var out []string
	for _, me := range methods {
		out = append(out, me.Key)
	}
	return out
}

func strategyOf(key string) runtime.Strategy {
	for _, me := range methods {
		if me.Key == key {
			return me.strategy
		}
	}
	return runtime.Auto
}

// ARMCount is one Cortex-A53 instruction count per prediction.
type ARMCount struct {
	Method       string
	K            int
	Instructions int64
}

// readARM reads lines "method K instructions" (# comments and blank lines skipped).
func readARM(path string) ([]ARMCount, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ARMCount
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %q is not \"method K instructions\"", path, i+1, line)
		}
		k, err1 := strconv.Atoi(f[1])
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil || k < 1 || n <= 0 {
			return nil, fmt.Errorf("%s:%d: %q: K and instructions must be positive integers", path, i+1, line)
		}
		out = append(out, ARMCount{Method: f[0], K: k, Instructions: n})
	}
	return out, nil
}

// armRatios returns, per "<method>/<K>", the count over the deterministic forward's and over
// Ensemble-W's of K members (counted, or K deterministic forwards when not counted, which is what
// an ensemble runs: the counted ones agree to well under 1 %).
func armRatios(counts []ARMCount) (xDet, xEnsW map[string]float64, err error) {
	by := map[string]float64{}
	for _, c := range counts {
		by[memKey(c.Method, c.K)] = float64(c.Instructions)
	}
	det, ok := by[memKey("det", 1)]
	if !ok {
		return nil, nil, errors.New("fig3: the A53 counts have no \"det 1\" line")
	}
	if _, ok := by[memKey("ensw", 1)]; !ok {
		by[memKey("ensw", 1)] = det // an ensemble of one is the network
	}
	xDet, xEnsW = map[string]float64{}, map[string]float64{}
	for key, v := range by {
		var k int
		if _, err := fmt.Sscanf(key[strings.LastIndexByte(key, '/')+1:], "%d", &k); err != nil {
			return nil, nil, err
		}
		ens, ok := by[memKey("ensw", k)]
		if !ok {
			ens = float64(k) * det
		}
		xDet[key], xEnsW[key] = v/det, v/ens
	}
	return xDet, xEnsW, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func pm(mean, se float64, prec int) string {
	if math.IsNaN(mean) {
		return "—"
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, mean, prec, se)
}

// table writes the Markdown table: one row per (batch, K, method).
func table(w io.Writer, res *Results, arm []ARMCount) error {
	var armDet, armEns map[string]float64
	if len(arm) > 0 {
		var err error
		if armDet, armEns, err = armRatios(arm); err != nil {
			return err
		}
	}
	type key struct {
		batch, k int
		method   string
	}
	groups := map[key][]Timing{}
	var batches, ks []int
	for _, t := range res.Timings {
		kk := key{t.Batch, t.K, t.Method}
		groups[kk] = append(groups[kk], t)
		if !slices.Contains(batches, t.Batch) {
			batches = append(batches, t.Batch)
		}
		if !slices.Contains(ks, t.K) {
			ks = append(ks, t.K)
		}
	}
	sort.Ints(batches)
	sort.Ints(ks)
	fmt.Fprintln(w, "| batch | K | method | CPU ms per call | × det. forward | × Ensemble-W | × Ensemble-W (wall clock) | A53 × det. | A53 × Ensemble-W | file MiB | runtime MiB | memory × Ensemble-W | reps |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range batches {
		for _, k := range ks {
			for _, me := range append([]method{{Key: "det", Name: "deterministic"}}, methods...) {
				ts := groups[key{n, k, me.Key}]
				if len(ts) == 0 {
					continue
				}
				var s, xd, xe, xw []float64
				for _, t := range ts {
					s, xd, xe, xw = append(s, 1e3*t.cost()), append(xd, t.XDet), append(xe, t.XEnsW), append(xw, t.WallXEnsW)
				}
				ms, mse := eval.MeanSE(s)
				d, dse := eval.MeanSE(xd)
				e, ese := eval.MeanSE(xe)
				wm, wse := eval.MeanSE(xw)
				ad, ae := "", ""
				if n == 1 {
					if v, ok := armDet[memKey(me.Key, k)]; ok {
						ad, ae = fmt.Sprintf("%.2f", v), fmt.Sprintf("%.2f", armEns[memKey(me.Key, k)])
					}
				}
				memK := me.Key
				if strings.HasPrefix(memK, "ffgu") {
					memK = "ffgu"
				}
				file, rt, rel := "", "", ""
				mem, ensMem := res.Memory[memKey(memK, k)], res.Memory[memKey("ensw", k)]
				if me.Key == "det" {
					mem = res.Memory[memKey("det", 1)]
				}
				if n == 1 && mem != nil && ensMem != nil {
					file, rt = mib(mem.FileBytes), mib(mem.RuntimeBytes)
					rel = fmt.Sprintf("%.3f", float64(mem.RuntimeBytes)/float64(ensMem.RuntimeBytes))
				}
				detCol := pm(d, dse, 2)
				if me.Key == "det" {
					detCol = "1"
				}
				fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
					n, k, me.Name, pm(ms, mse, 1), detCol, pm(e, ese, 3), pm(wm, wse, 3), ad, ae, file, rt, rel, len(ts))
			}
		}
	}
	return nil
}

// drawPlot plots each method's ratio to Ensemble-W against K (log scale; batch 1, and FFG-U auto at
// the larger batch sizes), mean ± standard error, with the A53 instruction ratios as marks.
func drawPlot(path string, res *Results, arm []ARMCount) error {
	p := plot.New()
	name, _ := archName(res.Arch)
	p.Title.Text = name + " (CIFAR): K-sample prediction / Ensemble-W of K members"
	p.X.Label.Text, p.Y.Label.Text = "K (samples = ensemble members)", "CPU time relative to Ensemble-W"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.ConstantTicks(kTicks(res))
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	colors := trainplot.Tableau
	n := 0
	curve := func(key, name string, batch int) error {
		byK := map[int][]float64{}
		for _, t := range res.Timings {
			if t.Method == key && t.Batch == batch {
				byK[t.K] = append(byK[t.K], t.XEnsW)
			}
		}
		if len(byK) == 0 {
			return nil
		}
		var pts plotter.XYs
		var errs plotter.YErrors
		for k, v := range byK {
			m, se := eval.MeanSE(v)
			pts, errs = append(pts, plotter.XY{X: float64(k), Y: m}), append(errs, struct{ Low, High float64 }{se, se})
		}
		sort.Sort(byX{pts, errs})
		c := colors[n%len(colors)]
		n++
		_, sc, err := trainplot.AddErrorLine(p, name, pts, errs, c, batch > 1)
		if err != nil {
			return fmt.Errorf("fig3: plot: %w", err)
		}
		sc.Radius = vg.Points(2.5)
		return nil
	}
	for _, me := range methods {
		if err := curve(me.Key, me.Name, 1); err != nil {
			return err
		}
	}
	done := map[int]bool{}
	for _, t := range res.Timings {
		if t.Batch > 1 && !done[t.Batch] {
			done[t.Batch] = true
			if err := curve("ffgu-auto", fmt.Sprintf("FFG-U, auto, batch %d", t.Batch), t.Batch); err != nil {
				return err
			}
		}
	}
	if len(arm) > 0 {
		_, ens, err := armRatios(arm)
		if err != nil {
			return err
		}
		var pts plotter.XYs
		for _, c := range arm {
			if strings.HasPrefix(c.Method, "ffgu") {
				pts = append(pts, plotter.XY{X: float64(c.K), Y: ens[memKey(c.Method, c.K)]})
			}
		}
		if len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return fmt.Errorf("fig3: plot: %w", err)
			}
			sc.Shape, sc.Radius, sc.Color = draw.BoxGlyph{}, vg.Points(4), color.Black
			p.Add(sc)
			p.Legend.Add("FFG-U, weight: Cortex-A53 instructions", sc)
		}
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(110) // between Ensemble-W (1) and the inducing curves (about 5)
	if err := trainplot.Save(p, path, 8, 5); err != nil {
		return fmt.Errorf("fig3: plot: %w", err)
	}
	return nil
}

// byX sorts points and their error bars together by X.
type byX struct {
	pts  plotter.XYs
	errs plotter.YErrors
}

func (b byX) Len() int           { return len(b.pts) }
func (b byX) Less(i, j int) bool { return b.pts[i].X < b.pts[j].X }
func (b byX) Swap(i, j int) {
	b.pts[i], b.pts[j] = b.pts[j], b.pts[i]
	b.errs[i], b.errs[j] = b.errs[j], b.errs[i]
}

// kTicks labels each K measured.
func kTicks(res *Results) []plot.Tick {
	var ks []int
	for _, t := range res.Timings {
		if !slices.Contains(ks, t.K) {
			ks = append(ks, t.K)
		}
	}
	sort.Ints(ks)
	var ticks []plot.Tick
	for _, k := range ks {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
	}
	return ticks
}

func loadAvg() [3]float64 {
	var l [3]float64
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(raw))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fig3", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "runs/fig3/models", "write the models to `DIR`")
	arch := fs.String("arch", "resnet18", "the network: resnet18 or resnet50 (`NAME`)")
	kList := fs.String("k", "1,2,4,8,16,32", "samples / ensemble members `K`, comma-separated")
	reps := fs.Int("reps", 3, "repetitions")
	minTime := fs.Duration("min-time", 300*time.Millisecond, "time each method for at least `D` per repetition")
	minCalls := fs.Int("min-calls", 1, "and at least `N` prediction calls")
	batchList := fs.String("batches", "1", "batch sizes, comma-separated (those above 1 only for -batch-k)")
	batchKList := fs.String("batch-k", "1,4", "the K timed at batch sizes above 1")
	armPath := fs.String("arm", "", "A53 instruction counts `FILE` (lines \"method K instructions\")")
	jsonPath := fs.String("json", "", "write the measurements to `FILE`")
	pngPath := fs.String("png", "", "draw the ratios to Ensemble-W to `FILE.png`")
	buildOnly := fs.Bool("build-only", false, "write the models to -dir and stop")
	from := fs.String("from", "", "measure nothing: print the table and draw the plot of an earlier -json `FILE`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Outputs that cannot be written are refused before the measurements, not after them.
	if err := outfile.CheckOutputs("fig3: ", outfile.Output{Flag: "-json", Path: *jsonPath}, outfile.Output{Flag: "-png", Path: *pngPath}); err != nil {
		return err
	}
	ks, err := parseInts(*kList)
	if err != nil {
		return fmt.Errorf("fig3: -k: %w", err)
	}
	batches, err := parseInts(*batchList)
	if err != nil {
		return fmt.Errorf("fig3: -batches: %w", err)
	}
	batchKs, err := parseInts(*batchKList)
	if err != nil {
		return fmt.Errorf("fig3: -batch-k: %w", err)
	}
	if *reps < 1 {
		return errors.New("fig3: -reps must be positive")
	}
	if _, ok := archName(*arch); !ok {
		return fmt.Errorf("fig3: -arch %q is not resnet18 or resnet50", *arch)
	}
	var arm []ARMCount
	if *armPath != "" {
		if arm, err = readARM(*armPath); err != nil {
			return fmt.Errorf("fig3: -arm: %w", err)
		}
	}
	res := &Results{Arch: *arch, Started: time.Now().UTC(), Load: loadAvg()}
	if *from != "" {
		raw, err := os.ReadFile(*from)
		if err != nil {
			return fmt.Errorf("fig3: -from: %w", err)
		}
		if err := json.Unmarshal(raw, res); err != nil {
			return fmt.Errorf("fig3: -from %s: %w", *from, err)
		}
	} else {
		if res.Memory, err = build(*dir, *arch, ks, stderr); err != nil || *buildOnly {
			return err
		}
		t := timer{minTime: *minTime, minCalls: *minCalls}
		for r := 1; r <= *reps; r++ {
			ts, err := measure(*dir, r, ks, batches, batchKs, t, stderr)
			if err != nil {
				return err
			}
			res.Timings = append(res.Timings, ts...)
		}
		res.LoadEnd = loadAvg()
	}
	name, _ := archName(res.Arch)
	fmt.Fprintf(stdout, "%s (CIFAR), GOMAXPROCS=%d, %s; load average %.2f / %.2f / %.2f at the start, %.2f / %.2f / %.2f at the end\n\n",
		name, goruntime.GOMAXPROCS(0), res.Started.Format(time.RFC3339), res.Load[0], res.Load[1], res.Load[2],
		res.LoadEnd[0], res.LoadEnd[1], res.LoadEnd[2])
	if err := table(stdout, res, arm); err != nil {
		return err
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			return err
		}
		if err := outfile.WriteBytes(context.Background(), *jsonPath, append(b, '\n')); err != nil {
			return fmt.Errorf("fig3: %w", err)
		}
	}
	if *pngPath != "" {
		if err := drawPlot(*pngPath, res, arm); err != nil {
			return err
		}
	}
	return nil
}

// archName is the network's name as the paper writes it, and whether -arch takes arch
// (convert.Plan's names; "" is resnet18: results files from before -arch).
func archName(arch string) (string, bool) {
	switch arch {
	case "resnet18":
		return "ResNet-18", true
	case "resnet50":
		return "ResNet-50", true
	}
	return "ResNet-18", false
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
}
