package train

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/data"
)

// laplaceData returns n random examples of dim inputs: labels of q classes (q > 0) or q
// regression targets (q < 0).
func laplaceData(n, dim, q int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := &data.Dataset{Name: "laplace-test", N: n, Dim: dim, Shape: []int{dim}, X: make([]float32, n*dim)}
	for i := range d.X {
		d.X[i] = float32(rng.NormFloat64())
	}
	if q > 0 {
		d.Classes, d.Labels = q, make([]int, n)
		for i := range d.Labels {
			d.Labels[i] = rng.IntN(q)
		}
	} else {
		d.Outputs, d.Targets = -q, make([]float32, n*-q)
		for i := range d.Targets {
			d.Targets[i] = float32(rng.NormFloat64())
		}
	}
	return d
}

// laplaceNet builds an ffg network of arch for d (Gaussian likelihood of precision tau for
// regression data) with random means of scale 0.7.
func laplaceNet(t *testing.T, arch string, d *data.Dataset, tau float64) *bnn.Net[float32] {
	t.Helper()
	nodes, _, err := convert.ParseArch(arch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	icfg, err := bnnconfig.Parse([]byte(`{"inference": "ffg"}`))
	if err != nil {
		t.Fatal(err)
	}
	task := runtime.Classification
	if d.Regression() {
		task = runtime.Regression
	}
	spec, inits, err := bnn.SpecFromNodes(nodes, icfg, d.Shape, task, 1/tau)
	if err != nil {
		t.Fatal(err)
	}
	net, err := bnn.New[float32](spec, inits, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ts, _ := net.FFGTensors()
	for _, f := range ts {
		for i := range f.Mean.Value {
			f.Mean.Value[i] = float32(0.7 * rng.NormFloat64())
		}
	}
	return net
}

// refMLP is a float64 MLP of the given widths (tanh between layers when tanh is set) whose
// parameters θ are the FFG tensors' means concatenated (weight, bias per layer; weights
// row-major d_out × d_in), as the test's own reference for the network.
type refMLP struct {
	widths []int
	tanh   bool
}

func (m refMLP) forward(theta []float64, x []float32) []float64 {
	h := make([]float64, len(x))
	for i, v := range x {
		h[i] = float64(v)
	}
	off := 0
	for l := 1; l < len(m.widths); l++ {
		din, dout := m.widths[l-1], m.widths[l]
		w, b := theta[off:off+dout*din], theta[off+dout*din:off+dout*din+dout]
		off += dout*din + dout
		z := make([]float64, dout)
		for o := range z {
			z[o] = b[o]
			for i := 0; i < din; i++ {
				z[o] += w[o*din+i] * h[i]
			}
			if m.tanh && l < len(m.widths)-1 {
				z[o] = math.Tanh(z[o])
			}
		}
		h = z
	}
	return h
}

// softmax64 returns the softmax of z.
func softmax64(z []float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	p, s := make([]float64, len(z)), 0.0
	for k, v := range z {
		p[k] = math.Exp(v - mx)
		s += p[k]
	}
	for k := range p {
		p[k] /= s
	}
	return p
}

// meansOf concatenates the FFG tensors' means (refMLP's θ).
func meansOf(net *bnn.Net[float32]) []float64 {
	ts, _ := net.FFGTensors()
	var theta []float64
	for _, f := range ts {
		for _, v := range f.Mean.Value {
			theta = append(theta, float64(v))
		}
	}
	return theta
}

func flatten(g [][]float64) []float64 {
	var out []float64
	for _, v := range g {
		out = append(out, v...)
	}
	return out
}

// TestGGNDiagonalClassification compares the exact GGN diagonal of softmax cross-entropy with
// Σ_n Jᵀ(diag p − ppᵀ)J computed from a finite-difference Jacobian of the test's own float64
// network, and for the linear softmax model (whose GGN is its Hessian) with the second
// differences of the summed cross-entropy.
func TestGGNDiagonalClassification(t *testing.T) {
	for _, tc := range []struct {
		name    string
		arch    string
		ref     refMLP
		n       int
		hessian bool
	}{
		{"linear-softmax", "mlp:3-4", refMLP{widths: []int{3, 4}}, 5, true},
		{"linear-binary", "mlp:2-2", refMLP{widths: []int{2, 2}}, 3, true},
		{"tanh-mlp", "mlp:3-5-4:tanh", refMLP{widths: []int{3, 5, 4}, tanh: true}, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.ref.widths[len(tc.ref.widths)-1]
			d := laplaceData(tc.n, tc.ref.widths[0], q, 11)
			net := laplaceNet(t, tc.arch, d, 1)
			got, err := GGNDiagonal(context.Background(), net, d, GGNOptions{Method: "exact", BatchSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			g := flatten(got)
			theta := meansOf(net)
			if len(g) != len(theta) {
				t.Fatalf("%d GGN values for %d parameters", len(g), len(theta))
			}
			const h = 1e-5
			for j := range theta {
				want := 0.0
				for n := 0; n < d.N; n++ {
					x := d.Row(n)
					p := softmax64(tc.ref.forward(theta, x))
					tp, tm := append([]float64(nil), theta...), append([]float64(nil), theta...)
					tp[j] += h
					tm[j] -= h
					fp, fm := tc.ref.forward(tp, x), tc.ref.forward(tm, x)
					jc := make([]float64, q) // column j of J_n
					for k := range jc {
						jc[k] = (fp[k] - fm[k]) / (2 * h)
					}
					pj := 0.0
					for k := range jc {
						pj += p[k] * jc[k]
					}
					for k := range jc { // Jᵀ(diag p − ppᵀ)J = Σ_k p_k J_k² − (pᵀJ)²
						want += p[k] * jc[k] * jc[k]
					}
					want -= pj * pj
				}
				if !(math.Abs(g[j]-want) <= 1e-4*(1+math.Abs(want))) {
					t.Errorf("parameter %d: GGN %.7g, want %.7g (finite-difference Jacobian)", j, g[j], want)
				}
			}
			if !tc.hessian {
				return
			}
			loss := func(th []float64) float64 {
				s := 0.0
				for n := 0; n < d.N; n++ {
					z := tc.ref.forward(th, d.Row(n))
					mx := math.Inf(-1)
					for _, v := range z {
						mx = max(mx, v)
					}
					lse := 0.0
					for _, v := range z {
						lse += math.Exp(v - mx)
					}
					s += mx + math.Log(lse) - z[d.Labels[n]]
				}
				return s
			}
			const hh = 1e-3
			l0 := loss(theta)
			for j := range theta {
				tp, tm := append([]float64(nil), theta...), append([]float64(nil), theta...)
				tp[j] += hh
				tm[j] -= hh
				want := (loss(tp) - 2*l0 + loss(tm)) / (hh * hh)
				if !(math.Abs(g[j]-want) <= 1e-4*(1+math.Abs(want))) {
					t.Errorf("parameter %d: GGN %.7g, Hessian diagonal %.7g (second differences)", j, g[j], want)
				}
			}
		})
	}
}

// TestLaplaceLinearGaussian: for linear regression with noise precision β the Laplace
// precision is exact and closed-form — α + β Σ_n x_{n,i}² for weight (o, i), α + β N for a
// bias — and edgebnn train --posterior laplace writes σ = that^{-1/2} into the checkpoint's
// _weight_sd / _bias_sd, with the prior buffers N(0, α⁻¹).
func TestLaplaceLinearGaussian(t *testing.T) {
	for _, tc := range []struct {
		name              string
		n, dim, outputs   int
		alpha, beta       float64
		method            string
		samples, batch    int
		relTol            float64
		throughTheTrainer bool
	}{
		{"1-in-1-out", 7, 1, 1, 1, 100, "exact", 0, 3, 1e-5, false},
		{"3-in-2-out", 20, 3, 2, 2.5, 4, "exact", 0, 8, 1e-5, true},
		{"5-in-1-out-one-batch", 9, 5, 1, 0.01, 0.5, "exact", 0, 100, 1e-5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := laplaceData(tc.n, tc.dim, -tc.outputs, 21)
			want := make([]float64, 0, tc.outputs*(tc.dim+1))
			for o := 0; o < tc.outputs; o++ {
				for i := 0; i < tc.dim; i++ {
					s := 0.0
					for n := 0; n < tc.n; n++ {
						x := float64(d.Row(n)[i])
						s += x * x
					}
					want = append(want, tc.alpha+tc.beta*s)
				}
			}
			for o := 0; o < tc.outputs; o++ {
				want = append(want, tc.alpha+tc.beta*float64(tc.n))
			}
			arch := "mlp:" + strconv.Itoa(tc.dim) + "-" + strconv.Itoa(tc.outputs)
			var got []float64
			if !tc.throughTheTrainer {
				net := laplaceNet(t, arch, d, tc.beta)
				g, err := GGNDiagonal(context.Background(), net, d, GGNOptions{Method: tc.method, BatchSize: tc.batch, NoisePrecision: tc.beta})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range flatten(g) {
					got = append(got, tc.alpha+v)
				}
			} else {
				c := DefaultConfig()
				c.Arch, c.Data, c.Task, c.Posterior = arch, "linreg", "regression", "laplace"
				c.NoisePrecision, c.PriorPrecision, c.BatchSize, c.Epochs = tc.beta, tc.alpha, tc.batch, 2
				c.Out = filepath.Join(t.TempDir(), "lap.ebnn")
				tr, err := NewWithData(c, d, laplaceData(5, tc.dim, -tc.outputs, 22))
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Run(context.Background(), Hooks{}); err != nil {
					t.Fatal(err)
				}
				f, err := format.Open(c.Out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// weights first, then biases, as want; the MLP's one Linear layer is its second module
				for _, name := range []string{"1._weight_sd", "1._bias_sd"} {
					raw, _, err := fileTensors{f}.Tensor(name)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range raw {
						s := math.Log1p(math.Exp(float64(r)))
						got = append(got, 1/(s*s))
					}
				}
				for _, name := range []string{"1.prior_weight_sd", "1.prior_bias_sd"} {
					ps, _, err := fileTensors{f}.Tensor(name)
					if err != nil {
						t.Fatal(err)
					}
					if len(ps) == 0 {
						t.Fatalf("%s: no values", name)
					}
					for _, v := range ps {
						if !(math.Abs(float64(v)-1/math.Sqrt(tc.alpha)) <= 1e-6) {
							t.Fatalf("%s = %g, want α^-1/2 = %g", name, v, 1/math.Sqrt(tc.alpha))
						}
					}
				}
				if r := tr.Laplace(); r == nil || r.PriorPrecision != tc.alpha || r.Examples != tc.n || r.Weights != len(want) {
					t.Fatalf("report %+v, want α %g over %d examples and %d weights", r, tc.alpha, tc.n, len(want))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d precisions, want %d", len(got), len(want))
			}
			for i := range want {
				if !(math.Abs(got[i]-want[i]) <= tc.relTol*want[i]) {
					t.Errorf("precision %d = %.8g, want %.8g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestGGNDiagonalMC: the Monte-Carlo Fisher (S sampled labels, or Gaussian targets, per
// example) matches the exact GGN diagonal within five of its standard deviations, computed here
// from the per-example, per-label squared gradients of the linear model: for weight (o, i) and
// label c, ((e_c − p_n)_o x_{n,i})² with c ∼ p_n; for regression τ ε² x_{n,i}², ε ∼ N(0, 1),
// of variance 2τ² x⁴.
func TestGGNDiagonalMC(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       int // classes (> 0) or regression outputs (< 0)
		samples int
		tau     float64
	}{
		{"softmax-S1", 4, 1, 0},
		{"softmax-S50", 4, 50, 0},
		{"gaussian-S20", -2, 20, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n, dim = 40, 3
			d := laplaceData(n, dim, tc.q, 31)
			outs := tc.q
			if outs < 0 {
				outs = -outs
			}
			net := laplaceNet(t, "mlp:3-"+strconv.Itoa(outs), d, max(tc.tau, 1))
			opt := GGNOptions{Method: "exact", BatchSize: 16, NoisePrecision: tc.tau, Seed: 9}
			exact, err := GGNDiagonal(context.Background(), net, d, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.Method, opt.Samples = "mc", tc.samples
			mc, err := GGNDiagonal(context.Background(), net, d, opt)
			if err != nil {
				t.Fatal(err)
			}
			theta := meansOf(net)
			ref := refMLP{widths: []int{dim, outs}}
			// variance of the estimator for weight (o, i) (i = dim: the bias, input 1)
			vr := make([]float64, outs*(dim+1))
			for nn := 0; nn < n; nn++ {
				x := append([]float64(nil), 0, 0, 0, 1)
				for i := 0; i < dim; i++ {
					x[i] = float64(d.Row(nn)[i])
				}
				for o := 0; o < outs; o++ {
					for i := 0; i <= dim; i++ {
						v := 0.0
						if tc.q > 0 {
							p := softmax64(ref.forward(theta, d.Row(nn)))
							m1, m2 := 0.0, 0.0
							for c := 0; c < outs; c++ {
								e := -p[o]
								if c == o {
									e++
								}
								s := e * e * x[i] * x[i]
								m1 += p[c] * s
								m2 += p[c] * s * s
							}
							v = m2 - m1*m1
						} else {
							v = 2 * tc.tau * tc.tau * math.Pow(x[i], 4)
						}
						vr[o*(dim+1)+i] += v / float64(tc.samples)
					}
				}
			}
			// GGNDiagonal's order: weights (o, i) row-major, then biases
			idx := func(o, i int) (tensor, k int) {
				if i == dim {
					return 1, o
				}
				return 0, o*dim + i
			}
			for o := 0; o < outs; o++ {
				for i := 0; i <= dim; i++ {
					tn, k := idx(o, i)
					sd := math.Sqrt(vr[o*(dim+1)+i])
					if diff := math.Abs(mc[tn][k] - exact[tn][k]); !(diff <= 5*sd+1e-6*exact[tn][k]) {
						t.Errorf("weight (%d, %d): MC %.6g, exact %.6g: off by %.2f standard deviations (%.3g)", o, i, mc[tn][k], exact[tn][k], diff/sd, sd)
					}
				}
			}
		})
	}
}

// TestGGNDiagonalErrors: bad data and options are errors that say what is wrong.
func TestGGNDiagonalErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(d *data.Dataset, o *GGNOptions)
		want string
	}{
		{"NaN input", func(d *data.Dataset, _ *GGNOptions) { d.X[4] = float32(math.NaN()) }, "input value 1 of example 1 is NaN"},
		{"Inf input", func(d *data.Dataset, _ *GGNOptions) { d.X[0] = float32(math.Inf(1)) }, "is +Inf"},
		{"no examples", func(d *data.Dataset, _ *GGNOptions) { d.N, d.X, d.Labels = 0, nil, nil }, "no examples"},
		{"method", func(_ *data.Dataset, o *GGNOptions) { o.Method = "empirical" }, `"empirical" is not exact or mc`},
		{"mc samples", func(_ *data.Dataset, o *GGNOptions) { o.Method, o.Samples = "mc", 0 }, "at least one sample"},
		{"labels", func(d *data.Dataset, _ *GGNOptions) { d.Labels = d.Labels[:2] }, "labels for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := laplaceData(4, 3, 2, 41)
			net := laplaceNet(t, "mlp:3-2", d, 1)
			o := GGNOptions{Method: "exact"}
			tc.edit(d, &o)
			_, err := GGNDiagonal(context.Background(), net, d, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	d := laplaceData(4, 3, -1, 42)
	d.Targets[2] = float32(math.NaN())
	if _, err := GGNDiagonal(context.Background(), laplaceNet(t, "mlp:3-1", d, 1), d, GGNOptions{Method: "exact", NoisePrecision: 1}); err == nil ||
		!strings.Contains(err.Error(), "target 0 of example 2 is NaN") {
		t.Fatalf("NaN target: error %v", err)
	}
}

// TestLaplaceConfig: the laplace keys are checked, and a zero-epoch run needs init_from.
func TestLaplaceConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"ggn", func(c *Config) { c.LaplaceGGN = "kfac" }, `laplace_ggn "kfac" is not exact or mc`},
		{"prior", func(c *Config) { c.PriorPrecision = 0 }, "prior_precision 0 must be positive"},
		{"epochs 0", func(c *Config) { c.Epochs = 0 }, "epochs 0 needs init_from"},
		{"fsvi", func(c *Config) { c.Objective = "fsvi" }, `objective "fsvi": the MAP network`},
		{"inference", func(c *Config) { _ = c.Inference.Set(`{"inference": "ffg"}`) }, "takes no inference config"},
		{"mc samples", func(c *Config) { c.LaplaceMCSamples = 0 }, "laplace_mc_samples 0 outside"},
		{"prune", func(c *Config) { c.PruneSNR, c.FinetuneEpochs = 0.5, 1 }, "prune_snr applies to posterior ffg_w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, "laplace", "")
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	c := toyConfig(t, "laplace", "")
	c.LaplaceVal = 100 // toy1d has 100 training examples
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "laplace_val 100 leaves none of the 100") {
		t.Fatalf("laplace_val = N: error %v", err)
	}
}

// TestLaplacePostHoc: a laplace run writes its MAP network to the per-epoch checkpoint and the
// Laplace posterior (ffg) to --out; the fitted checkpoint is not resumed, while resuming the
// MAP checkpoint, or starting from it with init_from and epochs 0, gives the same posterior.
// With laplace_val the prior precision is one of the grid's and the held-out examples are
// excluded from the GGN.
func TestLaplacePostHoc(t *testing.T) {
	c := toyConfig(t, "laplace", "")
	c.Epochs = 3
	tr := trainRun(t, c)
	sds := func(path string) []float32 {
		f, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []float32
		for _, name := range f.Tensors() {
			if strings.HasSuffix(name, "_sd") && !strings.Contains(name, "prior") {
				v, _, err := fileTensors{f}.Tensor(name)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v...)
			}
		}
		return out
	}
	want := sds(c.Out)
	if len(want) == 0 {
		t.Fatal("no _weight_sd tensors in the Laplace checkpoint")
	}
	if got := sds(tr.EpochCheckpointPath()); len(got) != 0 {
		t.Fatalf("the per-epoch checkpoint has %d σ values, want the deterministic MAP network", len(got))
	}
	if _, err := Resume(c.Out, nil); err == nil || !strings.Contains(err.Error(), "fitted Laplace posterior") {
		t.Fatalf("resume of the fitted checkpoint: error %v", err)
	}
	same := func(name string, got []float32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d σ values, want %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: raw σ %d = %g, want %g", name, i, got[i], want[i])
			}
		}
	}
	r, err := Resume(tr.EpochCheckpointPath(), func(c *Config) error {
		c.Out = filepath.Join(t.TempDir(), "resumed.ebnn")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	same("resumed", sds(r.Config.Out))
	p := toyConfig(t, "laplace", "")
	p.Epochs, p.InitFrom = 0, tr.EpochCheckpointPath()
	ph := trainRun(t, p)
	same("post hoc", sds(p.Out))
	if _, err := runtime.Load(ph.ModelPath()); err != nil {
		t.Fatalf("runtime.Load of the Laplace model: %v", err)
	}

	v := toyConfig(t, "laplace", "")
	v.Epochs, v.InitFrom, v.LaplaceVal = 0, tr.EpochCheckpointPath(), 20
	vt := trainRun(t, v)
	rep := vt.Laplace()
	if rep.Examples != 80 || rep.ValExamples != 20 || len(rep.Grid) != len(LaplaceGridExponents) {
		t.Fatalf("report: %d examples, %d held out, %d grid points; want 80, 20, %d", rep.Examples, rep.ValExamples, len(rep.Grid), len(LaplaceGridExponents))
	}
	best := rep.Grid[0]
	for _, g := range rep.Grid {
		if math.IsNaN(g.NLL) {
			t.Fatalf("grid point %g: NLL NaN", g.PriorPrecision)
		}
		if g.NLL < best.NLL {
			best = g
		}
	}
	if rep.PriorPrecision != best.PriorPrecision {
		t.Fatalf("prior precision %g, but the grid's best NLL is at %g", rep.PriorPrecision, best.PriorPrecision)
	}
}
