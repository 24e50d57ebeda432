package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// gramConv turns indLayer's Linear layer into a convolution with the same d_in = 7 (6 weights
// and a bias per output channel): 2 channels with a 3×1 kernel on a 2×3×2 input (padding 1
// along the height: 6 positions, some reading the padding), or 6 channels 1×1 on 6×2×1
// (pointwise: 2 positions, no im2col).
func gramConv(spec *runtime.Spec, pointwise bool) *runtime.Spec {
	l := spec.Layers[0]
	l.Op = runtime.OpConv2d
	if pointwise {
		spec.InputShape = []int{6, 2, 1}
		l.In, l.Kernel = 6, [2]int{1, 1}
	} else {
		spec.InputShape = []int{2, 3, 2}
		l.In, l.Kernel, l.Padding = 2, [2]int{3, 1}, [2]int{1, 0}
	}
	spec.Layers = []runtime.LayerSpec{l, {Name: "flat", Op: runtime.OpFlatten}}
	return spec
}

// im2colRef is the float64 im2col matrix (d_in × P, bias row of ones last) of one input of
// gramConv's convolution: row c·KH·KW + i·KW + j, column oh·W_out + ow reads channel c at
// (oh − pad_h + i, ow − pad_w + j), 0 outside the image.
func im2colRef(spec *runtime.Spec, x []float32) (xt [][]float64, pos int) {
	l := spec.Layers[0]
	c, h, w := spec.InputShape[0], spec.InputShape[1], spec.InputShape[2]
	kh, kw, ph, pw := l.Kernel[0], l.Kernel[1], l.Padding[0], l.Padding[1]
	oh, ow := h+2*ph-kh+1, w+2*pw-kw+1
	pos = oh * ow
	for ch := 0; ch < c; ch++ {
		for i := 0; i < kh; i++ {
			for j := 0; j < kw; j++ {
				row := make([]float64, pos)
				for y := 0; y < oh; y++ {
					for z := 0; z < ow; z++ {
						iy, iz := y-ph+i, z-pw+j
						if iy >= 0 && iy < h && iz >= 0 && iz < w {
							row[y*ow+z] = float64(x[(ch*h+iy)*w+iz])
						}
					}
				}
				xt = append(xt, row)
			}
		}
	}
	ones := make([]float64, pos)
	for i := range ones {
		ones[i] = 1
	}
	return append(xt, ones), pos
}

// TestInducingGramMoments: the Local strategy samples an inducing convolution per input along
// the gram path; one input's outputs at all positions, y = W X̃, must have the moments of the
// closed form of W (weightMoments, MATH.md §1) mapped through the input's im2col matrix:
// E[y] = A E[vec W], Cov(y) = A Cov(vec W) Aᵀ with A[(o,p),(o,j)] = X̃[j,p]. Every q(U) family,
// 3×1 (im2col) and 1×1 (pointwise) kernels, an input of zeros (every column the bias alone: a
// rank-one X̃ᵀX̃), a random one (6 positions and a bias in d_in = 7 with M_in = 2: the Schur
// complement is singular) and one of N(0, 2^132) values, whose X̃ᵀX̃ overflows float32 (the
// path rescales x̃ by a power of two; the sampled outputs, around 1e20, stay finite, though their
// variance may not be a float32).
func TestInducingGramMoments(t *testing.T) {
	skipUnderRace(t)
	n := sampleCount(100_008)
	for ci, c := range indCases {
		for _, pw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pointwise=%v", c.name, pw), func(t *testing.T) {
				spec, ts := indLayer(t, c, uint64(ci+1))
				spec = gramConv(spec, pw)
				m := newModel(t, spec, ts)
				// A layer this small is cheaper as weights: force the gram path.
				if !runtime.SetInducingGram(m, "fc", "on") || !runtime.InducingGram(m, "fc", runtime.Local, 2) {
					t.Fatal("the convolution does not take the gram path under Local")
				}
				if runtime.InducingGram(m, "fc", runtime.Weight, 2) {
					t.Fatal("the gram path under Weight")
				}
				r := rand.New(rand.NewPCG(uint64(ci), 9))
				in := m.InputSize()
				xs := append(make([]float32, in), randn(r, in, 1)...)
				xs = append(xs, randn(r, in, 1<<66)...)
				if xt, pos := im2colRef(spec, xs[2*in:]); !overflows(xt, pos) {
					t.Fatal("the third input does not overflow X̃ᵀX̃")
				}
				pr, err := m.NewPredictor(runtime.Options{Samples: n, Seed: uint64(400 + ci), Strategy: runtime.Local,
					MaxBatch: 3, KeepSamples: true})
				if err != nil {
					t.Fatal(err)
				}
				out := make([]runtime.Prediction, 3)
				// The third input's samples are finite, but their variance (≈ 1e40) need not be as
				// a float32: then the prediction is an error naming it, and its samples still count.
				var nf *runtime.NonFiniteError
				if err := pr.PredictBatch(xs, out); err != nil && !(errors.As(err, &nf) && nf.Input == 2 && nf.Count == 1) {
					t.Fatal(err)
				}
				wMean, wCov := newIndRef(c, ts).weightMoments()
				for i := range out {
					xt, pos := im2colRef(spec, xs[i*in:(i+1)*in])
					p := indOut * pos
					a := newMat(p, indOut*indDIn)
					for o := 0; o < indOut; o++ {
						for q := 0; q < pos; q++ {
							for j := 0; j < indDIn; j++ {
								a.set(o*pos+q, o*indDIn+j, xt[j][q])
							}
						}
					}
					mean, cov := matVec(a, wMean), mul(mul(a, wCov), a.T())
					checkMoments(t, fmt.Sprintf("y(x_%d)", i), sampleMoments(to64s(out[i].Outputs), p), mean, cov)
				}
			})
		}
	}
}

// TestInducingGramAuto: Auto samples an inducing convolution along the gram path where one
// input's gram sample (gramCost) costs less than a weight sample applied to the batch, Local
// where it costs less than a weight sample applied to one input (whatever the batch). A 64 →
// 128 3×3 convolution on 4×4 (d_in 577, M 8 × 8, P = 16): the gram path costs
// 16·(128·24 + 4·64) + 2·8·577·16 + 577·16² + (8²·16 + 8·16² + 16³/3) + 128·24² + 8·128·8 +
// 16·(8·8 + 128·8) = 452 437 per input; a weight sample 1 813 568 (normals and Z_r E1 Z_cᵀ) plus
// 1 272 960 (factored, one input) or 627 776 + 1 181 696·n (formed): gram for every batch. A 64 → 16
// 3×3 convolution on 16×16 (P = 256, M 8 × 8) pays 577·256² = 37.8 M for X̃ᵀX̃ alone against
// 16·577·256 = 2.4 M to apply a formed W: never gram, under Local either. Past 512 positions
// there is no gram path.
func TestInducingGramAuto(t *testing.T) {
	conv := func(out, hw int) *runtime.Model {
		return newModel(t, indConvSpec(out, hw), randomTensors(indConvSpec(out, hw), 3))
	}
	for _, c := range []struct {
		name       string
		m          *runtime.Model
		auto, loc  bool
		batchSizes []int
	}{
		{"128ch-4x4", conv(128, 4), true, true, []int{1, 7, 256}},
		{"16ch-16x16", conv(16, 16), false, false, []int{1, 7}},
		{"16ch-32x32", conv(16, 32), false, false, []int{1}},
	} {
		for _, n := range c.batchSizes {
			if got := runtime.InducingGram(c.m, "c", runtime.Auto, n); got != c.auto {
				t.Errorf("%s, n = %d: Auto takes the gram path: %v, want %v", c.name, n, got, c.auto)
			}
			if got := runtime.InducingGram(c.m, "c", runtime.Local, n); got != c.loc {
				t.Errorf("%s, n = %d: Local takes the gram path: %v, want %v", c.name, n, got, c.loc)
			}
		}
	}
}

// indConvSpec is one inducing convolution, 64 → out channels, 3×3, padding 1, on hw × hw
// inputs, M 8 × 8 (diagonal, whitened), flattened.
func indConvSpec(out, hw int) *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{64, hw, hw},
		Layers: []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 64, Out: out, Bias: true, Kernel: [2]int{3, 3},
			Padding: [2]int{1, 1}, Posterior: inducingPost(8, 8, runtime.QDiagonal, true, 0)}, {Name: "flat", Op: runtime.OpFlatten}}}
}

// TestInducingGramScratch: a predictor whose inducing convolution samples along the gram path
// for every batch (Auto and Local on TestInducingGramAuto's 64 → 128 3×3 convolution on 4×4)
// holds no weight matrix (128 × 577 float32 values, 295 KB): its memory is at least 80 % of one
// below Weight's (the gram path's own scratch is the rest). It allocates nothing per prediction
// at any batch up to MaxBatch: the warm-up's passes that create Weight's and Local's buffers
// run dry, never touching the scratch Auto does not have.
func TestInducingGramScratch(t *testing.T) {
	spec := indConvSpec(128, 4)
	m := newModel(t, spec, randomTensors(spec, 3))
	wBytes := int64(4 * 128 * 577)
	for _, batch := range []int{1, 4} {
		var weight int64
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Auto, runtime.Local} {
			p, err := m.NewPredictor(runtime.Options{Samples: 8, Seed: 1, Strategy: st, MaxBatch: batch})
			if err != nil {
				t.Fatal(err)
			}
			if st == runtime.Weight {
				weight = p.ScratchBytes()
			} else if saved := weight - p.ScratchBytes(); saved < wBytes*8/10 {
				t.Errorf("%v, batch %d: %d bytes against Weight's %d: %d saved, want ≥ 80 %% of W's %d",
					st, batch, p.ScratchBytes(), weight, saved, wBytes)
			}
			xs := randomInputs(m, batch, 5)
			out := make([]runtime.Prediction, batch)
			for n := 1; n <= batch; n++ {
				if err := p.PredictBatch(xs[:n*m.InputSize()], out[:n]); err != nil {
					t.Fatal(err)
				}
				if a := testing.AllocsPerRun(3, func() {
					if err := p.PredictBatch(xs[:n*m.InputSize()], out[:n]); err != nil {
						t.Fatal(err)
					}
				}); a != 0 {
					t.Errorf("%v, batch %d of %d: %v allocations", st, n, batch, a)
				}
			}
		}
	}
}

// TestInducingGramMatchesWeight: on a larger convolution than TestInducingGramMoments' (64 → 32
// channels, 3×3 on 4×4, d_in 577, M 16 × 16, an input with a ReLU's zeros) the gram path's
// outputs (Local) have the per-output means and variances of whole weight samples (Weight):
// two-sample z-tests on all 512 outputs, 5 standard errors (variances of near-Gaussian outputs:
// se² = 2σ⁴/(n−1) per side). It catches layout and scale errors at a size the closed-form test
// does not reach (positions reversed in the output: 108 outputs fail; X̃ᵀX̃ halved: all 512);
// the structure of F (L_21, the pivot tolerance) is that test's to check: here M_c/d_in ≈ 3 %,
// so dropping L_21 moves the variances by less than their standard error.
func TestInducingGramMatchesWeight(t *testing.T) {
	n := sampleCount(12_000)
	spec := indConvSpec(32, 4)
	spec.Layers[0].Posterior = inducingPost(16, 16, runtime.QDiagonal, true, 0)
	ts := randomTensors(spec, 5)
	m := newModel(t, spec, ts)
	if !runtime.InducingGram(m, "c", runtime.Local, 1) {
		t.Fatal("no gram path under Local")
	}
	r := rand.New(rand.NewPCG(3, 4))
	x := randn(r, m.InputSize(), 1)
	for i := range x {
		x[i] = max(x[i], 0)
	}
	var mean, vari [2][]float64
	for s, st := range []runtime.Strategy{runtime.Local, runtime.Weight} {
		out := predictAll(t, m, runtime.Options{Samples: n, Seed: uint64(20 + s), Strategy: st, KeepSamples: true}, x)
		mean[s], vari[s] = sampleMeanVar(to64s(out[0].Outputs), 32*16)
	}
	bad := 0
	for j := range mean[0] {
		dm := mean[0][j] - mean[1][j]
		seM := math.Sqrt((vari[0][j] + vari[1][j]) / float64(n))
		dv := vari[0][j] - vari[1][j]
		seV := math.Sqrt(2 * (vari[0][j]*vari[0][j] + vari[1][j]*vari[1][j]) / float64(n-1))
		if !(math.Abs(dm) <= 5*seM) || !(math.Abs(dv) <= 5*seV) {
			bad++
			if bad <= 5 {
				t.Errorf("output %d: gram mean %.5g var %.5g, weight mean %.5g var %.5g (%.1f, %.1f se)",
					j, mean[0][j], vari[0][j], mean[1][j], vari[1][j], dm/seM, dv/seV)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d outputs differ", bad, len(mean[0]))
	}
}

// TestInducingGramContracts: with the gram path forced on every inducing convolution of the test
// CNN (im2col and pointwise, residual blocks, BatchNorm; a global-U CNN too), the Local strategy
// keeps its contracts: an input gets the same samples alone, in a batch and in chunks (to float
// rounding); any number of threads gives the same bits; a prediction allocates nothing.
func TestInducingGramContracts(t *testing.T) {
	cnn := cnnSpec()
	cnn.Layers[5].Shortcut[0].Posterior = inducingPost(2, 2, runtime.QDiagonal, false, 0) // r2s: 1×1, pointwise
	for name, spec := range map[string]*runtime.Spec{"cnn": cnn, "global-cnn": globalCNNSpec()} {
		t.Run(name, func(t *testing.T) {
			build := func() *runtime.Model {
				m := buildModel(t, spec, 3)
				forced := 0
				var walk func([]runtime.LayerSpec)
				walk = func(ls []runtime.LayerSpec) {
					for _, l := range ls {
						walk(l.Body)
						walk(l.Shortcut)
						if l.Op == runtime.OpConv2d && l.Posterior != nil && l.Posterior.Kind == runtime.KindInducing &&
							runtime.SetInducingGram(m, l.Name, "on") && runtime.InducingGram(m, l.Name, runtime.Local, 1) {
							forced++
						}
					}
				}
				walk(spec.Layers)
				if forced < 2 {
					t.Fatalf("%d convolutions on the gram path", forced)
				}
				return m
			}
			const n = 5
			m := build()
			xs := randomInputs(m, n, 4)
			opts := runtime.Options{Samples: 4, Seed: 7, Strategy: runtime.Local, KeepSamples: true}
			batch := batchMatchesSingle(t, m, opts, xs)
			opts.MaxBatch, opts.Threads = n, 3
			threaded := predictAll(t, build(), opts, xs)
			for i := range batch {
				if err := samePrediction(&batch[i], &threaded[i]); err != nil {
					t.Errorf("input %d, 3 threads: %v", i, err)
				}
			}
			opts.MaxBatch, opts.Threads = 1, 1
			p, err := m.NewPredictor(opts)
			if err != nil {
				t.Fatal(err)
			}
			in := m.InputSize()
			x := xs[:in]
			var one runtime.Prediction
			if a := testing.AllocsPerRun(5, func() {
				if err := p.Predict(x, &one); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("Predict: %v allocations", a)
			}
		})
	}
}

// overflows reports whether a column of the im2col matrix xt (rows of pos values) has a squared
// norm beyond float32's range.
func overflows(xt [][]float64, pos int) bool {
	for p := 0; p < pos; p++ {
		s := 0.0
		for _, row := range xt {
			s += row[p] * row[p]
		}
		if s > math.MaxFloat32 {
			return true
		}
	}
	return false
}

// TestInducingGramOverflow: on the gram path an input whose |x̃|² overflows float32 is sampled
// as any other (its moments: TestInducingGramMoments) — alone, in a batch, under Local and Auto
// alike — while an input holding an infinity (from a layer before it) gives ErrNonFinite, never
// numbers.
func TestInducingGramOverflow(t *testing.T) {
	spec := indConvSpec(128, 4)
	m := newModel(t, spec, randomTensors(spec, 3))
	// The same convolution after a 1×1 one whose weights are all 1e15 (the largest a model file
	// may hold): an input of order one reaches it as values of order 1e16, one of 1e30 as
	// infinities.
	pre := runtime.LayerSpec{Name: "a", Op: runtime.OpConv2d, In: 64, Out: 64, Kernel: [2]int{1, 1}}
	spec2 := indConvSpec(128, 4)
	spec2.Layers = append([]runtime.LayerSpec{pre}, spec2.Layers...)
	ts := randomTensors(spec2, 3)
	w := make([]float32, 64*64)
	for i := range w {
		w[i] = 1e15
	}
	ts["a.weight"] = tensor(w, 64, 64, 1, 1)
	m2 := newModel(t, spec2, ts)
	in := m.InputSize()
	x := randomInputs(m, 2, 2)
	x[5] = 1e30
	var alone runtime.Prediction
	for _, st := range []runtime.Strategy{runtime.Local, runtime.Auto} {
		if !runtime.InducingGram(m, "c", st, 2) || !runtime.InducingGram(m2, "c", st, 2) {
			t.Fatalf("%v: no gram path", st)
		}
		p, err := m.NewPredictor(runtime.Options{Samples: 4, Seed: 3, Strategy: st, MaxBatch: 2, KeepSamples: true})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]runtime.Prediction, 2)
		if err := p.PredictBatch(x, got); err != nil {
			t.Fatalf("%v: %v", st, err)
		}
		if st == runtime.Local {
			if err := p.Predict(x[:in], &alone); err != nil {
				t.Fatal(err)
			}
		}
		if err := samePrediction(&got[0], &alone); err != nil {
			t.Errorf("%v, batch of 2 vs Local alone: %v", st, err)
		}
		big := 0.0
		for _, v := range got[0].Outputs {
			big = max(big, math.Abs(float64(v)))
		}
		if !(big > 1e20 && big < 1e36) {
			t.Errorf("%v: largest |output| %g for an input of 1e30", st, big)
		}
		p2, err := m2.NewPredictor(runtime.Options{Samples: 4, Seed: 3, Strategy: st, MaxBatch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := p2.Predict(x[in:], &got[1]); err != nil {
			t.Errorf("%v, inputs of order 1e16: %v", st, err)
		}
		if err := p2.Predict(x[:in], &got[1]); !errors.Is(err, runtime.ErrNonFinite) {
			t.Errorf("%v, an infinite input: %v, want ErrNonFinite", st, err)
		}
	}
}
