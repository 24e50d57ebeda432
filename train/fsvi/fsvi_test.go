package fsvi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// tinyNet builds a small ffg network in float64: an MLP 3-4-2 (tanh) or a conv net, or (linear)
// a single Linear 3→2 layer, with σ and the prior set away from their defaults so that no term
// of the KL vanishes.
func tinyNet(t *testing.T, kind string) (*bnn.Net[float64], []int) {
	t.Helper()
	p := &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.6}
	var ls []runtime.LayerSpec
	in := []int{3}
	switch kind {
	case "mlp":
		ls = []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 3, Out: 4, Bias: true, Posterior: p},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 4, Out: 2, Bias: true, Posterior: p}}
	case "conv":
		in = []int{1, 4, 4}
		ls = []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpConv2d, In: 1, Out: 2, Bias: true, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, Posterior: p},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpAvgPool2d, Kernel: [2]int{2, 2}},
			{Name: "3", Op: runtime.OpFlatten},
			{Name: "4", Op: runtime.OpLinear, In: 8, Out: 2, Bias: true, Posterior: p}}
	case "linear":
		ls = []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true, Posterior: p}}
	case "mlp3":
		// Three Linear layers, the middle one without a bias.
		ls = []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 3, Out: 5, Bias: true, Posterior: p},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 5, Out: 4, Posterior: p},
			{Name: "3", Op: runtime.OpReLU},
			{Name: "4", Op: runtime.OpLinear, In: 4, Out: 3, Bias: true, Posterior: p}}
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: in, Layers: ls}
	inits := map[string]bnn.Init{}
	for _, l := range ls {
		inits[l.Name] = bnn.Init{InitSD: 0.3, PriorMean: 0.1, PriorBiasSD: 0.8}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	n, err := bnn.New[float64](spec, inits, rng)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := n.FFGTensors()
	for _, tt := range ts {
		for i := range tt.RawSD.Value {
			tt.RawSD.Value[i] += 0.5 * rng.NormFloat64()
			tt.Mean.Value[i] += 0.3 * rng.NormFloat64()
		}
	}
	return n, in
}

// jacobian linearises n at the m context points x (Jacobian on a new tape), failing the test on
// an error.
func jacobian(t *testing.T, n *bnn.Net[float64], ts []bnn.FFGTensor[float64], x []float64, m int, shape []int) *Linearization {
	t.Helper()
	lin, err := Jacobian(autodiff.NewTape[float64](), n, ts, x, m, shape)
	if err != nil {
		t.Fatal(err)
	}
	return lin
}

// tinyLinearized returns tinyNet(kind), its FFG tensors, m context inputs drawn with seed
// (contextInputs) and the Jacobian at them.
func tinyLinearized(t *testing.T, kind string, m int, seed uint64) (*bnn.Net[float64], []int, []bnn.FFGTensor[float64], []float64, *Linearization) {
	t.Helper()
	n, shape := tinyNet(t, kind)
	ts, _ := n.FFGTensors()
	x := contextInputs(shape, m, seed)
	return n, shape, ts, x, jacobian(t, n, ts, x, m, shape)
}

func contextInputs(shape []int, m int, seed uint64) []float64 {
	dim := 1
	for _, s := range shape {
		dim *= s
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, m*dim)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// fdJacobian differentiates the mean network's outputs by central differences (independent of
// the reverse passes of Jacobian).
func fdJacobian(t *testing.T, n *bnn.Net[float64], ts []bnn.FFGTensor[float64], x []float64, m int, shape []int) [][]float64 {
	t.Helper()
	tp := autodiff.NewTape[float64]()
	f := func() []float64 {
		tp.Reset()
		n.Begin()
		var out []float64
		tp.NoGrad(func() {
			out = append(out, n.ForwardMean(tp, tp.Const(x, append([]int{m}, shape...)...)).Value()...)
		})
		return out
	}
	D := len(f())
	J := make([][]float64, len(ts))
	const h = 1e-6
	for i, tt := range ts {
		p := len(tt.Mean.Value)
		J[i] = make([]float64, D*p)
		for k := 0; k < p; k++ {
			v := tt.Mean.Value[k]
			tt.Mean.Value[k] = v + h
			fp := f()
			tt.Mean.Value[k] = v - h
			fm := f()
			tt.Mean.Value[k] = v
			for r := 0; r < D; r++ {
				J[i][r*p+k] = (fp[r] - fm[r]) / (2 * h)
			}
		}
	}
	return J
}

func TestJacobianMatchesFiniteDifferences(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		n, shape, ts, x, lin := tinyLinearized(t, kind, 3, 1)
		if lin.Points != 3 || lin.Outputs != 2 {
			t.Fatalf("%s: %d points × %d outputs, want 3 × 2", kind, lin.Points, lin.Outputs)
		}
		want := fdJacobian(t, n, ts, x, 3, shape)
		for i := range want {
			for k := range want[i] {
				if d := math.Abs(lin.Blocks[i][k] - want[i][k]); !(d <= 1e-6*(1+math.Abs(want[i][k]))) {
					t.Fatalf("%s: tensor %d entry %d: %g, finite differences %g", kind, i, k, lin.Blocks[i][k], want[i][k])
				}
			}
		}
	}
}

// denseKL evaluates the KL of two D-dimensional Gaussians from their means' difference and
// covariances with a textbook Cholesky (independent of the tape's linear algebra).
func denseKL(delta []float64, kq, kp [][]float64) float64 {
	D := len(delta)
	chol := func(a [][]float64) [][]float64 {
		l := make([][]float64, D)
		for i := range l {
			l[i] = make([]float64, D)
			for j := 0; j <= i; j++ {
				s := a[i][j]
				for k := 0; k < j; k++ {
					s -= l[i][k] * l[j][k]
				}
				if i == j {
					l[i][i] = math.Sqrt(s)
				} else {
					l[i][j] = s / l[j][j]
				}
			}
		}
		return l
	}
	solve := func(l [][]float64, b []float64) []float64 { // L⁻¹b
		x := make([]float64, D)
		for i := range x {
			s := b[i]
			for k := 0; k < i; k++ {
				s -= l[i][k] * x[k]
			}
			x[i] = s / l[i][i]
		}
		return x
	}
	lq, lp := chol(kq), chol(kp)
	var tr, mah, ld float64
	for c := 0; c < D; c++ { // tr(K_p⁻¹K_q) = Σ_c ‖L_p⁻¹ L_q e_c‖²
		col := make([]float64, D)
		for r := range col {
			col[r] = lq[r][c]
		}
		for _, v := range solve(lp, col) {
			tr += v * v
		}
	}
	for _, v := range solve(lp, delta) {
		mah += v * v
	}
	for i := 0; i < D; i++ {
		ld += 2 * (math.Log(lp[i][i]) - math.Log(lq[i][i]))
	}
	return 0.5 * (tr + mah - float64(D) + ld)
}

func softplus(x float64) float64 { return math.Log1p(math.Exp(x)) }

// referenceKL builds K_q, K_p and δ from a Jacobian given per tensor (D×P_t) and evaluates
// denseKL.
func referenceKL(ts []bnn.FFGTensor[float64], J [][]float64, D, Q int, jitter float64, perOutput bool) float64 {
	kq, kp := make([][]float64, D), make([][]float64, D)
	delta := make([]float64, D)
	for r := 0; r < D; r++ {
		kq[r], kp[r] = make([]float64, D), make([]float64, D)
	}
	for i, tt := range ts {
		p := len(tt.Mean.Value)
		for r := 0; r < D; r++ {
			for k := 0; k < p; k++ {
				delta[r] += J[i][r*p+k] * (tt.Mean.Value[k] - tt.PriorMean.Value[k])
			}
			for c := 0; c < D; c++ {
				if perOutput && r%Q != c%Q {
					continue
				}
				for k := 0; k < p; k++ {
					s := softplus(tt.RawSD.Value[k])
					s0 := tt.PriorSD.Value[k]
					kq[r][c] += J[i][r*p+k] * s * s * J[i][c*p+k]
					kp[r][c] += J[i][r*p+k] * s0 * s0 * J[i][c*p+k]
				}
			}
		}
	}
	for r := 0; r < D; r++ {
		kq[r][r] += jitter
		kp[r][r] += jitter
	}
	return denseKL(delta, kq, kp)
}

func TestKLMatchesDenseReference(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		for _, per := range []bool{false, true} {
			n, shape, ts, x, lin := tinyLinearized(t, kind, 4, 2)
			got, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 0, Options{Jitter: 1e-3, PerOutput: per})
			if err != nil {
				t.Fatal(err)
			}
			want := referenceKL(ts, fdJacobian(t, n, ts, x, 4, shape), lin.D(), lin.Outputs, 1e-3, per)
			if !(math.Abs(got-want) <= 1e-6*(1+math.Abs(want))) {
				t.Errorf("%s perOutput=%v: KL %.10g, dense reference %.10g", kind, per, got, want)
			}
			if !(want > 0) {
				t.Errorf("%s: reference KL %g is not positive", kind, want)
			}
		}
	}
}

// TestKLScalarClosedForm: one context point through f(x) = w·x + b with one input and output, so
// J = (x, 1) and both Gaussians are one-dimensional.
func TestKLScalarClosedForm(t *testing.T) {
	p := &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.5}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{1},
		Layers: []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: 1, Out: 1, Bias: true, Posterior: p}}}
	n, err := bnn.New[float64](spec, map[string]bnn.Init{"0": {InitSD: 0.1, PriorBiasSD: 2}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := n.FFGTensors()
	ts[0].Mean.Value[0], ts[1].Mean.Value[0] = 0.7, -0.2 // w, b; prior means 0
	lin := jacobian(t, n, ts, []float64{2}, 1, []int{1})
	const eps = 1e-4
	kl, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 0, Options{Jitter: eps})
	if err != nil {
		t.Fatal(err)
	}
	vq := 4*0.01 + 0.01 + eps // x²σ_w² + σ_b² + ε
	vp := 4*0.25 + 4 + eps    // x²σ0_w² + σ0_b² + ε
	d := 2*0.7 - 0.2
	want := 0.5 * (vq/vp + d*d/vp - 1 + math.Log(vp/vq))
	if !(math.Abs(kl-want) <= 1e-9) {
		t.Errorf("KL %.12g, closed form %.12g", kl, want)
	}
}

// klAt evaluates the KL at the current parameters with the linearisation lin held fixed.
func klAt(t *testing.T, ts []bnn.FFGTensor[float64], lin *Linearization, o Options) float64 {
	t.Helper()
	v, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKLGradFiniteDifferences checks ∂KL/∂μ and ∂KL/∂ρ (J at the linearisation point held fixed)
// against central differences.
func TestKLGradFiniteDifferences(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		_, _, ts, _, lin := tinyLinearized(t, kind, 3, 3)
		o := Options{Jitter: 1e-4}
		for _, tt := range ts {
			clear(tt.Mean.Grad)
			clear(tt.RawSD.Grad)
		}
		if _, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 1, o); err != nil {
			t.Fatal(err)
		}
		const h = 1e-5
		for i, tt := range ts {
			for _, pr := range []*autodiff.Param[float64]{tt.Mean, tt.RawSD} {
				for k := range pr.Value {
					v := pr.Value[k]
					pr.Value[k] = v + h
					fp := klAt(t, ts, lin, o)
					pr.Value[k] = v - h
					fm := klAt(t, ts, lin, o)
					pr.Value[k] = v
					fd := (fp - fm) / (2 * h)
					if !(math.Abs(pr.Grad[k]-fd) <= 1e-5*(1+math.Abs(fd))) {
						t.Fatalf("%s tensor %d %s[%d]: gradient %g, finite differences %g", kind, i, pr.Name, k, pr.Grad[k], fd)
					}
				}
			}
		}
	}
}

// TestKLZeroAtPrior: q equal to the prior gives KL 0 (up to rounding).
func TestKLZeroAtPrior(t *testing.T) {
	n, shape := tinyNet(t, "mlp")
	ts, _ := n.FFGTensors()
	lin := jacobian(t, n, ts, contextInputs(shape, 3, 4), 3, shape)
	for _, tt := range ts {
		for k := range tt.Mean.Value {
			tt.Mean.Value[k] = tt.PriorMean.Value[k]
			tt.RawSD.Value[k] = math.Log(math.Expm1(tt.PriorSD.Value[k]))
		}
	}
	if kl := klAt(t, ts, lin, Options{}); !(math.Abs(kl) <= 1e-8) {
		t.Errorf("KL(prior ‖ prior) = %g", kl)
	}
}

// gradsOf runs AddKLGrad with scale 1 on zeroed gradients and returns the KL and copies of
// ∂KL/∂μ and ∂KL/∂ρ (tensor by tensor, concatenated).
func gradsOf[T bnn.Float](t *testing.T, ts []bnn.FFGTensor[T], lin *Linearization, o Options) (float64, []float64, []float64) {
	t.Helper()
	for _, tt := range ts {
		clear(tt.Mean.Grad)
		clear(tt.RawSD.Grad)
	}
	kl, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	var gm, gr []float64
	for _, tt := range ts {
		gm = append(gm, f64.From(tt.Mean.Grad)...)
		gr = append(gr, f64.From(tt.RawSD.Grad)...)
	}
	return kl, gm, gr
}

// relErr is max_k |a_k − b_k| / max_k |b_k|.
func relErr(a, b []float64) float64 {
	var d, m float64
	for k := range b {
		d = max(d, math.Abs(a[k]-b[k]))
		m = max(m, math.Abs(b[k]))
	}
	return d / m
}

// TestDirectMatchesTape: the direct path (closed-form gradients, float64) gives the tape's KL
// and gradients, joint and per output, also with σ clamped at MaxSD.
func TestDirectMatchesTape(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		for _, per := range []bool{false, true} {
			n, shape := tinyNet(t, kind)
			ts, _ := n.FFGTensors()
			if kind == "conv" {
				for i := range ts {
					ts[i].HasMax, ts[i].MaxSD = true, 0.6
				}
			}
			lin := jacobian(t, n, ts, contextInputs(shape, 5, 6), 5, shape)
			o := Options{Jitter: 1e-4, PerOutput: per}
			ws := &Workspace{}
			for rep := 0; rep < 2; rep++ { // the second call reuses the workspace
				o.Tape, o.Workspace = false, ws
				kl, gm, gr := gradsOf(t, ts, lin, o)
				o.Tape = true
				klT, gmT, grT := gradsOf(t, ts, lin, o)
				if !(math.Abs(kl-klT) <= 1e-10*(1+math.Abs(klT))) || !(relErr(gm, gmT) <= 1e-9) || !(relErr(gr, grT) <= 1e-9) {
					t.Errorf("%s perOutput=%v: direct KL %.12g (∂μ rel. err. %.2g, ∂ρ %.2g), tape %.12g",
						kind, per, kl, relErr(gm, gmT), relErr(gr, grT), klT)
				}
			}
		}
	}
}

func copyBlocks(b [][]float64) [][]float64 {
	out := make([][]float64, len(b))
	for i := range b {
		out[i] = append([]float64(nil), b[i]...)
	}
	return out
}

// TestJacobianGradFiniteDifferences checks ∂KL/∂J (Options.JacobianGrad) against central
// differences of the KL in each entry of the linearisation, joint and per output: with
// JacobianGradPriorSide every J moves; without it only q̃'s (the prior side keeps the original J).
func TestJacobianGradFiniteDifferences(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		for _, per := range []bool{false, true} {
			for _, priorSide := range []bool{false, true} {
				_, _, ts, _, lin := tinyLinearized(t, kind, 3, 9)
				if !priorSide {
					lin.priorBlocks = copyBlocks(lin.Blocks)
				}
				dJ := copyBlocks(lin.Blocks)
				o := Options{Jitter: 1e-4, PerOutput: per, JacobianGrad: dJ, JacobianGradPriorSide: priorSide}
				if _, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 0, o); err != nil {
					t.Fatal(err)
				}
				o.JacobianGrad = nil
				const h = 1e-6
				for i, b := range lin.Blocks {
					for k := range b {
						v := b[k]
						b[k] = v + h
						fp := klAt(t, ts, lin, o)
						b[k] = v - h
						fm := klAt(t, ts, lin, o)
						b[k] = v
						fd := (fp - fm) / (2 * h)
						if !(math.Abs(dJ[i][k]-fd) <= 1e-5*(1+math.Abs(fd))) {
							t.Fatalf("%s perOutput=%v priorSide=%v: ∂KL/∂J block %d entry %d: %g, finite differences %g",
								kind, per, priorSide, i, k, dJ[i][k], fd)
						}
					}
				}
			}
		}
	}
}

// TestKLGradThroughJacobian: ∂KL/∂μ with J held fixed plus JacobianVJP (the gradient through the
// linearisation point) is the derivative of μ ↦ KL(J(μ), μ), checked by central differences that
// recompute the Jacobian at each perturbed μ — for every J (JacobianGradPriorSide), or for q̃'s
// J only with the prior side's J kept at the unperturbed μ.
func TestKLGradThroughJacobian(t *testing.T) {
	for _, kind := range []string{"mlp", "conv"} {
		for _, priorSide := range []bool{false, true} {
			n, shape, ts, x, lin := tinyLinearized(t, kind, 3, 10)
			o := Options{Jitter: 1e-4}
			total := func() float64 {
				l, err := Jacobian(autodiff.NewTape[float64](), n, ts, x, 3, shape)
				if err != nil {
					t.Fatal(err)
				}
				if !priorSide {
					l.priorBlocks = lin.Blocks
				}
				return klAt(t, ts, l, o)
			}
			dJ := copyBlocks(lin.Blocks)
			out := make([][]float64, len(ts))
			for i, tt := range ts {
				out[i] = make([]float64, len(tt.Mean.Value))
				clear(tt.Mean.Grad)
			}
			o.JacobianGrad, o.JacobianGradPriorSide = dJ, priorSide
			if _, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 1, o); err != nil {
				t.Fatal(err)
			}
			o.JacobianGrad = nil
			fixed := make([][]float64, len(ts))
			for i, tt := range ts {
				fixed[i] = append([]float64(nil), tt.Mean.Grad...)
			}
			if err := JacobianVJP(autodiff.NewTape[float64](), n, ts, x, 3, shape, BlockRows(dJ), out, 1e-4); err != nil {
				t.Fatal(err)
			}
			var through float64
			const h = 1e-5
			for i, tt := range ts {
				for k := range tt.Mean.Value {
					v := tt.Mean.Value[k]
					tt.Mean.Value[k] = v + h
					fp := total()
					tt.Mean.Value[k] = v - h
					fm := total()
					tt.Mean.Value[k] = v
					fd := (fp - fm) / (2 * h)
					got := fixed[i][k] + out[i][k]
					through = max(through, math.Abs(out[i][k]))
					if !(math.Abs(got-fd) <= 1e-4*(1+math.Abs(fd))) {
						t.Fatalf("%s priorSide=%v tensor %d mean %d: fixed-J %g + through J %g = %g, finite differences %g",
							kind, priorSide, i, k, fixed[i][k], out[i][k], got, fd)
					}
				}
			}
			if !(through >= 1e-3) {
				t.Errorf("%s priorSide=%v: the gradient through J is %g at most: the test does not exercise it", kind, priorSide, through)
			}
		}
	}
}
