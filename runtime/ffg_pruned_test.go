package runtime_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// A pruned FFG layer (PosteriorSpec.Pruned): W = M + S ⊙ ε on the kept weights, exactly zero
// elsewhere; only the kept weights are stored.

// prunedCase is a 3 × 4 layer with a bias keeping the weights at the row-major indices keep.
type prunedCase struct {
	name string
	keep []uint32
}

var prunedCases = []prunedCase{
	{"sparse", []uint32{1, 6, 7}},             // density 0.25: CSR (forced below, too)
	{"dense", []uint32{0, 1, 2, 4, 5, 7, 11}}, // density 0.58: dense GEMM
	{"none kept", nil},
}

// prunedModel builds the layer from raw (pre-softplus) tensors and returns them.
func prunedModel(t testing.TB, keep []uint32) (*runtime.Spec, runtime.MemorySource) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(keep))+3, 5))
	sd := randn(r, len(keep), 0.5)
	for i := range sd {
		sd[i] -= 1.5
	}
	bsd := randn(r, ffgOut, 0.5)
	if len(sd) > 0 {
		sd[0] = 2 // softplus above max_sd: clamped
	}
	index, err := runtime.EncodeKeptIndex(ffgOut, ffgK, keep)
	if err != nil {
		t.Fatal(err)
	}
	src := runtime.MemorySource{
		Tensors: runtime.Tensors{
			"fc.weight_mean_kept": tensor(randn(r, len(keep), 1), len(keep)),
			"fc._weight_sd_kept":  tensor(sd, len(keep)),
			"fc.bias_mean":        tensor(randn(r, ffgOut, 1), ffgOut),
			"fc._bias_sd":         tensor(bsd, ffgOut),
		},
		Blobs: map[string][]byte{"fc.weight_keep": index},
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{ffgK},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: ffgK, Out: ffgOut, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: ffgPriorSD, MaxSD: ptr(ffgMaxSD), Pruned: true}}}}
	return spec, src
}

// prunedRef is the closed form: the weight matrix's mean and standard deviation (d_out × d_in,
// bias last), zero at every pruned weight.
func prunedRef(src runtime.MemorySource, keep []uint32) (mean, sd []float64) {
	dIn := ffgK + 1
	mean, sd = make([]float64, ffgOut*dIn), make([]float64, ffgOut*dIn)
	s := func(raw float32) float64 { return math.Min(math.Log1p(math.Exp(float64(raw))), ffgMaxSD) }
	for i, v := range keep {
		o, j := int(v)/ffgK, int(v)%ffgK
		mean[o*dIn+j] = float64(src.Tensors["fc.weight_mean_kept"].Data[i])
		sd[o*dIn+j] = s(src.Tensors["fc._weight_sd_kept"].Data[i])
	}
	for o := 0; o < ffgOut; o++ {
		mean[o*dIn+ffgK] = float64(src.Tensors["fc.bias_mean"].Data[o])
		sd[o*dIn+ffgK] = s(src.Tensors["fc._bias_sd"].Data[o])
	}
	return mean, sd
}

// TestPrunedFFGMoments: samples of a pruned layer against the closed form, by both strategies and
// both products (CSR and dense); pruned weights are exactly zero in every sample.
func TestPrunedFFGMoments(t *testing.T) {
	n := sampleCount(60_000)
	dIn := ffgK + 1
	for _, c := range prunedCases {
		for _, sparse := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sparse=%v", c.name, sparse), func(t *testing.T) {
				spec, src := prunedModel(t, c.keep)
				m := newModel(t, spec, src)
				if !runtime.SetPrunedSparse(m, "fc", sparse) {
					t.Fatal("fc is not a pruned FFG layer")
				}
				mean, sd := prunedRef(src, c.keep)
				cov := newMat(len(sd), len(sd))
				for i, s := range sd {
					cov.set(i, i, s*s)
				}
				out := predictAll(t, m, runtime.Options{Samples: n, Seed: 1, Strategy: runtime.Weight,
					MaxBatch: dIn, KeepSamples: true}, unitInputs(ffgK))
				ws := weightSamples(out, ffgOut, ffgK)
				for i, v := range ws {
					if sd[i%len(sd)] == 0 && v != 0 {
						t.Fatalf("pruned weight %d is %g in sample %d, want exactly 0", i%len(sd), v, i/len(sd))
					}
				}
				checkMoments(t, "vec(W)", sampleMoments(ws, ffgOut*dIn), mean, cov)

				r := rand.New(rand.NewPCG(2, 2))
				xs := randn(r, 3*ffgK, 1)
				out = predictLocal(t, m, n, 2, xs)
				checkFFGOutputs(t, out, xs, mean, sd)
			})
		}
	}
}

// TestPrunedFFGPathsAgree: the CSR and the dense products give the same samples (the same
// normals, drawn for the kept weights only), up to float32 summation order.
func TestPrunedFFGPathsAgree(t *testing.T) {
	spec, src := prunedModel(t, prunedCases[0].keep)
	xs := randn(rand.New(rand.NewPCG(4, 4)), 5*ffgK, 1)
	var got [2][]runtime.Prediction
	for i, sparse := range []bool{true, false} {
		m := newModel(t, spec, src)
		runtime.SetPrunedSparse(m, "fc", sparse)
		p, err := m.NewPredictor(runtime.Options{Samples: 16, Seed: 9, Strategy: runtime.Weight, MaxBatch: 5, KeepSamples: true})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = make([]runtime.Prediction, 5)
		if err := p.PredictBatch(xs, got[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range got[0] {
		for j, v := range got[0][i].Outputs {
			if w := got[1][i].Outputs[j]; !(math.Abs(float64(v-w)) <= 1e-5*(1+math.Abs(float64(w)))) {
				t.Fatalf("input %d output %d: CSR %g, dense %g", i, j, v, w)
			}
		}
	}
}

// TestPrunedFFGKL: the reported KL is that of the kept weights against N(0, prior_sd²) and the
// biases against N(0, prior_bias_sd²) (prior_sd when 0).
func TestPrunedFFGKL(t *testing.T) {
	for _, biasSD := range []float64{0, 0.35} {
		spec, src := prunedModel(t, prunedCases[1].keep)
		spec.Layers[0].Posterior.PriorBiasSD = biasSD
		m := newModel(t, spec, src)
		mean, sd := prunedRef(src, prunedCases[1].keep)
		want := 0.0
		for i := range mean {
			ps := ffgPriorSD
			if i%(ffgK+1) == ffgK && biasSD > 0 {
				ps = biasSD
			}
			if sd[i] > 0 {
				want += math.Log(ps/sd[i]) + (sd[i]*sd[i]+mean[i]*mean[i])/(2*ps*ps) - 0.5
			}
		}
		ls := m.Layers()
		if len(ls) != 1 || ls[0].Kind != runtime.KindFFG || !(math.Abs(ls[0].KL-want) <= 1e-6*math.Abs(want)) {
			t.Fatalf("prior_bias_sd %g: Layers() = %+v, want kind ffg and KL %.9g", biasSD, ls, want)
		}
	}
}

// writePruned writes the case's model file and returns its path.
func writePruned(t *testing.T, spec *runtime.Spec, src runtime.MemorySource) string {
	t.Helper()
	return writeModelFile(t, spec, src, nil)
}

// TestPrunedFFGRoundTrip: a pruned layer written to a model file loads with the same posterior
// (MeanWeight, Posterior), and the file holds the kept weights only.
func TestPrunedFFGRoundTrip(t *testing.T) {
	for _, c := range prunedCases {
		t.Run(c.name, func(t *testing.T) {
			spec, src := prunedModel(t, c.keep)
			m, err := runtime.Load(writePruned(t, spec, src))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			mean, sd := prunedRef(src, c.keep)
			w, rows, cols, err := m.MeanWeight("fc")
			if err != nil || rows != ffgOut || cols != ffgK+1 {
				t.Fatalf("MeanWeight: %d × %d, %v", rows, cols, err)
			}
			for i, v := range w {
				if float64(v) != mean[i] {
					t.Errorf("mean weight %d = %g, want %g", i, v, mean[i])
				}
			}
			post, err := m.Posterior(1000)
			if err != nil {
				t.Fatal(err)
			}
			// Posterior orders the parameters as PyTorch does: the weight, then the bias.
			for i := range mean {
				o, j := i/(ffgK+1), i%(ffgK+1)
				q := o*ffgK + j
				if j == ffgK {
					q = ffgOut*ffgK + o
				}
				if post.Mean[q] != mean[i] || !(math.Abs(post.Cov[q*len(mean)+q]-sd[i]*sd[i]) <= 1e-6*sd[i]*sd[i]) {
					t.Errorf("Posterior parameter %d: mean %g var %g, want %g and %g", q, post.Mean[q], post.Cov[q*len(mean)+q], mean[i], sd[i]*sd[i])
				}
			}
			if got, want := runtime.PrunedMemory(m, "fc"), 4*((ffgOut+1)+2*len(c.keep)+ffgOut); got != want {
				t.Errorf("the layer holds %d bytes, want %d (row pointers, kept columns and sds, bias sds)", got, want)
			}
		})
	}
}

// TestKeptIndexEncoding: the two encodings on hand-computed bytes, and the choice of the shorter.
func TestKeptIndexEncoding(t *testing.T) {
	header := func(enc byte, rows, cols, kept uint32) []byte {
		b := []byte{enc, 0, 0, 0}
		for _, v := range []uint32{rows, cols, kept} {
			b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		return b
	}
	tests := []struct {
		name       string
		rows, cols int
		idx        []uint32
		want       []byte
	}{
		// 20 weights: a 3-byte bitmap ties with 3 varints (gaps 0, 2, 15): the bitmap wins.
		{"bitmap on a tie", 2, 10, []uint32{0, 3, 19}, append(header(1, 2, 10, 3), 0x09, 0x00, 0x08)},
		// 1000 weights: a 125-byte bitmap against gaps 5 and 294 = 0x26 + 2·128 (3 bytes).
		{"delta", 1, 1000, []uint32{5, 300}, append(header(2, 1, 1000, 2), 0x05, 0xa6, 0x02)},
		{"none kept", 4, 4, nil, header(2, 4, 4, 0)},
		{"all kept", 1, 9, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8}, append(header(1, 1, 9, 9), 0xff, 0x01)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runtime.EncodeKeptIndex(tc.rows, tc.cols, tc.idx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("EncodeKeptIndex = % x, want % x", got, tc.want)
			}
			back, err := runtime.DecodeKeptIndex(got, tc.rows, tc.cols)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(back) != fmt.Sprint(append([]uint32{}, tc.idx...)) {
				t.Fatalf("DecodeKeptIndex = %v, want %v", back, tc.idx)
			}
		})
	}
	for _, bad := range [][]uint32{{3, 3}, {5, 2}, {20}} {
		if _, err := runtime.EncodeKeptIndex(2, 10, bad); err == nil {
			t.Errorf("EncodeKeptIndex(%v) accepted", bad)
		}
	}
}

// TestPrunedFFGHostile: malformed pruned layers are errors naming the blob or tensor.
func TestPrunedFFGHostile(t *testing.T) {
	keep := prunedCases[0].keep // delta-encoded: 12 weights, 3 kept
	idx := func(enc byte, kept uint32, payload ...byte) []byte {
		b := []byte{enc, 0, 0, 0, ffgOut, 0, 0, 0, ffgK, 0, 0, 0, byte(kept), 0, 0, 0}
		return append(b, payload...)
	}
	tests := []struct {
		name   string
		mutate func(src *runtime.MemorySource)
		want   []string
	}{
		{"index out of range", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3, 1, 4, 9) },
			[]string{`"fc.weight_keep"`, "outside"}},
		{"bitmap bit past the end", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(1, 3, 0xc2, 0x10) },
			[]string{`"fc.weight_keep"`, "past weight 12"}},
		{"truncated varints", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3, 1, 4) },
			[]string{`"fc.weight_keep"`, "truncated"}},
		{"truncated varint", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3, 1, 4, 0x80) },
			[]string{`"fc.weight_keep"`, "truncated"}},
		{"truncated header", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3)[:10] },
			[]string{`"fc.weight_keep"`, "header"}},
		{"overlong varint", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3, 0x81, 0x00, 4, 0) },
			[]string{`"fc.weight_keep"`, "overlong"}},
		{"trailing bytes", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(2, 3, 1, 4, 0, 7) },
			[]string{`"fc.weight_keep"`, "after the last"}},
		{"bitmap count mismatch", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(1, 4, 0xc2, 0x00) },
			[]string{`"fc.weight_keep"`, "marks 3 weights", "says 4"}},
		{"wrong shape in the header", func(s *runtime.MemorySource) {
			b := idx(2, 3, 1, 4, 0)
			b[8] = 5
			s.Blobs["fc.weight_keep"] = b
		}, []string{`"fc.weight_keep"`, "3 × 5", "3 × 4"}},
		{"unknown encoding", func(s *runtime.MemorySource) { s.Blobs["fc.weight_keep"] = idx(3, 3, 1, 4, 0) },
			[]string{`"fc.weight_keep"`, "encoding 3"}},
		{"mean count mismatch", func(s *runtime.MemorySource) {
			s.Tensors["fc.weight_mean_kept"] = tensor(make([]float32, 4), 4)
		}, []string{`"fc.weight_mean_kept"`, "shape [4], want [3]", "keeps 3"}},
		{"sd count mismatch", func(s *runtime.MemorySource) {
			s.Tensors["fc._weight_sd_kept"] = tensor(make([]float32, 2), 2)
		}, []string{`"fc._weight_sd_kept"`, "want [3]"}},
		{"NaN mean", func(s *runtime.MemorySource) {
			s.Tensors["fc.weight_mean_kept"].Data[1] = float32(math.NaN())
		}, []string{`"fc.weight_mean_kept"`, "element 1 is NaN"}},
		{"NaN sd", func(s *runtime.MemorySource) {
			s.Tensors["fc._weight_sd_kept"].Data[2] = float32(math.NaN())
		}, []string{`"fc._weight_sd_kept"`, "element 2 is NaN"}},
		{"missing index", func(s *runtime.MemorySource) { delete(s.Blobs, "fc.weight_keep") },
			[]string{`"fc.weight_keep"`, "no such tensor"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, src := prunedModel(t, keep)
			tc.mutate(&src)
			_, err := runtime.New(spec, src)
			testutil.ErrorContains(t, err, tc.want...)
		})
	}
	t.Run("no byte sections", func(t *testing.T) {
		spec, src := prunedModel(t, keep)
		_, err := runtime.New(spec, src.Tensors)
		if err == nil || !strings.Contains(err.Error(), `"fc.weight_keep"`) {
			t.Fatalf("error %v does not name the index blob", err)
		}
	})
	t.Run("pruned on another kind", func(t *testing.T) {
		spec, src := prunedModel(t, keep)
		spec.Layers[0].Posterior.Kind = runtime.KindInducing
		raw, _ := json.Marshal(spec)
		_, err := runtime.ParseSpec(raw)
		if err == nil || !strings.Contains(err.Error(), "pruned applies to ffg") {
			t.Fatalf("ParseSpec: %v", err)
		}
		_ = src
	})
	t.Run("truncated file", func(t *testing.T) {
		spec, src := prunedModel(t, keep)
		data, err := os.ReadFile(writePruned(t, spec, src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = runtime.LoadBytes(data[:len(data)-64])
		if err == nil {
			t.Fatal("a truncated file loaded")
		}
		var fe *format.Error
		if !errors.As(err, &fe) && !strings.Contains(err.Error(), "size") {
			t.Errorf("error %v", err)
		}
	})
}

// FuzzDecodeKeptIndex: any bytes either fail to decode or give strictly increasing indices inside
// the matrix, which re-encode to a blob decoding to the same indices.
func FuzzDecodeKeptIndex(f *testing.F) {
	for _, idx := range [][]uint32{nil, {0}, {1, 6, 7}, {0, 1, 2, 4, 5, 7, 11}} {
		b, _ := runtime.EncodeKeptIndex(3, 4, idx)
		f.Add(b, uint8(3), uint8(4))
	}
	f.Fuzz(func(t *testing.T, b []byte, rows, cols uint8) {
		idx, err := runtime.DecodeKeptIndex(b, int(rows), int(cols))
		if err != nil {
			return
		}
		for i, v := range idx {
			if int(v) >= int(rows)*int(cols) || (i > 0 && v <= idx[i-1]) {
				t.Fatalf("index %d = %d (previous %v) in a %d × %d matrix", i, v, idx[:i], rows, cols)
			}
		}
		re, err := runtime.EncodeKeptIndex(int(rows), int(cols), idx)
		if err != nil {
			t.Fatal(err)
		}
		back, err := runtime.DecodeKeptIndex(re, int(rows), int(cols))
		if err != nil || fmt.Sprint(back) != fmt.Sprint(idx) {
			t.Fatalf("re-encoded %v decodes to %v, %v", idx, back, err)
		}
	})
}
