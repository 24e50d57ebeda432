package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// Small test networks with random tensors, shared by the determinism, concurrency, allocation and
// layer tests.

func inducingPost(mo, mi int, q string, whitened bool, ens int) *runtime.PosteriorSpec {
	return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: mi, PriorSD: 0.4,
		MaxLamda: ptr(1), MaxSDU: ptr(0.5), QInducing: q, WhitenedU: whitened, EnsembleSize: ens}
}

// globalPost is a layer whose U is its mo × mi block of the global U_{1:L}.
func globalPost(mo, mi int) *runtime.PosteriorSpec {
	return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: mi, PriorSD: 0.4,
		MaxLamda: ptr(1), QInducing: runtime.QGlobal, WhitenedU: true}
}

func fcgPost() *runtime.PosteriorSpec {
	return &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.7, PriorBiasSD: 1.3}
}

func ffgPost() *runtime.PosteriorSpec {
	return &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1, MaxSD: ptr(0.5)}
}

// randomTensors makes random tensors for every parametric layer of spec (and the fa section),
// walking residual blocks. BatchNorm layers must set In (num_features).
func randomTensors(spec *runtime.Spec, seed uint64) runtime.Tensors {
	r := rand.New(rand.NewPCG(seed, 1234))
	ts := runtime.Tensors{}
	faDim := 0
	var walk func(ls []runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for i := range ls {
			l := &ls[i]
			switch l.Op {
			case runtime.OpResidual:
				walk(l.Body)
				walk(l.Shortcut)
			case runtime.OpBatchNorm:
				c := l.In
				v := make([]float32, c)
				for j := range v {
					v[j] = float32(0.5 + r.Float64())
				}
				ts[l.Name+".running_mean"] = tensor(randn(r, c, 0.3), c)
				ts[l.Name+".running_var"] = tensor(v, c)
				if l.Affine {
					w := randn(r, c, 0.2)
					for j := range w {
						w[j]++
					}
					ts[l.Name+".weight"] = tensor(w, c)
					ts[l.Name+".bias"] = tensor(randn(r, c, 0.2), c)
				}
			case runtime.OpLinear, runtime.OpConv2d:
				wshape := []int{l.Out, l.In}
				if l.Op == runtime.OpConv2d {
					wshape = []int{l.Out, l.In, l.Kernel[0], l.Kernel[1]}
				}
				k := 1
				for _, d := range wshape[1:] {
					k *= d
				}
				nw := l.Out * k
				dIn := k
				if l.Bias {
					dIn++
				}
				scale := 1 / math.Sqrt(float64(k))
				p := l.Posterior
				switch {
				case p == nil || p.Kind == runtime.KindDeterministic:
					ts[l.Name+".weight"] = tensor(randn(r, nw, scale), wshape...)
					if l.Bias {
						ts[l.Name+".bias"] = tensor(randn(r, l.Out, 0.1), l.Out)
					}
				case p.Kind == runtime.KindFFG:
					ts[l.Name+".weight_mean"] = tensor(randn(r, nw, scale), wshape...)
					ts[l.Name+"._weight_sd"] = tensor(shift(randn(r, nw, 0.3), -3), wshape...)
					if l.Bias {
						ts[l.Name+".bias_mean"] = tensor(randn(r, l.Out, 0.1), l.Out)
						ts[l.Name+"._bias_sd"] = tensor(shift(randn(r, l.Out, 0.3), -3), l.Out)
					}
				case p.Kind == runtime.KindFA:
					faDim += l.Out * dIn
				case p.Kind == runtime.KindFCG:
					D := l.Out * dIn
					ts[l.Name+".mean"] = tensor(randn(r, D, scale), D)
					ts[l.Name+"._scale_diag"] = tensor(shift(randn(r, D, 0.3), -2), D)
					ts[l.Name+"._scale_tril"] = tensor(randn(r, D*D, 0.05), D, D)
				case p.Kind == runtime.KindInducing:
					inducingTensors(r, ts, l.Name, p, l.Out, dIn)
				}
			}
		}
	}
	walk(spec.Layers)
	if spec.GlobalU != nil {
		layers, _, rows := spec.GlobalULayers()
		inducingTensors(r, ts, runtime.GlobalUName, spec.GlobalU, rows, layers[0].Posterior.InducingCols)
	}
	if spec.FA != nil {
		spec.FA.Dim = faDim
		ts["fa.mean"] = tensor(randn(r, faDim, 0.5), faDim)
		ts["fa.factors"] = tensor(randn(r, faDim*spec.FA.Rank, 0.1), faDim, spec.FA.Rank)
		psi := make([]float32, faDim)
		for i := range psi {
			psi[i] = float32(0.01 * r.Float64())
		}
		ts["fa.psi"] = tensor(psi, faDim)
	}
	return ts
}

// inducingTensors adds random tensors of an inducing posterior (prefix name) of a dOut × dIn
// weight to ts; a global-U layer has no q(U) tensors.
func inducingTensors(r *rand.Rand, ts runtime.Tensors, name string, p *runtime.PosteriorSpec, dOut, dIn int) {
	mo, mi := p.InducingRows, p.InducingCols
	d := mo * mi
	ts[name+".z_row"] = tensor(randn(r, mo*dOut, 1), mo, dOut)
	ts[name+".z_col"] = tensor(randn(r, mi*dIn, 1), mi, dIn)
	ts[name+"._d_row"] = tensor(randn(r, mo, 0.5), mo)
	ts[name+"._d_col"] = tensor(randn(r, mi, 0.5), mi)
	ts[name+"._lamda"] = tensor([]float32{-1.5})
	switch p.QInducing {
	case runtime.QEnsemble:
		ts[name+".inducing_mean"] = tensor(randn(r, p.EnsembleSize*d, 1), p.EnsembleSize, mo, mi)
	case runtime.QDiagonal:
		ts[name+".inducing_mean"] = tensor(randn(r, d, 1), mo, mi)
		ts[name+"._inducing_sd"] = tensor(shift(randn(r, d, 0.3), -2), mo, mi)
	case runtime.QFull:
		ts[name+".inducing_mean"] = tensor(randn(r, d, 1), d)
		ts[name+"._inducing_scale_tril"] = tensor(shift(randn(r, d*(d+1)/2, 0.1), -1), d*(d+1)/2)
	case runtime.QMatrix:
		ts[name+".inducing_mean"] = tensor(randn(r, d, 1), mo, mi)
		ts[name+"._inducing_row_scale_tril"] = tensor(shift(randn(r, mo*(mo+1)/2, 0.1), -1), mo*(mo+1)/2)
		ts[name+"._inducing_col_scale_tril"] = tensor(shift(randn(r, mi*(mi+1)/2, 0.1), -1), mi*(mi+1)/2)
	}
}

func shift(x []float32, s float32) []float32 {
	for i := range x {
		x[i] += s
	}
	return x
}

// mlpSpec: 8 → inducing(16) → ReLU → ffg(12) → tanh → inducing full(10), classification.
func mlpSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{8},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 8, Out: 16, Bias: true, Posterior: inducingPost(4, 5, runtime.QDiagonal, true, 0)},
			{Name: "1", Op: runtime.OpReLU},
			{Name: "2", Op: runtime.OpLinear, In: 16, Out: 12, Bias: true, Posterior: ffgPost()},
			{Name: "3", Op: runtime.OpTanh},
			{Name: "4", Op: runtime.OpLinear, In: 12, Out: 10, Bias: false, Posterior: inducingPost(2, 3, runtime.QFull, false, 0)},
		}}
}

// faSpec: 6 → fa(8) → GELU → deterministic(8) → sigmoid → fa(3), regression.
func faSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 0.1, InputShape: []int{6},
		FA: &runtime.FASpec{Rank: 3},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 6, Out: 8, Bias: true, Posterior: faPosterior()},
			{Name: "1", Op: runtime.OpGELU},
			{Name: "2", Op: runtime.OpLinear, In: 8, Out: 8, Bias: true},
			{Name: "3", Op: runtime.OpSigmoid},
			{Name: "4", Op: runtime.OpLinear, In: 8, Out: 3, Bias: true, Posterior: faPosterior()},
		}}
}

// fcgSpec: 6 → fcg(8) → tanh → deterministic(8) → ReLU → fcg(3, no bias), regression.
func fcgSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 0.1, InputShape: []int{6},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 6, Out: 8, Bias: true, Posterior: fcgPost()},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 8, Out: 8, Bias: true},
			{Name: "3", Op: runtime.OpReLU},
			{Name: "4", Op: runtime.OpLinear, In: 8, Out: 3, Bias: false, Posterior: fcgPost()},
		}}
}

// cnnSpec: a small CNN on 2×9×9 images with BatchNorm, pooling and residual blocks (one with a
// 1×1 conv shortcut), inducing convs (matrix and ensemble q(U)), an ffg shortcut and an inducing
// classifier.
func cnnSpec() *runtime.Spec {
	conv := func(name string, in, out, k, pad int, post *runtime.PosteriorSpec) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Bias: true,
			Kernel: [2]int{k, k}, Padding: [2]int{pad, pad}, Posterior: post}
	}
	bn := func(name string, c int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpBatchNorm, In: c, Affine: true}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 9, 9},
		Layers: []runtime.LayerSpec{
			conv("c1", 2, 4, 3, 1, inducingPost(3, 4, runtime.QMatrix, true, 0)),
			bn("bn1", 4),
			{Name: "relu1", Op: runtime.OpReLU},
			{Name: "res1", Op: runtime.OpResidual, Body: []runtime.LayerSpec{
				conv("r1a", 4, 4, 3, 1, inducingPost(3, 3, runtime.QEnsemble, false, 3)),
				bn("r1bn", 4),
				{Name: "r1relu", Op: runtime.OpReLU},
				conv("r1b", 4, 4, 3, 1, nil),
			}},
			{Name: "pool1", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}, CeilMode: true},
			{Name: "res2", Op: runtime.OpResidual,
				Body:     []runtime.LayerSpec{conv("r2a", 4, 6, 3, 1, nil), {Name: "r2relu", Op: runtime.OpReLU}},
				Shortcut: []runtime.LayerSpec{conv("r2s", 4, 6, 1, 0, ffgPost())}},
			{Name: "pool2", Op: runtime.OpAvgPool2d, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CountIncludePad: true},
			{Name: "gap", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{2, 2}},
			{Name: "flat", Op: runtime.OpFlatten},
			{Name: "drop", Op: runtime.OpDropout},
			{Name: "fc", Op: runtime.OpLinear, In: 24, Out: 5, Bias: true, Posterior: inducingPost(3, 4, runtime.QDiagonal, true, 0)},
		}}
}

// globalMLPSpec: 8 → global-U(16) → ReLU → ffg(12) → tanh → global-U(10), classification; the
// global inducing posterior has a 3 × 3 G and a diagonal q(G) (paper 003 appendix H).
func globalMLPSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{8},
		GlobalU: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 3, InducingCols: 3, PriorSD: 1,
			MaxLamda: ptr(1), MaxSDU: ptr(0.5), QInducing: runtime.QDiagonal, WhitenedU: true},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 8, Out: 16, Bias: true, Posterior: globalPost(4, 3)},
			{Name: "1", Op: runtime.OpReLU},
			{Name: "2", Op: runtime.OpLinear, In: 16, Out: 12, Bias: true, Posterior: ffgPost()},
			{Name: "3", Op: runtime.OpTanh},
			{Name: "4", Op: runtime.OpLinear, In: 12, Out: 10, Bias: false, Posterior: globalPost(2, 3)},
		}}
}

// globalCNNSpec: a conv global-U layer (sampled as whole weights) and a residual block whose
// body holds another, then a global-U classifier; q(G) is an ensemble of 2 members.
func globalCNNSpec() *runtime.Spec {
	conv := func(name string, in, out int, post *runtime.PosteriorSpec) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Bias: true,
			Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, Posterior: post}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 6, 6},
		GlobalU: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 2, PriorSD: 1,
			QInducing: runtime.QEnsemble, EnsembleSize: 2, WhitenedU: false},
		Layers: []runtime.LayerSpec{
			conv("c1", 2, 4, globalPost(3, 2)),
			{Name: "relu1", Op: runtime.OpReLU},
			{Name: "res1", Op: runtime.OpResidual, Body: []runtime.LayerSpec{
				conv("r1a", 4, 4, globalPost(2, 2)), {Name: "r1relu", Op: runtime.OpReLU}}},
			{Name: "pool", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}},
			{Name: "flat", Op: runtime.OpFlatten},
			{Name: "fc", Op: runtime.OpLinear, In: 36, Out: 5, Bias: true, Posterior: globalPost(2, 2)},
		}}
}

type testModel struct {
	name string
	spec func() *runtime.Spec
}

var testModels = []testModel{{"mlp", mlpSpec}, {"fa-mlp", faSpec}, {"cnn", cnnSpec}, {"fcg-mlp", fcgSpec},
	{"mcdrop-mlp", mcDropoutSpec}, {"mcdrop-cnn", mcDropoutCNNSpec},
	{"global-mlp", globalMLPSpec}, {"global-cnn", globalCNNSpec}}

// mcDropoutSpec: 8 → deterministic(16) → ReLU → MC dropout(0.3) → deterministic(12) → tanh →
// MC dropout(0.5) → deterministic(10), classification: a network whose only randomness is its
// dropout masks.
func mcDropoutSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{8},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 8, Out: 16, Bias: true},
			{Name: "1", Op: runtime.OpReLU},
			{Name: "2", Op: runtime.OpDropout, P: 0.3, MC: true},
			{Name: "3", Op: runtime.OpLinear, In: 16, Out: 12, Bias: true},
			{Name: "4", Op: runtime.OpTanh},
			{Name: "5", Op: runtime.OpDropout, P: 0.5, MC: true},
			{Name: "6", Op: runtime.OpLinear, In: 12, Out: 10, Bias: true},
		}}
}

// mcDropoutCNNSpec is cnnSpec with MC dropout on feature maps inside the first residual body
// (p = 0.1) and before the classifier (p = 0.25), besides its Bayesian layers.
func mcDropoutCNNSpec() *runtime.Spec {
	s := cnnSpec()
	for i := range s.Layers {
		l := &s.Layers[i]
		switch l.Name {
		case "res1":
			body := append([]runtime.LayerSpec(nil), l.Body[:3]...)
			body = append(body, runtime.LayerSpec{Name: "r1drop", Op: runtime.OpDropout, P: 0.1, MC: true})
			l.Body = append(body, l.Body[3:]...)
		case "drop":
			l.P, l.MC = 0.25, true
		}
	}
	return s
}

func buildModel(t testing.TB, spec *runtime.Spec, seed uint64) *runtime.Model {
	t.Helper()
	return newModel(t, spec, randomTensors(spec, seed))
}

// randomInputs returns n inputs for m, uniform in [-1, 1).
func randomInputs(m *runtime.Model, n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	x := make([]float32, n*m.InputSize())
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
	return x
}

// samePrediction reports the first difference between two predictions, comparing floats bit for
// bit.
func samePrediction(a, b *runtime.Prediction) error {
	f32 := func(name string, x, y []float32) error {
		if len(x) != len(y) {
			return fmt.Errorf("%s: %d values vs %d", name, len(x), len(y))
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return fmt.Errorf("%s[%d]: %v vs %v", name, i, x[i], y[i])
			}
		}
		return nil
	}
	for _, c := range []struct {
		n    string
		x, y []float32
	}{{"Probs", a.Probs, b.Probs}, {"Std", a.Std, b.Std}, {"Mean", a.Mean, b.Mean}, {"Var", a.Var, b.Var},
		{"EpistemicVar", a.EpistemicVar, b.EpistemicVar}, {"Outputs", a.Outputs, b.Outputs}} {
		if err := f32(c.n, c.x, c.y); err != nil {
			return err
		}
	}
	if a.Class != b.Class || math.Float32bits(a.Confidence) != math.Float32bits(b.Confidence) {
		return fmt.Errorf("class %d (%v) vs %d (%v)", a.Class, a.Confidence, b.Class, b.Confidence)
	}
	for _, c := range []struct {
		n    string
		x, y float64
	}{{"Entropy", a.Entropy, b.Entropy}, {"ExpectedEntropy", a.ExpectedEntropy, b.ExpectedEntropy},
		{"MutualInfo", a.MutualInfo, b.MutualInfo}} {
		if math.Float64bits(c.x) != math.Float64bits(c.y) {
			return fmt.Errorf("%s: %v vs %v", c.n, c.x, c.y)
		}
	}
	return nil
}

// closePrediction reports the first float field of two predictions that differs by more than tol
// relative to max(1, |value|).
func closePrediction(a, b *runtime.Prediction, tol float64) error {
	near := func(x, y float64) bool { return math.Abs(x-y) <= tol*math.Max(1, math.Abs(x)) }
	for _, c := range []struct {
		n    string
		x, y []float32
	}{{"Probs", a.Probs, b.Probs}, {"Std", a.Std, b.Std}, {"Mean", a.Mean, b.Mean}, {"Var", a.Var, b.Var},
		{"EpistemicVar", a.EpistemicVar, b.EpistemicVar}, {"Outputs", a.Outputs, b.Outputs}} {
		if len(c.x) != len(c.y) {
			return fmt.Errorf("%s: %d values vs %d", c.n, len(c.x), len(c.y))
		}
		for i := range c.x {
			if !near(float64(c.x[i]), float64(c.y[i])) {
				return fmt.Errorf("%s[%d]: %v vs %v", c.n, i, c.x[i], c.y[i])
			}
		}
	}
	if !near(a.Entropy, b.Entropy) || !near(a.ExpectedEntropy, b.ExpectedEntropy) || !near(a.MutualInfo, b.MutualInfo) {
		return fmt.Errorf("entropies (%v, %v, %v) vs (%v, %v, %v)", a.Entropy, a.ExpectedEntropy, a.MutualInfo,
			b.Entropy, b.ExpectedEntropy, b.MutualInfo)
	}
	return nil
}
