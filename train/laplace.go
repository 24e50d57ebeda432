package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// Posterior laplace is the diagonal Laplace approximation of the weight posterior around a MAP
// network (MacKay 1992; Ritter et al. 2018; Daxberger et al. 2021, "Laplace Redux"): the MAP
// network θ* is trained as posterior deterministic with weight decay 1/(N α) — the mode of the
// posterior under the prior N(0, α⁻¹ I) — or taken from init_from (epochs 0: post hoc, without
// retraining), then one pass over the training data forms the diagonal of the posterior
// precision, α + diag Σ_n J_nᵀ Λ_n J_n (the generalized Gauss-Newton matrix, GGN; J_n the
// Jacobian of the network's outputs at θ*, Λ_n the Hessian of the NLL in the outputs:
// diag p_n − p_n p_nᵀ for softmax cross-entropy, τ I for a Gaussian likelihood of precision τ).
// The result is q(θ) = N(θ*, diag(α + GGN)⁻¹), written in the form posterior ffg_w writes
// (weight_mean = θ*, _weight_sd = softplus⁻¹(σ), prior buffers N(0, α⁻¹)), so edgebnn convert
// makes it a KindFFG model that every device target runs.
//
// The GGN diagonal is computed exactly by default: with Λ_n = Σ_c v_{n,c} v_{n,c}ᵀ,
// v_{n,c} = √p_{n,c} (e_c − p_n), its diagonal is Σ_c (J_nᵀ v_{n,c})², one reverse pass per
// class c for a whole batch. For a Linear layer J_nᵀv restricted to W is the outer product
// δ_n ⊗ a_n of the output gradient and the input, so the squares sum over the batch as one
// matrix product (δ²)ᵀ(a²). It costs one forward and Q (outputs) reverse passes per batch —
// for Fashion-MNIST's ten classes a few training epochs' worth — and has no sampling noise,
// which matters because the prior precision is tuned against it. laplace_ggn mc instead draws S
// labels per example from the model's own predictive (the Monte-Carlo Fisher, unbiased for the
// GGN: E_{c∼p}[(Jᵀ(e_c − p))²] = Σ_c p_c (Jᵀ(e_c − p))²), S reverse passes per batch, for
// models with many outputs. The empirical Fisher (the observed labels in place of sampled ones)
// is not offered: it is not an estimate of the GGN at all — at a MAP that fits most training
// examples their gradients p_n − e_{y_n} are small, so it underestimates the curvature and
// inflates σ (Kunstner et al. 2019).
//
// With the training prior (α = 1 for N(0, 1)) a diagonal GGN Laplace is over-dispersed: the
// diagonal ignores the correlations that pin weights down jointly, and sampled networks lose
// accuracy. As in Laplace Redux the prior precision is therefore a hyperparameter: laplace_val
// holds out the last laplace_val training examples and picks α from LaplaceGrid by their NLL
// under the sampled predictive. The default (laplace_val 0) uses prior_precision unchanged:
// then the written posterior is the Laplace approximation of the model as configured, and no
// training data is silently withheld; tuning is a choice to make knowingly (the Table 1 run of
// bench/fsvi_table1.sh makes it).

// LaplaceGridExponents are the exponents k of laplace_val's grid of prior precisions
// prior_precision · 10^(k/2): 10⁻² … 10⁶ times it, half a decade apart.
var LaplaceGridExponents = []int{-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

// laplaceAtPrior is the relative margin by which a σ counts as at its upper bound α^{-1/2} (the
// prior's): the GGN adds less than about 2 % to α for such a weight.
const laplaceAtPrior = 0.01

// LaplaceReport describes a fitted Laplace approximation (State.Laplace).
type LaplaceReport struct {
	// GGN is "exact" or "mc" (MCSamples labels per example); Examples the examples summed over.
	GGN       string `json:"ggn"`
	MCSamples int    `json:"mc_samples,omitempty"`
	Examples  int    `json:"examples"`
	// PriorPrecision is the α of the written posterior (tuned when Grid is set).
	PriorPrecision float64 `json:"prior_precision"`
	// ValExamples and Grid: the held-out examples and the validation NLL at each α tried.
	ValExamples int                `json:"val_examples,omitempty"`
	Grid        []LaplaceGridPoint `json:"grid,omitempty"`
	// Weights counts the weights and biases; AtPrior is the fraction whose σ is within 1 % of
	// the prior's α^{-1/2} (no curvature: e.g. the weights of always-zero input pixels) and
	// Capped the fraction clamped at the layers' max_sd (0: the written layers have none).
	Weights int     `json:"weights"`
	AtPrior float64 `json:"at_prior"`
	Capped  float64 `json:"capped"`
	// SDMin, SDMedian and SDMax summarise σ over all weights and biases.
	SDMin    float64 `json:"sd_min"`
	SDMedian float64 `json:"sd_median"`
	SDMax    float64 `json:"sd_max"`
	// GGNSeconds is the time of the GGN pass, Seconds that of the whole fit (tuning included).
	GGNSeconds float64 `json:"ggn_seconds"`
	Seconds    float64 `json:"seconds"`
	// Test is the Laplace posterior's evaluation on the test set.
	Test *eval.Report `json:"test,omitempty"`
}

// LaplaceGridPoint is one prior precision tried and its validation NLL.
type LaplaceGridPoint struct {
	PriorPrecision float64 `json:"prior_precision"`
	NLL            float64 `json:"nll"`
}

// Lines describes the report for a terminal.
func (r *LaplaceReport) Lines() []string {
	how := "exact"
	if r.GGN == "mc" {
		how = fmt.Sprintf("Monte-Carlo Fisher, %d label(s) per example", r.MCSamples)
	}
	l := []string{fmt.Sprintf("laplace: GGN diagonal (%s) over %d examples in %.1f s; fit %.1f s in all", how, r.Examples, r.GGNSeconds, r.Seconds)}
	if len(r.Grid) > 0 {
		edge := ""
		if r.PriorPrecision == r.Grid[0].PriorPrecision || r.PriorPrecision == r.Grid[len(r.Grid)-1].PriorPrecision {
			edge = " — at the grid's edge"
		}
		l = append(l, fmt.Sprintf("laplace: prior precision %.4g%s, tuned on %d held-out examples (validation NLL %s)",
			r.PriorPrecision, edge, r.ValExamples, r.gridText()))
	} else {
		l = append(l, fmt.Sprintf("laplace: prior precision %.4g (prior_precision; not tuned)", r.PriorPrecision))
	}
	l = append(l, fmt.Sprintf("laplace: σ of %d weights: min %.3g, median %.3g, max %.3g; %.2f %% at the prior's α^-1/2, %.2f %% capped at max_sd",
		r.Weights, r.SDMin, r.SDMedian, r.SDMax, 100*r.AtPrior, 100*r.Capped))
	if r.Test != nil && r.Test.Classification != nil {
		c := r.Test.Classification
		l = append(l, fmt.Sprintf("laplace: test accuracy %.2f %%, NLL %.4f, ECE %.4f", 100*c.Accuracy, c.NLL, c.ECE))
	} else if r.Test != nil && r.Test.Regression != nil {
		l = append(l, fmt.Sprintf("laplace: test RMSE %.4f, NLL %.4f", r.Test.Regression.RMSE, r.Test.Regression.NLL))
	}
	return l
}

func (r *LaplaceReport) gridText() string {
	var b strings.Builder
	for i, g := range r.Grid {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.3g: %.4f", g.PriorPrecision, g.NLL)
	}
	return b.String()
}

// Laplace returns the fitted Laplace approximation's report (nil before the fit and for other
// posteriors).
func (t *Trainer) Laplace() *LaplaceReport { return t.lap }

// GGNOptions configure GGNDiagonal.
type GGNOptions struct {
	// Method is "exact" or "mc" (Samples labels, or Gaussian targets, drawn per example).
	Method  string
	Samples int
	// Seed seeds mc's draws.
	Seed uint64
	// BatchSize is the examples per forward pass (0: 100).
	BatchSize int
	// NoisePrecision is the Gaussian likelihood's τ (regression data).
	NoisePrecision float64
}

// GGNDiagonal returns the diagonal of the generalized Gauss-Newton matrix Σ_n J_nᵀ Λ_n J_n of
// the NLL summed over d's examples, at net's mean weights (net.ForwardMeanTapped), for each
// tensor of net.FFGTensors() in that order: softmax cross-entropy for labelled data (Λ_n =
// diag p_n − p_n p_nᵀ over all the network's outputs), the Gaussian NLL of precision
// o.NoisePrecision for regression data (Λ_n = τ I). Every parametric layer must be an ffg Linear
// layer (the per-example gradient of a Linear weight is an outer product, which the sum of
// squares needs). See the comment at the top of this file for the method and why.
func GGNDiagonal(ctx context.Context, net *bnn.Net[float32], d *data.Dataset, o GGNOptions) ([][]float64, error) {
	ts, other := net.FFGTensors()
	switch {
	case len(ts) == 0 || other > 0:
		return nil, fmt.Errorf("laplace: every Linear layer must have an ffg posterior (%d ffg tensors, %d other parametric layers)", len(ts), other)
	case d == nil || d.N == 0:
		return nil, fmt.Errorf("laplace: no examples to form the GGN over")
	case o.Method != "exact" && o.Method != "mc":
		return nil, fmt.Errorf("laplace: GGN method %q is not exact or mc", o.Method)
	case o.Method == "mc" && o.Samples < 1:
		return nil, fmt.Errorf("laplace: mc needs at least one sample per example, not %d", o.Samples)
	case d.Regression() && !(o.NoisePrecision > 0 && !math.IsInf(o.NoisePrecision, 0)):
		return nil, fmt.Errorf("laplace: noise precision %g must be positive and finite", o.NoisePrecision)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	for i, v := range d.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("laplace: data %s: input value %d of example %d is %v", d.Name, i%d.Dim, i/d.Dim, v)
		}
	}
	for i, v := range d.Targets {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("laplace: data %s: target %d of example %d is %v", d.Name, i%d.Outputs, i/d.Outputs, v)
		}
	}
	type slot struct{ w, b int }
	slots := map[string]*slot{}
	out := make([][]float64, len(ts))
	for i, t := range ts {
		if t.Conv {
			return nil, fmt.Errorf("laplace: layer %s is a Conv2d layer: the GGN diagonal is implemented for Linear layers only", t.Layer)
		}
		out[i] = make([]float64, len(t.Mean.Value))
		s := slots[t.Layer]
		if s == nil {
			s = &slot{w: i, b: -1}
			slots[t.Layer] = s
		} else {
			s.b = i
		}
	}
	bs := o.BatchSize
	if bs <= 0 {
		bs = 100
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x1a91ace))
	tp := autodiff.NewTape[float32]()
	var xb, seed, d2, a2, acc []float32
	var taps []bnn.LayerTap[float32]
	for start := 0; start < d.N; start += bs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nb := min(bs, d.N-start)
		xb = append(xb[:0], d.X[start*d.Dim:(start+nb)*d.Dim]...)
		tp.Reset()
		net.Begin()
		taps = taps[:0]
		f := net.ForwardMeanTapped(tp, tp.Const(xb, append([]int{nb}, d.Shape...)...), &taps)
		q := f.Len() / nb
		fv := f.Value()
		for i, v := range fv {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("laplace: output %d of example %d is %v", i%q, start+i/q, v)
			}
		}
		seeds := ggnSeeds(fv, nb, q, d.Regression(), o, rng)
		for _, s := range seeds {
			seed = append(seed[:0], s...)
			tp.ZeroGrads()
			if err := tp.BackwardFrom(f, seed); err != nil {
				return nil, fmt.Errorf("laplace: reverse pass: %w", err)
			}
			for _, tap := range taps {
				sl := slots[tap.Layer]
				if sl == nil || tap.Conv {
					return nil, fmt.Errorf("laplace: layer %s: no Linear ffg tensors", tap.Layer)
				}
				w := ts[sl.w]
				dOut, dIn := w.Shape[0], len(w.Mean.Value)/w.Shape[0]
				g, in := tap.Out.Grad(), tap.In.Value()
				if g == nil {
					continue // no gradient reaches the layer (all its outputs are cut off)
				}
				if len(g) != nb*dOut || len(in) != nb*dIn {
					return nil, fmt.Errorf("laplace: layer %s: %d output gradients and %d inputs for %d examples of %d×%d weights", tap.Layer, len(g), len(in), nb, dOut, dIn)
				}
				d2 = squares(d2, g)
				a2 = squares(a2, in)
				acc = resize(acc, dOut*dIn)
				kernels.Gemm(true, false, dOut, dIn, nb, 1, d2, dOut, a2, dIn, 0, acc, dIn)
				for i, v := range acc {
					out[sl.w][i] += float64(v)
				}
				if sl.b >= 0 {
					for n := 0; n < nb; n++ {
						for k := 0; k < dOut; k++ {
							out[sl.b][k] += float64(d2[n*dOut+k])
						}
					}
				}
			}
		}
	}
	return out, nil
}

// ggnSeeds returns the reverse-pass seeds (each nb·q values, d(·)/d(outputs)) whose squared
// vector-Jacobian products sum to the batch's GGN diagonal (exact) or estimate it without bias
// (mc), for the outputs f (nb × q).
func ggnSeeds(f []float32, nb, q int, regression bool, o GGNOptions, rng *rand.Rand) [][]float32 {
	var seeds [][]float32
	if regression {
		st := math.Sqrt(o.NoisePrecision)
		if o.Method == "exact" {
			for k := 0; k < q; k++ {
				s := make([]float32, nb*q)
				for n := 0; n < nb; n++ {
					s[n*q+k] = float32(st)
				}
				seeds = append(seeds, s)
			}
			return seeds
		}
		// y ~ N(f, τ⁻¹): the gradient of the NLL in f is τ(f − y) = √τ ε.
		sc := st / math.Sqrt(float64(o.Samples))
		for j := 0; j < o.Samples; j++ {
			s := make([]float32, nb*q)
			for i := range s {
				s[i] = float32(sc * rng.NormFloat64())
			}
			seeds = append(seeds, s)
		}
		return seeds
	}
	p := make([]float64, nb*q)
	for n := 0; n < nb; n++ {
		row := f[n*q : (n+1)*q]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, float64(v))
		}
		z := 0.0
		for k, v := range row {
			p[n*q+k] = math.Exp(float64(v) - mx)
			z += p[n*q+k]
		}
		for k := range row {
			p[n*q+k] /= z
		}
	}
	if o.Method == "exact" {
		// v_c = √p_c (e_c − p): Σ_c v_c v_cᵀ = diag p − ppᵀ.
		for c := 0; c < q; c++ {
			s := make([]float32, nb*q)
			for n := 0; n < nb; n++ {
				labelSeed(s, p, n, q, c, math.Sqrt(p[n*q+c]))
			}
			seeds = append(seeds, s)
		}
		return seeds
	}
	sc := 1 / math.Sqrt(float64(o.Samples))
	for j := 0; j < o.Samples; j++ {
		s := make([]float32, nb*q)
		for n := 0; n < nb; n++ {
			c, u := q-1, rng.Float64()
			for k := 0; k < q; k++ {
				if u -= p[n*q+k]; u < 0 {
					c = k
					break
				}
			}
			labelSeed(s, p, n, q, c, sc)
		}
		seeds = append(seeds, s)
	}
	return seeds
}

// labelSeed writes r·(e_c − p_n), the gradient of −log p_c in the logits scaled by −r, into row n
// of the seed s (q outputs per row; p the batch's probabilities).
func labelSeed(s []float32, p []float64, n, q, c int, r float64) {
	for k := 0; k < q; k++ {
		v := -p[n*q+k]
		if k == c {
			v++
		}
		s[n*q+k] = float32(r * v)
	}
}

// squares returns dst resized to len(v), holding v's squares.
func squares(dst, v []float32) []float32 {
	dst = resize(dst, len(v))
	for i, x := range v {
		dst[i] = x * x
	}
	return dst
}

func resize(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// LaplaceSD returns the Laplace posterior's standard deviations (α + g)^{-1/2} of a GGN
// diagonal g and prior precision α.
func LaplaceSD(g []float64, alpha float64) []float64 {
	s := make([]float64, len(g))
	for i, v := range g {
		s[i] = 1 / math.Sqrt(alpha+v)
	}
	return s
}

// splitLaplaceVal holds the last laplace_val training examples out as the validation set of
// the prior precision's tuning (posterior laplace only).
func (t *Trainer) splitLaplaceVal() error {
	c := &t.Config
	if c.Posterior != "laplace" || c.LaplaceVal == 0 {
		return nil
	}
	n := t.Train.N
	if c.LaplaceVal >= n {
		return fmt.Errorf("config: laplace_val %d leaves none of the %d training examples", c.LaplaceVal, n)
	}
	head, tail := make([]int, n-c.LaplaceVal), make([]int, c.LaplaceVal)
	for i := range head {
		head[i] = i
	}
	for i := range tail {
		tail[i] = n - c.LaplaceVal + i
	}
	var err error
	if t.lapVal, err = t.Train.Subset(tail); err != nil {
		return err
	}
	t.Train, err = t.Train.Subset(head)
	return err
}

// fitLaplace replaces the trained deterministic network by the diagonal Laplace approximation
// of its posterior: an ffg network with the MAP weights as means and σ = (α + GGN)^{-1/2}.
func (t *Trainer) fitLaplace(ctx context.Context) error {
	c := &t.Config
	start := time.Now()
	// t.arch, the architecture as buildNets read it (a file's inline): the file may have changed
	// or gone since.
	nodes, err := archNodes(t.arch, c.Task, t.Train)
	if err != nil {
		return err
	}
	icfg, err := bnnconfig.Parse([]byte(`{"inference": "ffg"}`))
	if err != nil {
		return err
	}
	task := runtime.Classification
	if c.Task == "regression" {
		task = runtime.Regression
	}
	spec, inits, err := bnn.SpecFromNodes(nodes, icfg, t.Train.Shape, task, 1/c.NoisePrecision)
	if err != nil {
		return err
	}
	net, err := bnn.New[float32](spec, inits, rand.New(rand.NewPCG(c.Seed, 0x1a91ace)))
	if err != nil {
		return err
	}
	ts, _ := net.FFGTensors()
	mapT := t.Nets[0].Tensors()
	for _, f := range ts {
		name := strings.TrimSuffix(f.Mean.Name, "_mean") // <layer>.weight_mean → <layer>.weight
		v, ok := mapT[name]
		if !ok || len(v.Data) != len(f.Mean.Value) {
			return fmt.Errorf("laplace: the MAP network has no tensor %s of %d values", name, len(f.Mean.Value))
		}
		copy(f.Mean.Value, v.Data)
	}
	g, err := GGNDiagonal(ctx, net, t.Train, GGNOptions{Method: c.LaplaceGGN, Samples: c.LaplaceMCSamples,
		Seed: c.Seed, BatchSize: c.BatchSize, NoisePrecision: c.NoisePrecision})
	if err != nil {
		return err
	}
	rep := &LaplaceReport{GGN: c.LaplaceGGN, Examples: t.Train.N, PriorPrecision: c.PriorPrecision,
		GGNSeconds: time.Since(start).Seconds()}
	if c.LaplaceGGN == "mc" {
		rep.MCSamples = c.LaplaceMCSamples
	}
	set := func(alpha float64) (capped int) {
		psd := float32(1 / math.Sqrt(alpha))
		for i, f := range ts {
			for j, s := range LaplaceSD(g[i], alpha) {
				if f.HasMax && s > f.MaxSD {
					capped++
				}
				f.RawSD.Value[j] = float32(math.Log(math.Expm1(s)))
			}
			for j := range f.PriorSD.Value {
				f.PriorSD.Value[j], f.PriorMean.Value[j] = psd, 0
			}
		}
		return capped
	}
	if t.lapVal != nil {
		rep.ValExamples = t.lapVal.N
		best := math.Inf(1)
		for _, k := range LaplaceGridExponents {
			if err := ctx.Err(); err != nil {
				return err
			}
			alpha := c.PriorPrecision * math.Pow(10, float64(k)/2)
			set(alpha)
			m, err := net.Model()
			if err != nil {
				return fmt.Errorf("laplace: %w", err)
			}
			r, err := eval.Evaluate(m, t.lapVal, nil, t.PredictOptions())
			if err != nil {
				return fmt.Errorf("laplace: validation: %w", err)
			}
			nll := math.NaN()
			if r.Classification != nil {
				nll = r.Classification.NLL
			} else if r.Regression != nil {
				nll = r.Regression.NLL
			}
			rep.Grid = append(rep.Grid, LaplaceGridPoint{PriorPrecision: alpha, NLL: nll})
			if nll < best {
				best, rep.PriorPrecision = nll, alpha
			}
		}
		if math.IsInf(best, 1) {
			return fmt.Errorf("laplace: no prior precision gave a finite validation NLL")
		}
	}
	capped := set(rep.PriorPrecision)
	var all []float64
	at := 0
	bound := (1 - laplaceAtPrior) / math.Sqrt(rep.PriorPrecision)
	for i := range ts {
		for _, s := range LaplaceSD(g[i], rep.PriorPrecision) {
			all = append(all, s)
			if s >= bound {
				at++
			}
		}
	}
	sort.Float64s(all)
	rep.Weights = len(all)
	rep.AtPrior = float64(at) / float64(len(all))
	rep.Capped = float64(capped) / float64(len(all))
	rep.SDMin, rep.SDMedian, rep.SDMax = all[0], all[len(all)/2], all[len(all)-1]
	rep.Seconds = time.Since(start).Seconds()
	s := net.Spec()
	t.spec = &s
	t.Nets = []*bnn.Net[float32]{net}
	t.lap = rep
	return nil
}

// finishLaplace fits the Laplace approximation after the MAP epochs (or at once, from
// init_from), evaluates it on the test set and writes the final checkpoint and model.
func (t *Trainer) finishLaplace(ctx context.Context, h Hooks) error {
	if err := t.fitLaplace(ctx); err != nil {
		return err
	}
	if t.Test.N > 0 {
		r, err := t.Evaluate()
		if err != nil {
			return err
		}
		t.lap.Test = r
	}
	return t.saveFinal(h)
}
