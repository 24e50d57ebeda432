package runtime_test

import (
	"encoding/json"
	"fmt"
	"math"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// Ensemble-W: an ensemble of K deterministic networks in one model (Spec.Members). The reference
// is independent of the ensemble code: K separately built single-network models (and, for the
// MLP, a naive float64 forward pass), whose softmax outputs are averaged by hand.

// ensMLPSpec: 6 → linear(8) → BN → ReLU → linear(8) → tanh → BN (not foldable) → linear(out).
func ensMLPSpec(task runtime.Task, members int) *runtime.Spec {
	s := &runtime.Spec{Version: runtime.SpecVersion, Task: task, InputShape: []int{6}, Members: members,
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 6, Out: 8, Bias: true},
			{Name: "1", Op: runtime.OpBatchNorm, In: 8, Affine: true},
			{Name: "2", Op: runtime.OpReLU},
			{Name: "3", Op: runtime.OpLinear, In: 8, Out: 8, Bias: false},
			{Name: "4", Op: runtime.OpTanh},
			{Name: "5", Op: runtime.OpBatchNorm, In: 8, Eps: 1e-3},
			{Name: "6", Op: runtime.OpLinear, In: 8, Out: 4, Bias: true},
		}}
	if task == runtime.Regression {
		s.NoiseVar = 0.05
		s.Layers[6].Out = 2
	}
	return s
}

// ensCNNSpec: conv → BN → ReLU → residual (conv, BN, ReLU, conv; 1×1 conv shortcut) → max pool →
// flatten → linear, on 2×6×6 images.
func ensCNNSpec(members int) *runtime.Spec {
	conv := func(name string, in, out, k, pad int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Bias: true,
			Kernel: [2]int{k, k}, Padding: [2]int{pad, pad}}
	}
	bn := func(name string, c int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpBatchNorm, In: c, Affine: true}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 6, 6},
		Members: members,
		Layers: []runtime.LayerSpec{
			conv("c1", 2, 3, 3, 1), bn("bn1", 3), {Name: "relu1", Op: runtime.OpReLU},
			{Name: "res", Op: runtime.OpResidual,
				Body: []runtime.LayerSpec{conv("ra", 3, 4, 3, 1), bn("rbn", 4), {Name: "rrelu", Op: runtime.OpReLU},
					conv("rb", 4, 4, 3, 1)},
				Shortcut: []runtime.LayerSpec{conv("rs", 3, 4, 1, 0)}},
			{Name: "pool", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}},
			{Name: "flat", Op: runtime.OpFlatten},
			{Name: "fc", Op: runtime.OpLinear, In: 36, Out: 5, Bias: true},
		}}
}

// memberName spells the documented naming of member k's tensors.
func memberName(k int, name string) string {
	if k == 0 {
		return name
	}
	return fmt.Sprintf("member%d/%s", k, name)
}

// ensembleTensors draws each member's tensors independently (seed+k) and returns them merged
// under the member names, and separately per member under the plain names.
func ensembleTensors(spec *runtime.Spec, k int, seed uint64) (runtime.Tensors, []runtime.Tensors) {
	single := *spec
	single.Members = 0
	all := runtime.Tensors{}
	var per []runtime.Tensors
	for e := 0; e < k; e++ {
		ts := randomTensors(&single, seed+uint64(e)*101)
		for name, t := range ts {
			all[memberName(e, name)] = t
		}
		per = append(per, ts)
	}
	return all, per
}

// buildEnsemble builds the ensemble model and the K single-network models.
func buildEnsemble(t testing.TB, spec *runtime.Spec, seed uint64) (*runtime.Model, []*runtime.Model, []runtime.Tensors) {
	t.Helper()
	all, per := ensembleTensors(spec, spec.Members, seed)
	m := newModel(t, spec, all)
	single := *spec
	single.Members = 0
	var singles []*runtime.Model
	for _, ts := range per {
		sm := newModel(t, &single, ts)
		if sm.Stochastic() {
			t.Fatal("a member model is stochastic")
		}
		singles = append(singles, sm)
	}
	return m, singles, per
}

// memberOutputs predicts xs with every single-network model: out[k] is n × outputs.
func memberOutputs(t testing.TB, singles []*runtime.Model, xs []float32) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, sm := range singles {
		preds := predictAll(t, sm, runtime.Options{MaxBatch: 4, KeepSamples: true}, xs)
		var o []float32
		for i := range preds {
			o = append(o, preds[i].Outputs...)
		}
		out = append(out, o)
	}
	return out
}

// handPrediction averages the members' outputs for input i over samples s = 0 … S-1 (member
// s mod K) in float64: probabilities, entropies, mutual information, or regression mean and
// variances.
type handPred struct {
	probs, std                  []float64
	entropy, expected, mutual   float64
	mean, variance, epistemicVa []float64
}

func handPredict(outs [][]float32, i, c, samples int, task runtime.Task, noise float64) handPred {
	var h handPred
	sum, sum2 := make([]float64, c), make([]float64, c)
	hsum := 0.0
	for s := 0; s < samples; s++ {
		y := outs[s%len(outs)][i*c : (i+1)*c]
		if task == runtime.Regression {
			for j, v := range y {
				sum[j] += float64(v)
				sum2[j] += float64(v) * float64(v)
			}
			continue
		}
		for j, p := range softmax64(y) {
			sum[j] += p
			sum2[j] += p * p
			if p > 0 {
				hsum -= p * math.Log(p)
			}
		}
	}
	S := float64(samples)
	if task == runtime.Regression {
		for j := range sum {
			mu := sum[j] / S
			ev := sum2[j]/S - mu*mu
			h.mean = append(h.mean, mu)
			h.epistemicVa = append(h.epistemicVa, ev)
			h.variance = append(h.variance, ev+noise)
		}
		return h
	}
	for j := range sum {
		p := sum[j] / S
		h.probs = append(h.probs, p)
		h.std = append(h.std, math.Sqrt(math.Max(sum2[j]/S-p*p, 0)))
		if p > 0 {
			h.entropy -= p * math.Log(p)
		}
	}
	h.expected = hsum / S
	h.mutual = h.entropy - h.expected
	return h
}

func checkHand(t *testing.T, what string, got *runtime.Prediction, want handPred, tol float64) {
	t.Helper()
	near := func(name string, g, w float64) {
		if !(math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))) {
			t.Errorf("%s: %s = %.9g, want %.9g", what, name, g, w)
		}
	}
	vec := func(name string, g []float32, w []float64) {
		if len(g) != len(w) {
			t.Errorf("%s: %s has %d values, want %d", what, name, len(g), len(w))
			return
		}
		for j := range w {
			near(fmt.Sprintf("%s[%d]", name, j), float64(g[j]), w[j])
		}
	}
	if want.probs != nil {
		vec("Probs", got.Probs, want.probs)
		vec("Std", got.Std, want.std)
		near("Entropy", got.Entropy, want.entropy)
		near("ExpectedEntropy", got.ExpectedEntropy, want.expected)
		near("MutualInfo", got.MutualInfo, want.mutual)
		best := 0
		for j, p := range want.probs {
			if p > want.probs[best] {
				best = j
			}
		}
		if got.Class != best {
			t.Errorf("%s: class %d, want %d", what, got.Class, best)
		}
		return
	}
	vec("Mean", got.Mean, want.mean)
	vec("Var", got.Var, want.variance)
	vec("EpistemicVar", got.EpistemicVar, want.epistemicVa)
}

// TestEnsembleMatchesMembers: the ensemble's predictive equals the hand-made average of the K
// separately built networks' softmax outputs (or regression moments), for S = K, S = 2K + 1 (the
// first member once more) and with Mean; each sample's outputs are member s mod K's, bit for bit.
func TestEnsembleMatchesMembers(t *testing.T) {
	cases := []struct {
		name string
		spec *runtime.Spec
	}{
		{"mlp", ensMLPSpec(runtime.Classification, 3)},
		{"mlp-regression", ensMLPSpec(runtime.Regression, 4)},
		{"cnn", ensCNNSpec(3)},
		{"mlp-one-member", ensMLPSpec(runtime.Classification, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, singles, _ := buildEnsemble(t, tc.spec, 7)
			K := len(singles)
			if m.Members() != K {
				t.Fatalf("Members() = %d, want %d", m.Members(), K)
			}
			if m.Stochastic() != (K > 1) {
				t.Errorf("Stochastic() = %v with %d members", m.Stochastic(), K)
			}
			const n = 5
			xs := randomInputs(m, n, 3)
			outs := memberOutputs(t, singles, xs)
			c := m.OutputSize()
			for _, o := range []struct {
				name    string
				opts    runtime.Options
				samples int
			}{
				{"default", runtime.Options{MaxBatch: 2, KeepSamples: true}, K},
				{"S=K", runtime.Options{Samples: K, MaxBatch: 3, KeepSamples: true}, K},
				{"S=2K+1", runtime.Options{Samples: 2*K + 1, MaxBatch: 5, KeepSamples: true, Seed: 9}, 2*K + 1},
				{"mean", runtime.Options{Samples: 17, Mean: true, MaxBatch: 1, KeepSamples: true}, K},
				{"local", runtime.Options{Samples: K, Strategy: runtime.Local, MaxBatch: 4, KeepSamples: true}, K},
			} {
				if K == 1 && o.name != "default" {
					continue
				}
				p, err := m.NewPredictor(o.opts)
				if err != nil {
					t.Fatal(err)
				}
				if got := p.Options().Samples; got != o.samples {
					t.Errorf("%s: Samples = %d, want %d", o.name, got, o.samples)
				}
				preds := make([]runtime.Prediction, n)
				if err := p.PredictBatch(xs, preds); err != nil {
					t.Fatal(err)
				}
				for i := range preds {
					want := handPredict(outs, i, c, o.samples, m.Task(), tc.spec.NoiseVar)
					checkHand(t, fmt.Sprintf("%s input %d", o.name, i), &preds[i], want, 2e-6)
					for s := 0; s < o.samples; s++ {
						got := preds[i].Outputs[s*c : (s+1)*c]
						ref := outs[s%K][i*c : (i+1)*c]
						for j := range ref {
							// Same kernels, same batch layout per chunk: agree to rounding.
							if !(math.Abs(float64(got[j]-ref[j])) <= 1e-5*math.Max(1, math.Abs(float64(ref[j])))) {
								t.Fatalf("%s input %d sample %d output %d: %v, member %d gives %v", o.name, i, s, j, got[j], s%K, ref[j])
							}
						}
					}
				}
			}
		})
	}
}

// naiveMLP runs ensMLPSpec's network in float64 from raw tensors (BatchNorm not folded).
func naiveMLP(ts runtime.Tensors, x []float32, outN int) []float64 {
	lin := func(name string, in []float64, out int, bias bool) []float64 {
		w := ts[name+".weight"].Data
		y := make([]float64, out)
		for o := range y {
			for j, v := range in {
				y[o] += float64(w[o*len(in)+j]) * v
			}
			if bias {
				y[o] += float64(ts[name+".bias"].Data[o])
			}
		}
		return y
	}
	bn := func(name string, x []float64, eps float64, affine bool) {
		for c := range x {
			v := (x[c] - float64(ts[name+".running_mean"].Data[c])) / math.Sqrt(float64(ts[name+".running_var"].Data[c])+eps)
			if affine {
				v = v*float64(ts[name+".weight"].Data[c]) + float64(ts[name+".bias"].Data[c])
			}
			x[c] = v
		}
	}
	h := make([]float64, len(x))
	for i, v := range x {
		h[i] = float64(v)
	}
	h = lin("0", h, 8, true)
	bn("1", h, 1e-5, true)
	for i := range h {
		h[i] = math.Max(h[i], 0)
	}
	h = lin("3", h, 8, false)
	for i := range h {
		h[i] = math.Tanh(h[i])
	}
	bn("5", h, 1e-3, false)
	return lin("6", h, outN, true)
}

// TestEnsembleNaiveReference: the MLP ensemble against a float64 forward pass of each member's
// raw tensors (BatchNorm applied as written, not folded) — independent of the runtime's layers.
func TestEnsembleNaiveReference(t *testing.T) {
	for _, task := range []runtime.Task{runtime.Classification, runtime.Regression} {
		t.Run(string(task), func(t *testing.T) {
			spec := ensMLPSpec(task, 3)
			m, _, per := buildEnsemble(t, spec, 21)
			const n = 4
			xs := randomInputs(m, n, 5)
			c := m.OutputSize()
			outs := make([][]float32, len(per))
			for k, ts := range per {
				for i := 0; i < n; i++ {
					for _, v := range naiveMLP(ts, xs[i*6:(i+1)*6], c) {
						outs[k] = append(outs[k], float32(v))
					}
				}
			}
			preds := predictAll(t, m, runtime.Options{Samples: 3, MaxBatch: n}, xs)
			for i := range preds {
				checkHand(t, fmt.Sprintf("input %d", i), &preds[i], handPredict(outs, i, c, 3, task, spec.NoiseVar), 2e-5)
			}
		})
	}
}

// TestEnsembleThreadsAllocsRace: predictions are bit-identical whatever the number of threads,
// Predict and PredictBatch allocate nothing after warm-up, and one Model shared by several
// goroutines (each with its own Predictor) gives every goroutine the sequential result (run with
// -race).
func TestEnsembleThreadsAllocsRace(t *testing.T) {
	for _, spec := range []*runtime.Spec{ensMLPSpec(runtime.Classification, 4), ensCNNSpec(3)} {
		m, _, _ := buildEnsemble(t, spec, 11)
		const n = 3
		xs := randomInputs(m, n, 8)
		for _, st := range strategies {
			opts := runtime.Options{Samples: 7, Seed: 2, Strategy: st, MaxBatch: 2, KeepSamples: true}
			want := predictAll(t, m, opts, xs)
			for _, th := range []int{2, 3, 8} {
				opts.Threads = th
				got := predictAll(t, m, opts, xs)
				for i := range want {
					if err := samePrediction(&got[i], &want[i]); err != nil {
						t.Errorf("%v, %d threads, input %d: %v", st, th, i, err)
					}
				}
			}
		}
		for _, th := range []int{1, 3} {
			p, err := m.NewPredictor(runtime.Options{Threads: th, MaxBatch: 2, KeepSamples: true})
			if err != nil {
				t.Fatal(err)
			}
			out := make([]runtime.Prediction, n)
			var one runtime.Prediction
			if err := p.PredictBatch(xs, out); err != nil {
				t.Fatal(err)
			}
			if err := p.Predict(xs[:m.InputSize()], &one); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(5, func() { p.Predict(xs[:m.InputSize()], &one) }); a != 0 {
				t.Errorf("%d threads: Predict: %v allocations per call", th, a)
			}
			if a := testing.AllocsPerRun(5, func() { p.PredictBatch(xs, out) }); a != 0 {
				t.Errorf("%d threads: PredictBatch: %v allocations per call", th, a)
			}
			p.Close()
		}
		opts := runtime.Options{Samples: 5, Seed: 4, MaxBatch: n}
		want := predictAll(t, m, opts, xs)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := m.NewPredictor(opts)
				if err != nil {
					errs[g] = err
					return
				}
				out := make([]runtime.Prediction, n)
				for rep := 0; rep < 3; rep++ {
					if err := p.PredictBatch(xs, out); err != nil {
						errs[g] = err
						return
					}
					for i := range out {
						if err := samePrediction(&out[i], &want[i]); err != nil {
							errs[g] = fmt.Errorf("goroutine %d, input %d: %w", g, i, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
}

// TestEnsembleWeights: MemberWeight returns each member's own weights (BatchNorm folded in by
// hand for layer 0), MeanWeight their average, and Posterior the mixture over members: the
// average weights and the between-member covariance (1/K) Σ_k (w_k − w̄)(w_k − w̄)ᵀ, computed
// here from the raw tensors.
func TestEnsembleWeights(t *testing.T) {
	spec := ensMLPSpec(runtime.Classification, 3)
	m, _, per := buildEnsemble(t, spec, 5)
	K := len(per)
	// Raw weight matrices (bias as the last column), layer 0 with BN "1" folded.
	raw := func(ts runtime.Tensors, name string, out, in int, bias bool, bn string) []float64 {
		cols := in
		if bias {
			cols++
		}
		w := make([]float64, out*cols)
		for o := 0; o < out; o++ {
			s, sh := 1.0, 0.0
			if bn != "" {
				s = float64(ts[bn+".weight"].Data[o]) / math.Sqrt(float64(ts[bn+".running_var"].Data[o])+1e-5)
				sh = float64(ts[bn+".bias"].Data[o]) - float64(ts[bn+".running_mean"].Data[o])*s
			}
			for j := 0; j < in; j++ {
				w[o*cols+j] = s * float64(ts[name+".weight"].Data[o*in+j])
			}
			if bias {
				w[o*cols+in] = s*float64(ts[name+".bias"].Data[o]) + sh
			}
		}
		return w
	}
	layers := []struct {
		name        string
		out, in     int
		bias        bool
		bn          string
		thetaOffset int
	}{{"0", 8, 6, true, "1", 0}, {"3", 8, 8, false, "", 56}, {"6", 4, 8, true, "", 120}}
	const dim = 56 + 64 + 36
	theta := make([][]float64, K) // each member's θ (weights then bias per layer)
	for k := range theta {
		theta[k] = make([]float64, dim)
	}
	for _, l := range layers {
		cols := l.in
		if l.bias {
			cols++
		}
		avg := make([]float64, l.out*cols)
		for k, ts := range per {
			want := raw(ts, l.name, l.out, l.in, l.bias, l.bn)
			got, r, c, err := m.MemberWeight(l.name, k)
			if err != nil || r != l.out || c != cols {
				t.Fatalf("MemberWeight(%s, %d): %d×%d, %v", l.name, k, r, c, err)
			}
			for i := range want {
				if !(math.Abs(float64(got[i])-want[i]) <= 1e-5*math.Max(1, math.Abs(want[i]))) {
					t.Fatalf("MemberWeight(%s, %d)[%d] = %v, want %v", l.name, k, i, got[i], want[i])
				}
				avg[i] += want[i] / float64(K)
			}
			for o := 0; o < l.out; o++ {
				for j := 0; j < l.in; j++ {
					theta[k][l.thetaOffset+o*l.in+j] = want[o*cols+j]
				}
				if l.bias {
					theta[k][l.thetaOffset+l.out*l.in+o] = want[o*cols+l.in]
				}
			}
		}
		mean, _, _, err := m.MeanWeight(l.name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range avg {
			if !(math.Abs(float64(mean[i])-avg[i]) <= 1e-5*math.Max(1, math.Abs(avg[i]))) {
				t.Fatalf("MeanWeight(%s)[%d] = %v, want %v", l.name, i, mean[i], avg[i])
			}
		}
	}
	if _, _, _, err := m.MemberWeight("3", K); err == nil {
		t.Error("MemberWeight accepted member K")
	}
	post, err := m.Posterior(1000)
	if err != nil {
		t.Fatal(err)
	}
	if post.Dim != dim {
		t.Fatalf("Posterior dim %d, want %d", post.Dim, dim)
	}
	mu := make([]float64, dim)
	for _, th := range theta {
		for i, v := range th {
			mu[i] += v / float64(K)
		}
	}
	for a := 0; a < dim; a++ {
		if !(math.Abs(post.Mean[a]-mu[a]) <= 1e-5*math.Max(1, math.Abs(mu[a]))) {
			t.Fatalf("Posterior mean[%d] = %v, want %v", a, post.Mean[a], mu[a])
		}
		for b := 0; b < dim; b += 7 {
			want := 0.0
			for _, th := range theta {
				want += (th[a] - mu[a]) * (th[b] - mu[b]) / float64(K)
			}
			if got := post.Cov[a*dim+b]; !(math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want))) {
				t.Fatalf("Posterior cov[%d,%d] = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestEnsembleErrors: missing or misshapen member tensors, and specs an ensemble cannot have, are
// errors naming the tensor or field at fault.
func TestEnsembleErrors(t *testing.T) {
	type edit func(s *runtime.Spec, ts runtime.Tensors)
	cases := []struct {
		name string
		edit edit
		want []string
	}{
		{"missing member weight", func(_ *runtime.Spec, ts runtime.Tensors) { delete(ts, "member2/6.weight") },
			[]string{`"6"`, `"member2/6.weight"`, "no such tensor"}},
		{"missing member bn", func(_ *runtime.Spec, ts runtime.Tensors) { delete(ts, "member1/5.running_var") },
			[]string{`"5"`, `"member1/5.running_var"`}},
		{"misshapen member bias", func(_ *runtime.Spec, ts runtime.Tensors) {
			ts["member1/0.bias"] = tensor(make([]float32, 7), 7)
		}, []string{`"0"`, `"member1/0.bias"`, "shape [7]", "want [8]"}},
		{"negative member running_var", func(_ *runtime.Spec, ts runtime.Tensors) {
			v := append([]float32(nil), ts["member2/1.running_var"].Data...)
			v[3] = -1
			ts["member2/1.running_var"] = tensor(v, 8)
		}, []string{`"1"`, `"member2/1.running_var"`, "negative"}},
		{"too many members", func(s *runtime.Spec, _ runtime.Tensors) { s.Members = 4 },
			[]string{`"member3/0.weight"`}},
		{"members out of range", func(s *runtime.Spec, _ runtime.Tensors) { s.Members = -1 },
			[]string{"members -1"}},
		{"members over the limit", func(s *runtime.Spec, _ runtime.Tensors) { s.Members = runtime.MaxMembers + 1 },
			[]string{"members"}},
		// A posterior makes the ensemble a mixture of posteriors (mixture_test.go), whose
		// members' posterior tensors these deterministic members do not have.
		{"bayesian layer", func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[3].Posterior = ffgPost() },
			[]string{"mixture member 0", `"3"`, `"3.weight_mean"`, "no such tensor"}},
		{"fa section", func(s *runtime.Spec, _ runtime.Tensors) { s.FA = &runtime.FASpec{Dim: 4, Rank: 1} },
			[]string{"mixture member 0", "fa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := ensMLPSpec(runtime.Classification, 3)
			ts, _ := ensembleTensors(spec, 3, 1)
			c.edit(spec, ts)
			_, err := runtime.New(spec, ts)
			testutil.ErrorContains(t, err, c.want...)
		})
	}
}

// TestEnsembleSpecJSON: Members is the spec's "members" key, absent for a single network.
func TestEnsembleSpecJSON(t *testing.T) {
	b, err := json.Marshal(ensMLPSpec(runtime.Classification, 3))
	if err != nil {
		t.Fatal(err)
	}
	s, err := runtime.ParseSpec(b)
	if err != nil || s.Members != 3 {
		t.Fatalf("ParseSpec: members %v, %v (%s)", s, err, b)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["members"] != 3.0 {
		t.Errorf("JSON members = %v (%v)", raw["members"], err)
	}
	b, _ = json.Marshal(ensMLPSpec(runtime.Classification, 0))
	raw = nil
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["members"]; ok {
		t.Errorf("a single network's spec has a members key: %s", b)
	}
	for k, want := range map[int]string{0: "", 1: "member1/", 12: "member12/"} {
		if got := runtime.MemberPrefix(k); got != want {
			t.Errorf("MemberPrefix(%d) = %q, want %q", k, got, want)
		}
	}
}

// BenchmarkEnsemble: one input through a 784-256-256-10 MLP ensemble, one sample per member, for
// K = 1 (a single network) and K = 5 (the cost grows linearly with K).
func BenchmarkEnsemble(b *testing.B) {
	for _, k := range []int{1, 5} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{784},
				Members: k, Layers: []runtime.LayerSpec{
					{Name: "0", Op: runtime.OpLinear, In: 784, Out: 256, Bias: true}, {Name: "1", Op: runtime.OpReLU},
					{Name: "2", Op: runtime.OpLinear, In: 256, Out: 256, Bias: true}, {Name: "3", Op: runtime.OpReLU},
					{Name: "4", Op: runtime.OpLinear, In: 256, Out: 10, Bias: true}}}
			m, _, _ := buildEnsemble(b, spec, 1)
			p, err := m.NewPredictor(runtime.Options{})
			if err != nil {
				b.Fatal(err)
			}
			x := randomInputs(m, 1, 2)
			var out runtime.Prediction
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Predict(x, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBatchNormFoldKeepsWeights: building a model whose deterministic convolutions are followed
// by BatchNorms allocates per-channel vectors, not another copy of the weights (the fold applies
// the BatchNorm's scale to the layer's outputs), and the outputs still equal the network with the
// BatchNorm folded into the weights by hand.
func TestBatchNormFoldKeepsWeights(t *testing.T) {
	const members, c = 3, 64
	conv := func(name string) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: c, Out: c, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}
	}
	bn := func(name string) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpBatchNorm, In: c, Affine: true}
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{c, 4, 4},
		Members: members, Layers: []runtime.LayerSpec{conv("c1"), bn("b1"), {Name: "r", Op: runtime.OpReLU},
			conv("c2"), bn("b2"), {Name: "f", Op: runtime.OpFlatten},
			{Name: "fc", Op: runtime.OpLinear, In: c * 16, Out: 3, Bias: true}}}
	all, per := ensembleTensors(spec, members, 11)
	weightBytes := uint64(members * 2 * c * c * 9 * 4)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	m, err := runtime.New(spec, all)
	goruntime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > weightBytes/4 {
		t.Errorf("building the model allocated %d bytes; its convolution weights are %d bytes", got, weightBytes)
	}
	// The same members with each BatchNorm folded into its convolution's weights and bias by
	// hand (W·s, shift as the bias), and no BatchNorm layers: the outputs agree.
	folded := &runtime.Spec{Version: spec.Version, Task: spec.Task, InputShape: spec.InputShape, Members: members}
	for _, l := range spec.Layers {
		if l.Op == runtime.OpBatchNorm {
			continue
		}
		if l.Op == runtime.OpConv2d {
			l.Bias = true
		}
		folded.Layers = append(folded.Layers, l)
	}
	fts := runtime.Tensors{}
	for e, ts := range per {
		for name, tn := range ts {
			fts[memberName(e, name)] = tn
		}
		for _, l := range [][2]string{{"c1", "b1"}, {"c2", "b2"}} {
			w := append([]float32(nil), ts[l[0]+".weight"].Data...)
			b := make([]float32, c)
			for o := range c {
				s := float64(ts[l[1]+".weight"].Data[o]) / math.Sqrt(float64(ts[l[1]+".running_var"].Data[o])+1e-5)
				for j := range c * 9 {
					w[o*c*9+j] = float32(s * float64(w[o*c*9+j]))
				}
				b[o] = float32(float64(ts[l[1]+".bias"].Data[o]) - float64(ts[l[1]+".running_mean"].Data[o])*s)
			}
			fts[memberName(e, l[0]+".weight")] = runtime.Tensor{Shape: ts[l[0]+".weight"].Shape, Data: w}
			fts[memberName(e, l[0]+".bias")] = runtime.Tensor{Shape: []int{c}, Data: b}
		}
	}
	mf := newModel(t, folded, fts)
	xs := randomInputs(m, 2, 3)
	got, want := make([]runtime.Prediction, 2), make([]runtime.Prediction, 2)
	for _, p := range []struct {
		m   *runtime.Model
		out []runtime.Prediction
	}{{m, got}, {mf, want}} {
		pr, err := p.m.NewPredictor(runtime.Options{Samples: members, MaxBatch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := pr.PredictBatch(xs, p.out); err != nil {
			t.Fatal(err)
		}
	}
	for i := range got {
		if len(got[i].Probs) == 0 || len(got[i].Probs) != len(want[i].Probs) {
			t.Fatalf("input %d: %d class probabilities with the BatchNorm applied to the outputs, %d folded", i, len(got[i].Probs), len(want[i].Probs))
		}
		for j, v := range got[i].Probs {
			if w := want[i].Probs[j]; !(math.Abs(float64(v-w)) <= 1e-5) {
				t.Errorf("input %d class %d: %g with the BatchNorm applied to the outputs, %g folded into the weights", i, j, v, w)
			}
		}
	}
	// The weights the model reports are the folded layer's, its BatchNorm shift included as the
	// bias column of a convolution that had no bias.
	for _, name := range []string{"c1", "c2"} {
		for e := 0; e <= members; e++ {
			get := func(md *runtime.Model) ([]float32, int, int, error) {
				if e == members {
					return md.MeanWeight(name)
				}
				return md.MemberWeight(name, e)
			}
			w, r, cols, err := get(m)
			wf, rf, colsf, errf := get(mf)
			if err != nil || errf != nil {
				t.Fatal(err, errf)
			}
			if r != rf || cols != colsf {
				t.Fatalf("%s member %d: %d × %d weights, the hand-folded layer %d × %d", name, e, r, cols, rf, colsf)
			}
			for i := range w {
				if !(math.Abs(float64(w[i]-wf[i])) <= 1e-5*(1+math.Abs(float64(wf[i])))) {
					t.Fatalf("%s member %d: entry %d (row %d, column %d) is %g, the hand-folded layer's %g", name, e, i, i/cols, i%cols, w[i], wf[i])
				}
			}
		}
	}
}
