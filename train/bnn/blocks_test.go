package bnn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// resSpec is a tiny ResNet for [2, 6, 6] inputs: conv-BN-ReLU, an identity BasicBlock, a
// downsampling BasicBlock (stride 2, shortcut 1×1 conv + BN), an overlapping adaptive average
// pool to 2×2, BatchNorm1d on the flat features and a linear layer; every conv and linear layer
// has posterior p.
func resSpec(p *runtime.PosteriorSpec) *runtime.Spec {
	conv := func(name string, in, out, k, stride int) runtime.LayerSpec {
		var s [2]int
		if stride != 1 {
			s = [2]int{stride, stride}
		}
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Kernel: [2]int{k, k},
			Stride: s, Padding: [2]int{k / 2, k / 2}, Posterior: p}
	}
	bn := func(name string, c int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpBatchNorm, In: c, Eps: 1e-5, Affine: true}
	}
	relu := func(name string) runtime.LayerSpec { return runtime.LayerSpec{Name: name, Op: runtime.OpReLU} }
	layers := []runtime.LayerSpec{
		conv("conv1", 2, 4, 3, 1), bn("bn1", 4), relu("relu"),
		{Name: "layer1.0", Op: runtime.OpResidual, Body: []runtime.LayerSpec{
			conv("layer1.0.conv1", 4, 4, 3, 1), bn("layer1.0.bn1", 4), relu("layer1.0.relu"),
			conv("layer1.0.conv2", 4, 4, 3, 1), bn("layer1.0.bn2", 4)}},
		relu("layer1.0.relu"),
		{Name: "layer2.0", Op: runtime.OpResidual, Body: []runtime.LayerSpec{
			conv("layer2.0.conv1", 4, 5, 3, 2), bn("layer2.0.bn1", 5), relu("layer2.0.relu"),
			conv("layer2.0.conv2", 5, 5, 3, 1), bn("layer2.0.bn2", 5)},
			Shortcut: []runtime.LayerSpec{conv("layer2.0.downsample.0", 4, 5, 1, 2), bn("layer2.0.downsample.1", 5)}},
		relu("layer2.0.relu"),
		{Name: "avgpool", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{2, 2}},
		{Name: "flatten", Op: runtime.OpFlatten},
		bn("bnfc", 20),
		{Name: "fc", Op: runtime.OpLinear, In: 20, Out: 3, Bias: true, Posterior: p},
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 6, 6}, Layers: layers}
}

func resPosteriors() []postCase {
	return []postCase{
		{"deterministic", nil},
		{"ffg", &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.5}},
		{"inducing_diagonal", inducingPost(runtime.QDiagonal, true)},
		{"inducing_ensemble", inducingPost(runtime.QEnsemble, true)},
		{"inducing_matrix_prior", inducingPost(runtime.QMatrix, false)},
	}
}

// perturbBN gives the BatchNorm affine parameters and running statistics generic values.
func perturbBN[T Float](n *Net[T], rng *rand.Rand) {
	for _, p := range n.Params() {
		switch {
		case hasSuffix(p.Name, "bn1.weight"), hasSuffix(p.Name, "bn2.weight"), hasSuffix(p.Name, "downsample.1.weight"), hasSuffix(p.Name, "bnfc.weight"):
			for i := range p.Value {
				p.Value[i] = T(0.5 + rng.Float64())
			}
		case hasSuffix(p.Name, ".running_mean"):
			for i := range p.Value {
				p.Value[i] = T(0.3 * rng.NormFloat64())
			}
		case hasSuffix(p.Name, ".running_var"):
			for i := range p.Value {
				p.Value[i] = T(0.5 + rng.Float64())
			}
		}
	}
}

// TestResidualGradients checks the gradient of a residual network with BatchNorm in training
// mode (batch statistics) against central finite differences in float64, for every parameter.
func TestResidualGradients(t *testing.T) {
	for _, pc := range resPosteriors() {
		t.Run(pc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			spec := resSpec(pc.post)
			n := perturbedNet(t, spec, rng)
			perturbBN(n, rng)
			for _, l := range leaves(n.layers) {
				if il, ok := l.(*inducing[float64]); ok {
					il.jit = 0
				}
			}
			eval := backpropObjective(t, n, spec, rng, 3, true)
			stride := func(int) int { return 1 }
			if testing.Short() {
				stride = func(n int) int { return max(1, n/4) }
			}
			checked := checkGradients(t, n.Trainable(), eval, stride)
			// Every BatchNorm weight and bias (7 layers) must be trainable and checked.
			bnLayers := map[string]bool{}
			for _, p := range n.Params() {
				if name, ok := strings.CutSuffix(p.Name, ".running_mean"); ok {
					bnLayers[name] = true
				}
			}
			bn := 0
			for _, p := range n.Trainable() {
				if name, ok := strings.CutSuffix(p.Name, ".weight"); ok && bnLayers[name] {
					bn++
				}
				if name, ok := strings.CutSuffix(p.Name, ".bias"); ok && bnLayers[name] {
					bn++
				}
			}
			if checked == 0 || bn != 14 {
				t.Fatalf("checked %d values, %d BatchNorm tensors", checked, bn)
			}
		})
	}
}

// bnOnlySpec is BatchNorm2d(3) (or BatchNorm1d(3) when flat) and a flatten.
func bnOnlySpec(flat bool) *runtime.Spec {
	in := []int{3, 2, 2}
	if flat {
		in = []int{3}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: in,
		Layers: []runtime.LayerSpec{{Name: "bn", Op: runtime.OpBatchNorm, In: 3, Affine: true}, {Name: "flat", Op: runtime.OpFlatten}}}
}

// TestRunningStatistics checks the running statistics against PyTorch's update rule written out
// in float64: running = (1−m)·running + m·batch with the unbiased batch variance for the
// running variance, m = momentum or 1/num_batches_tracked (momentum=None); eval passes leave
// them alone.
func TestRunningStatistics(t *testing.T) {
	cases := []struct {
		name       string
		flat       bool
		momentum   *float64
		cumulative bool
	}{
		{"2d_default", false, nil, false},
		{"2d_momentum0.3", false, fptr(0.3), false},
		{"1d_default", true, nil, false},
		{"2d_cumulative", false, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := bnOnlySpec(tc.flat)
			inits := map[string]Init{"bn": {Momentum: tc.momentum, CumulativeStats: tc.cumulative}}
			n, err := New[float32](spec, inits, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			c, inner := 3, prod(spec.InputShape)/3
			rm, rv := []float64{0, 0, 0}, []float64{1, 1, 1}
			r := rand.New(rand.NewPCG(3, 4))
			tp := autodiff.NewTape[float32]()
			for step := 1; step <= 5; step++ {
				batch := 2 + step
				x := make([]float32, batch*c*inner)
				for i := range x {
					x[i] = float32(float64(step) + 2*r.NormFloat64())
				}
				m := 0.1
				switch {
				case tc.momentum != nil:
					m = *tc.momentum
				case tc.cumulative:
					m = 1 / float64(step)
				}
				for ch := 0; ch < c; ch++ {
					var vals []float64
					for b := 0; b < batch; b++ {
						for i := 0; i < inner; i++ {
							vals = append(vals, float64(x[(b*c+ch)*inner+i]))
						}
					}
					mu, ss := 0.0, 0.0
					for _, v := range vals {
						mu += v
					}
					mu /= float64(len(vals))
					for _, v := range vals {
						ss += (v - mu) * (v - mu)
					}
					rm[ch] = (1-m)*rm[ch] + m*mu
					rv[ch] = (1-m)*rv[ch] + m*ss/float64(len(vals)-1)
				}
				tp.Reset()
				n.Forward(tp, tp.Const(x, append([]int{batch}, spec.InputShape...)...), true)
				tp.Reset()
				n.Forward(tp, tp.Const(x, append([]int{batch}, spec.InputShape...)...), false) // no update
				n.ForwardMean(tp, tp.Const(x, append([]int{batch}, spec.InputShape...)...))    // no update
				if err := tp.Err(); err != nil {
					t.Fatal(err)
				}
				ts := n.Tensors()
				for ch := 0; ch < c; ch++ {
					gm, gv := float64(ts["bn.running_mean"].Data[ch]), float64(ts["bn.running_var"].Data[ch])
					if !(math.Abs(gm-rm[ch]) <= 1e-5*(1+math.Abs(rm[ch]))) || !(math.Abs(gv-rv[ch]) <= 1e-5*(1+rv[ch])) {
						t.Fatalf("step %d channel %d: running mean/var %g/%g, PyTorch rule %g/%g", step, ch, gm, gv, rm[ch], rv[ch])
					}
				}
				if got := ts["bn.num_batches_tracked"].Data[0]; got != float32(step) {
					t.Fatalf("step %d: num_batches_tracked %g", step, got)
				}
			}
		})
	}
}

// trainSteps runs a few SGD steps of cross-entropy + KL/100 in training mode on random data.
func trainSteps(t *testing.T, n *Net[float32], spec *runtime.Spec, steps int, rng *rand.Rand) {
	t.Helper()
	tp := autodiff.NewTape[float32]()
	batch := 8
	for s := 0; s < steps; s++ {
		x := make([]float32, batch*prod(spec.InputShape))
		for i := range x {
			x[i] = float32(0.5 + rng.NormFloat64())
		}
		y := make([]int, batch)
		for i := range y {
			y[i] = rng.IntN(3)
		}
		tp.Reset()
		n.Begin()
		n.Seed(5, int64(s))
		for _, p := range n.Trainable() {
			p.ZeroGrad()
		}
		out := n.Forward(tp, tp.Const(x, append([]int{batch}, spec.InputShape...)...), true)
		loss := tp.Add(tp.CrossEntropy(out, y), tp.Scale(n.KL(tp), 0.01))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		for _, p := range n.Trainable() {
			for i := range p.Value {
				p.Value[i] -= 0.01 * p.Grad[i]
			}
		}
	}
}

// writeCheckpoint writes the net as the trainer's checkpoint does: the spec as the meta blob and
// every tensor (parameters and buffers) under its state_dict name.
func writeCheckpoint(t *testing.T, n *Net[float32], path string) {
	t.Helper()
	w := format.NewWriter()
	spec := n.Spec()
	modeltest.AddSpec(t, w, &spec)
	for _, p := range n.Params() {
		if _, err := w.AddTensor(p.Name, p.Shape, p.Value, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.Save(t, w, path)
}

// runtimeLogits predicts xs with Options{Mean: true} and returns the logits.
func runtimeLogits(t *testing.T, m *runtime.Model, xs []float32, batch int) []float32 {
	t.Helper()
	p, err := m.NewPredictor(runtime.Options{Mean: true, KeepSamples: true, MaxBatch: batch})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := make([]runtime.Prediction, batch)
	if err := p.PredictBatch(xs, out); err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for _, o := range out {
		logits = append(logits, o.Outputs...)
	}
	return logits
}

// TestRuntimeParity trains a tiny residual BatchNorm network for a few steps (so the running
// statistics move away from 0 and 1), writes it as the trainer's checkpoint, and checks that the
// runtime, loading that file (and the converter's f32 model made from it), predicts with
// Options{Mean: true} the logits of the trainer's eval-mode forward at the mean weights.
func TestRuntimeParity(t *testing.T) {
	for _, pc := range resPosteriors() {
		t.Run(pc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			spec := resSpec(pc.post)
			n, err := New[float32](spec, nil, rng)
			if err != nil {
				t.Fatal(err)
			}
			trainSteps(t, n, spec, 4, rng)
			ts := n.Tensors()
			for _, name := range []string{"bn1.running_mean", "layer2.0.downsample.1.running_var", "bnfc.running_mean"} {
				moved := false
				init := float32(0)
				if hasSuffix(name, "var") {
					init = 1
				}
				for _, v := range ts[name].Data {
					if math.Abs(float64(v-init)) > 1e-3 {
						moved = true
					}
				}
				if !moved {
					t.Fatalf("%s did not move from its initial value: %v", name, ts[name].Data)
				}
			}
			if got := ts["bn1.num_batches_tracked"].Data[0]; got != 4 {
				t.Fatalf("num_batches_tracked = %g, want 4", got)
			}
			checkRuntimeParity(t, n, spec, rng)
		})
	}
}

// checkRuntimeParity draws a batch of 5 inputs from rng, takes the trainer's eval-mode forward at
// the mean weights, writes n as the trainer's checkpoint, and checks that the runtime, loading that
// file and the converter's f32 model made from it, predicts the same logits with
// Options{Mean: true}.
func checkRuntimeParity(t *testing.T, n *Net[float32], spec *runtime.Spec, rng *rand.Rand) {
	t.Helper()
	batch := 5
	xs := make([]float32, batch*prod(spec.InputShape))
	for i := range xs {
		xs[i] = float32(0.5 + rng.NormFloat64())
	}
	tp := autodiff.NewTape[float32]()
	var want []float32
	tp.NoGrad(func() {
		want = append(want, n.ForwardMean(tp, tp.Const(xs, append([]int{batch}, spec.InputShape...)...)).Value()...)
	})
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt.ebnn")
	writeCheckpoint(t, n, ckpt)
	m, err := runtime.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	compareLogits(t, "checkpoint", runtimeLogits(t, m, xs, batch), want)
	conv := filepath.Join(dir, "model.ebnn")
	if _, err := convert.Convert(convert.Options{Checkpoint: ckpt, Out: conv}); err != nil {
		t.Fatal(err)
	}
	cm, err := runtime.Load(conv)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	compareLogits(t, "converted", runtimeLogits(t, cm, xs, batch), want)
}

func compareLogits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*(1+scale)) {
			t.Fatalf("%s: logit %d: runtime %g, trainer %g (|diff| %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// TestResidualShapeErrors checks that bad residual and BatchNorm layers are errors naming the
// layer.
func TestResidualShapeErrors(t *testing.T) {
	base := func() *runtime.Spec { return resSpec(nil) }
	cases := []struct {
		name string
		edit func(s *runtime.Spec)
		want string
	}{
		{"shortcutMismatch", func(s *runtime.Spec) { s.Layers[5].Shortcut = nil }, `"layer2.0"`},
		{"emptyBody", func(s *runtime.Spec) { s.Layers[3].Body = nil }, `"layer1.0"`},
		{"bnFeatures", func(s *runtime.Spec) { s.Layers[1].In = 7 }, `"bn1"`},
		{"adaptiveTooLarge", func(s *runtime.Spec) { s.Layers[7].OutputSize = [2]int{4, 4} }, `"avgpool"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(s)
			_, err := New[float32](s, nil, rand.New(rand.NewPCG(1, 1)))
			if err == nil || !contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}
