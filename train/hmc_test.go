package train

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/mcmc"
)

// hmcData returns n examples of dim standard-normal inputs (correlated 0.6 between neighbours)
// with regression targets (outputs > 0: y = 1 + Σ_i (−1)^i x_i·(i+1)/2 + noise/√tau, one per
// output with a shift) or labels (classes > 0: the argmax of classes fixed linear scores), all
// rounded to float32 as the trainer stores them.
func hmcTestData(seed uint64, n, dim, outputs, classes int, tau float64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	d := &data.Dataset{Name: "synthetic", N: n, Dim: dim, Shape: []int{dim}, Outputs: outputs, Classes: classes}
	for i := 0; i < n; i++ {
		prev := 0.0
		var row []float64
		for j := 0; j < dim; j++ {
			v := 0.6*prev + 0.8*rng.NormFloat64()
			row = append(row, v)
			prev = v
			d.X = append(d.X, float32(v))
		}
		if outputs > 0 {
			for o := 0; o < outputs; o++ {
				y := 1 + float64(o)
				for j, v := range row {
					y += math.Pow(-1, float64(j)) * v * float64(j+1) / 2
				}
				d.Targets = append(d.Targets, float32(y+rng.NormFloat64()/math.Sqrt(tau)))
			}
			continue
		}
		best, label := math.Inf(-1), 0
		for c := 0; c < classes; c++ {
			s := 0.0
			for j, v := range row {
				s += math.Sin(float64(3*c+j+1)) * v
			}
			s += 0.5 * rng.NormFloat64()
			if s > best {
				best, label = s, c
			}
		}
		d.Labels = append(d.Labels, label)
	}
	return d
}

// hmcTestConfig is a posterior hmc config for data d and arch.
func hmcTestConfig(t *testing.T, arch string, d *data.Dataset) Config {
	c := DefaultConfig()
	c.Arch, c.Posterior, c.Data = arch, "hmc", "synthetic"
	c.Task = "classification"
	if d.Regression() {
		c.Task = "regression"
	}
	c.Out = filepath.Join(t.TempDir(), "hmc.ebnn")
	c.Seed = 3
	return c
}

// TestHMCLogDensity checks posterior hmc's hand-written log density against one assembled from
// the runtime's forward pass (the network built from θ, as the model file stores it) and the
// prior written out here, and its gradient against finite differences, for every layer kind it
// takes, both tasks and both kinds of prior.
func TestHMCLogDensity(t *testing.T) {
	const tau = 4.0
	for _, tc := range []struct {
		name, arch, inference string
		outputs, classes      int
		priorPrec             float64
		// priorSD gives the prior sd of a Linear layer's weights and bias from its fan-in.
		wsd, bsd func(in int) float64
	}{
		{"linear", "mlp:3-1", "", 1, 0, 0.5, nil, nil},
		{"tanh 2 outputs", "mlp:3-5-2:tanh", "", 2, 0, 2, nil, nil},
		{"relu", "mlp:3-4-4-1:relu", "", 1, 0, 1, nil, nil},
		{"sigmoid classification", "mlp:3-4-3:sigmoid", "", 0, 3, 1, nil, nil},
		{"tanh ffg prior", "mlp:3-6-1:tanh", `{"inference": "ffg", "prior_weight_sd": 2.0, "prior_bias_sd": 0.5, "sqrt_width_scaling": true}`, 1, 0, 1,
			func(in int) float64 { return 2 / math.Sqrt(float64(in+1)) }, func(in int) float64 { return 0.5 / math.Sqrt(float64(in+1)) }},
		{"classification ffg prior", "mlp:3-5-3:tanh", `{"inference": "ffg", "prior_weight_sd": 1.5, "prior_bias_sd": 3}`, 0, 3, 1,
			func(int) float64 { return 1.5 }, func(int) float64 { return 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := hmcTestData(1, 9, 3, tc.outputs, tc.classes, tau)
			c := hmcTestConfig(t, tc.arch, d)
			c.NoisePrecision, c.PriorPrecision = tau, tc.priorPrec
			if tc.inference != "" {
				if err := c.Inference.Set(tc.inference); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := NewWithData(c, d, d)
			if err != nil {
				t.Fatal(err)
			}
			r := tr.hmc
			rng := rand.New(rand.NewPCG(7, 0))
			theta := make([]float64, r.net.dim)
			for i := range theta {
				theta[i] = rng.NormFloat64()
			}
			got := r.logDensity(theta, make([]float64, len(theta)))

			// The same density from the runtime's outputs and the layers' tensors.
			if err := tr.setHMCNets([][]float64{theta}); err != nil {
				t.Fatal(err)
			}
			m, err := tr.Model()
			if err != nil {
				t.Fatal(err)
			}
			p, err := eval.Predict(m, d, runtime.Options{Samples: 1, Seed: 1}, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := 0.0
			for i := 0; i < d.N; i++ {
				if d.Regression() {
					for o := 0; o < d.Outputs; o++ {
						r := float64(d.Targets[i*d.Outputs+o] - p.Mean[i*d.Outputs+o])
						want -= tau / 2 * r * r
					}
				} else {
					want += math.Log(float64(p.Probs[i*d.Classes+d.Labels[i]]))
				}
			}
			for _, prm := range tr.Nets[0].Params() {
				in := prm.Shape[len(prm.Shape)-1] // a weight's fan-in; a bias's is the layer's
				sd := 1 / math.Sqrt(tc.priorPrec)
				if strings.HasSuffix(prm.Name, ".bias") {
					w := prm.Name[:len(prm.Name)-len("bias")] + "weight"
					for _, q := range tr.Nets[0].Params() {
						if q.Name == w {
							in = q.Shape[1]
						}
					}
					if tc.bsd != nil {
						sd = tc.bsd(in)
					}
				} else if tc.wsd != nil {
					sd = tc.wsd(in)
				}
				for _, v := range prm.Value {
					want -= 0.5 * float64(v) * float64(v) / (sd * sd)
				}
			}
			if !(math.Abs(got-want) <= 1e-4*math.Max(1, math.Abs(want))) {
				t.Errorf("log density %.6f, from the runtime's outputs %.6f", got, want)
			}
			e, err := mcmc.CheckGradient(r.logDensity, theta, 1e-5)
			if err != nil {
				t.Fatal(err)
			}
			if !(e <= 1e-5) {
				t.Errorf("gradient error %.3g against finite differences", e)
			}
		})
	}
}

// linearPosterior is the exact posterior N(m, S) of θ = (w, b) for y = wᵀx + b + ε, prior
// N(0, α⁻¹I), noise precision τ: Λ = αI + τÃᵀÃ with Ã = [X 1], m = τΛ⁻¹Ãᵀy (Gauss–Jordan, in
// float64, on the float32 data).
func linearPosterior(d *data.Dataset, alpha, tau float64) (m []float64, s [][]float64) {
	p := d.Dim + 1
	lam := make([][]float64, p)
	for i := range lam {
		lam[i] = make([]float64, 2*p)
		lam[i][i] = alpha
		lam[i][p+i] = 1
	}
	rhs := make([]float64, p)
	for n := 0; n < d.N; n++ {
		a := make([]float64, p)
		for j := 0; j < d.Dim; j++ {
			a[j] = float64(d.X[n*d.Dim+j])
		}
		a[d.Dim] = 1
		for i := range a {
			for j := range a {
				lam[i][j] += tau * a[i] * a[j]
			}
			rhs[i] += tau * a[i] * float64(d.Targets[n])
		}
	}
	for c := 0; c < p; c++ { // Λ is positive definite: no pivoting needed
		piv := lam[c][c]
		for j := range lam[c] {
			lam[c][j] /= piv
		}
		for r := 0; r < p; r++ {
			if r != c {
				f := lam[r][c]
				for j := range lam[r] {
					lam[r][j] -= f * lam[c][j]
				}
			}
		}
	}
	s = make([][]float64, p)
	m = make([]float64, p)
	for i := range s {
		s[i] = lam[i][p:]
		for j := range rhs {
			m[i] += s[i][j] * rhs[j]
		}
	}
	return m, s
}

// TestHMCLinearGaussian samples a linear model (mlp:2-1: no hidden layer, identity output) with
// a Gaussian prior and likelihood, whose posterior is Gaussian in closed form, through the
// trainer's whole path (Run, the checkpoint and the model file), and checks the stored ensemble's
// members — the kept draws, read back from the model file — against it: means within 5 Monte
// Carlo standard errors, variances and correlations within 5 of their sampling sds, all from the
// run's bulk ESS (capped at the number kept); R̂ < 1.05 over the parameters and the predictions;
// the model file loads in the runtime and predicts the members' average and spread.
func TestHMCLinearGaussian(t *testing.T) {
	const alpha, tau, kept = 0.5, 4.0, 400
	d := hmcTestData(2, 40, 2, 1, 0, tau)
	test := hmcTestData(3, 5, 2, 1, 0, tau)
	c := hmcTestConfig(t, "mlp:2-1", d)
	c.PriorPrecision, c.NoisePrecision = alpha, tau
	c.HMCWarmup, c.HMCDraws, c.HMCSamples = 500, 1000, kept
	if testing.Short() {
		c.HMCDraws = 500
	}
	tr, err := NewWithData(c, d, test)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	rep := st.HMC
	if rep == nil || st.Members != kept {
		t.Fatalf("checkpoint: hmc report %v, %d members; want a report and %d", rep, st.Members, kept)
	}
	for _, l := range rep.Lines() {
		t.Log(l)
	}
	if !(rep.ParamDiag.RhatMax < 1.05) || !(rep.FunctionDiag.RhatMax < 1.05) || rep.Divergences > 0 {
		t.Errorf("R̂ max %.3f (parameters), %.3f (predictions), %d divergences; want < 1.05 and none",
			rep.ParamDiag.RhatMax, rep.FunctionDiag.RhatMax, rep.Divergences)
	}
	if rep.ParamDiag.Count != 3 || rep.FunctionDiag.Count != test.N {
		t.Errorf("diagnostics over %d parameters and %d predictions, want 3 and %d", rep.ParamDiag.Count, rep.FunctionDiag.Count, test.N)
	}

	// The members, from the model file.
	f, err := format.Open(tr.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	draws := make([][]float64, kept)
	for k := range draws {
		prefix := ""
		if k > 0 {
			prefix = runtime.MemberPrefix(k)
		}
		for _, name := range []string{"1.weight", "1.bias"} {
			v, _, err := fileTensors{f}.Tensor(prefix + name)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range v {
				draws[k] = append(draws[k], float64(x))
			}
		}
	}
	if n := len(f.Tensors()); n != 2*kept {
		t.Errorf("model file has %d tensors, want %d (no optimizer state)", n, 2*kept)
	}
	m, s := linearPosterior(d, alpha, tau)
	ess := math.Min(kept, float64(rep.ParamDiag.ESSBulkMin))
	mean := make([]float64, 3)
	for _, x := range draws {
		for i := range mean {
			mean[i] += x[i] / kept
		}
	}
	cov := make([][]float64, 3)
	for i := range cov {
		cov[i] = make([]float64, 3)
		for _, x := range draws {
			for j := range cov[i] {
				cov[i][j] += (x[i] - mean[i]) * (x[j] - mean[j]) / (kept - 1)
			}
		}
	}
	for i := range mean {
		if tol := 5 * math.Sqrt(s[i][i]/ess); !(math.Abs(mean[i]-m[i]) <= tol) {
			t.Errorf("mean[%d] %.5f, closed form %.5f (tolerance %.5f)", i, mean[i], m[i], tol)
		}
		if tol := 5 * math.Sqrt(2/ess); !(math.Abs(cov[i][i]/s[i][i]-1) <= tol) {
			t.Errorf("var[%d] %.6f, closed form %.6f (relative tolerance %.3f)", i, cov[i][i], s[i][i], tol)
		}
		for j := 0; j < i; j++ {
			rho := s[i][j] / math.Sqrt(s[i][i]*s[j][j])
			got := cov[i][j] / math.Sqrt(cov[i][i]*cov[j][j])
			if tol := 5 * (1 - rho*rho) / math.Sqrt(ess); !(math.Abs(got-rho) <= tol) {
				t.Errorf("corr[%d][%d] %.4f, closed form %.4f (tolerance %.4f)", i, j, got, rho, tol)
			}
		}
	}
	t.Logf("ESS %.0f; mean %.4f, closed form %.4f; sd %.4f %.4f %.4f, closed form %.4f %.4f %.4f",
		ess, mean, m, math.Sqrt(cov[0][0]), math.Sqrt(cov[1][1]), math.Sqrt(cov[2][2]),
		math.Sqrt(s[0][0]), math.Sqrt(s[1][1]), math.Sqrt(s[2][2]))

	// The runtime runs the model file: member k mod K per sample, so K samples are the ensemble.
	model, err := runtime.Load(tr.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	if model.Spec().Members != kept {
		t.Fatalf("model has %d members, want %d", model.Spec().Members, kept)
	}
	p, err := eval.Predict(model, test, runtime.Options{Samples: kept, Seed: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < test.N; i++ {
		x := test.Row(i)
		var fs []float64
		mu := 0.0
		for _, th := range draws {
			f := th[0]*float64(x[0]) + th[1]*float64(x[1]) + th[2]
			fs = append(fs, f)
			mu += f / kept
		}
		v := 0.0
		for _, f := range fs {
			v += (f - mu) * (f - mu) / kept
		}
		if !(math.Abs(float64(p.Mean[i])-mu) <= 1e-4) || !(math.Abs(float64(p.EpistemicVar[i])-v) <= 1e-4*math.Max(v, 1)) {
			t.Errorf("input %d: runtime mean %.5f, epistemic var %.6f; members' %.5f, %.6f", i, p.Mean[i], p.EpistemicVar[i], mu, v)
		}
	}

	if _, err := Resume(c.Out, nil); err == nil || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("Resume of an hmc checkpoint: %v; want a refusal", err)
	}
}

// TestHMCRefuses: networks and settings posterior hmc cannot sample are refused with errors
// that name the limit.
func TestHMCRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		dim        int
		edit       func(*Config)
		want       []string
	}{
		{"too many parameters", "mlp:200-60-1", 200, nil, []string{"more than 10000 parameters", "small networks"}},
		{"gelu", "mlp:2-3-1:gelu", 2, nil, []string{"gelu", "MLPs only"}},
		{"conv", "Sequential(\n  (0): Conv2d(1, 1, kernel_size=(1, 1))\n  (1): Flatten(start_dim=1, end_dim=-1)\n" +
			"  (2): Linear(in_features=2, out_features=1, bias=True)\n)\n", 2, nil, []string{"conv2d", "MLPs only"}},
		{"inducing prior", "mlp:2-3-1:tanh", 2, func(c *Config) { _ = c.Inference.Set(`{"inference": "inducing"}`) }, []string{"ffg config"}},
		{"temperature", "mlp:2-1", 2, func(c *Config) { c.Temperature = 0.5 }, []string{"temperature"}},
		{"kept > draws", "mlp:2-1", 2, func(c *Config) { c.HMCChains, c.HMCDraws, c.HMCSamples = 2, 10, 21 }, []string{"hmc_samples 21", "20"}},
		{"no chains", "mlp:2-1", 2, func(c *Config) { c.HMCChains = 0 }, []string{"hmc_chains"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := hmcTestData(1, 4, tc.dim, 1, 0, 1)
			arch := tc.arch
			if strings.HasPrefix(arch, "Sequential(") {
				d.Shape = []int{1, 1, 2}
				arch = filepath.Join(t.TempDir(), "net.txt")
				if err := os.WriteFile(arch, []byte(tc.arch), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := hmcTestConfig(t, arch, d)
			if tc.edit != nil {
				tc.edit(&c)
			}
			_, err := NewWithData(c, d, d)
			testutil.ErrorContains(t, err, tc.want...)
		})
	}
}

// TestHMCMemoryBound: draws that cannot all be held (every draw is kept) are refused before
// sampling, with the count and the memory they need — not by running out of memory at the end.
func TestHMCMemoryBound(t *testing.T) {
	d := hmcTestData(1, 4, 2, 1, 0, 1)
	c := hmcTestConfig(t, "mlp:2-64-1", d)
	c.HMCChains, c.HMCWarmup, c.HMCDraws, c.HMCSamples = 64, 1, MaxHMCIterations, 10
	tr, err := NewWithData(c, d, d)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background(), Hooks{})
	if err == nil || !strings.Contains(err.Error(), "GiB") || !strings.Contains(err.Error(), "fewer draws or chains") {
		t.Fatalf("Run = %v, want a refusal with the memory needed", err)
	}
}

// TestHMCKeep: the kept draws are evenly spaced, distinct and in range.
func TestHMCKeep(t *testing.T) {
	for _, tc := range []struct {
		total, k int
		want     []int
	}{
		{8, 4, []int{0, 2, 4, 6}},
		{10, 4, []int{0, 2, 5, 7}},
		{5, 5, []int{0, 1, 2, 3, 4}},
		{4000, 1, []int{0}},
	} {
		got := hmcKeep(tc.total, tc.k)
		if !slices.Equal(got, tc.want) {
			t.Errorf("hmcKeep(%d, %d) = %v, want %v", tc.total, tc.k, got, tc.want)
		}
	}
}

// TestHMCStuckChainsCheckpoint: chains that never move (warm-up 0 and a posterior so sharp that
// every proposal diverges) leave every R̂ and ESS undefined; the run still writes its checkpoint
// and model — the report's undefined summaries are JSON null, read back as NaN — where
// "json: unsupported value: NaN" used to fail every checkpoint of the run after sampling.
func TestHMCStuckChainsCheckpoint(t *testing.T) {
	c := toyConfig(t, "hmc", "")
	c.Arch, c.NoisePrecision = "mlp:1-8-1", 1e6
	c.HMCWarmup, c.HMCDraws, c.HMCChains, c.HMCSamples = 0, 4, 2, 2
	tr := trainRun(t, c)
	rep := tr.HMC()
	if rep == nil || rep.ParamDiag.Undefined != rep.ParamDiag.Count || !math.IsNaN(float64(rep.ParamDiag.RhatMax)) {
		t.Fatalf("report %+v: want every parameter's R̂ undefined (the chains stuck)", rep)
	}
	if l := rep.ParamDiag.Line(); !strings.Contains(l, "undefined") || strings.Contains(l, "NaN") {
		t.Errorf("line %q", l)
	}
	st, err := ReadState(tr.Config.Out)
	if err != nil {
		t.Fatal(err)
	}
	if st.HMC == nil || !math.IsNaN(float64(st.HMC.LogDensity.ESSBulkMin)) || st.HMC.ParamDiag.Count != rep.ParamDiag.Count {
		t.Errorf("read back: %+v", st.HMC)
	}
	if _, err := runtime.Load(tr.ModelPath()); err != nil {
		t.Errorf("model: %v", err)
	}
}

// TestQuantileInfinite: R̂ is +Inf for chains each stuck at its own point; its quantiles are
// +Inf or finite, never NaN (∞ − ∞ and 0·∞ in the interpolation printed "90% NaN, median NaN").
func TestQuantileInfinite(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		s    []float64
		p    float64
		want float64
	}{
		{[]float64{inf, inf}, 0.9, inf},
		{[]float64{1, inf, inf}, 0.5, inf},
		{[]float64{1, 2, inf}, 0.5, 2},
		{[]float64{1, 2, inf}, 0.9, inf},
		{[]float64{1, 2, 3}, 0.25, 1.5},
	} {
		if got := quantile(tc.s, tc.p); got != tc.want {
			t.Errorf("quantile(%v, %g) = %v, want %v", tc.s, tc.p, got, tc.want)
		}
	}
}
