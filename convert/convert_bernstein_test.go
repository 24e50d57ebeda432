package convert

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/quant"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// flowRaw returns raw flow parameters (a₁′, b₁, ϑ₀, δ₁ … δ_M, a₂′, b₂).
func flowRaw(a1, b1, th0 float32, delta []float32, a2, b2 float32) []float32 {
	return append(append([]float32{a1, b1, th0}, delta...), a2, b2)
}

func repeat(v float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// refKS is an independent estimate of the Kolmogorov distance between inverse-CDF samples from
// the table of the flow raw16 (G points, built with train/bfvi's flow) and the exact flow raw32:
// max |F̃(x) − p| at x = θ₃₂(Φ⁻¹(p)) over a dense grid of p. It is a lower bound of the distance.
func refKS(t *testing.T, m, g int, raw32, raw16 []float32) float64 {
	t.Helper()
	flow := func(raw []float32) *bfvi.Flow {
		p := make([]float64, len(raw))
		for i, v := range raw {
			p[i] = float64(v)
		}
		f, err := bfvi.NewFlow(m, p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f32, f16 := flow(raw32), flow(raw16)
	zOf := func(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
	table := make([]float64, g)
	lo, hi := f16.Support()
	table[0], table[g-1] = lo, hi
	for i := 1; i < g-1; i++ {
		table[i] = f16.Forward(zOf(float64(i) / float64(g-1)))
	}
	cdf := func(x float64) float64 {
		i := sort.SearchFloat64s(table, math.Nextafter(x, math.Inf(1))) - 1 // last table[i] ≤ x
		switch {
		case i < 0:
			return 0
		case i >= g-1:
			return 1
		}
		return (float64(i) + (x-table[i])/(table[i+1]-table[i])) / float64(g-1)
	}
	ks := 0.0
	const n = 20000
	for k := 1; k < n; k++ {
		p := float64(k) / n
		ks = max(ks, math.Abs(cdf(f32.Forward(zOf(p)))-p))
	}
	return ks
}

// TestBernsteinGate checks the fp16 gate on flows whose fate follows from fp16's precision:
// parameters fp16 represents exactly, and a wide flow, pass; a narrow flow far from zero (ϑ₀ ≈
// 100, where fp16's spacing is 1/16, and a range of about 0.005) fails, and so does a tensor
// with one value beyond fp16's range. An independent estimate of the distance (train/bfvi's
// flow) confirms each verdict: below the bound where the gate passes, above where it fails on
// distance.
func TestBernsteinGate(t *testing.T) {
	const m = 10
	r := rand.New(rand.NewPCG(4, 5))
	wide := func() []float32 {
		d := make([]float32, m)
		for i := range d {
			d[i] = float32(-1 + 0.7*r.NormFloat64())
		}
		return flowRaw(float32(0.3+0.2*r.NormFloat64()), float32(0.1*r.NormFloat64()), float32(-1.23456+0.1*r.NormFloat64()), d,
			float32(0.5413+0.1*r.NormFloat64()), float32(0.0123*r.NormFloat64()))
	}
	narrow := flowRaw(0.5413, 0.1, 100.3, repeat(-8, m), 0.5413, 0.0)
	tests := []struct {
		name     string
		flows    [][]float32
		g        int
		f16      bool
		reason   string // part of the reason when it fails
		distance bool   // fails on distance (the reference estimate exceeds the bound)
	}{
		{"exact in fp16", [][]float32{flowRaw(1, 0, -0.5, repeat(-1, m), 1, 0.25), flowRaw(0.5, 0.25, 2, repeat(-2, m), 0.75, -1)}, 0, true, "", false},
		{"wide flows", [][]float32{wide(), wide(), wide(), wide()}, 0, true, "", false},
		{"wide flows, G = 4097", [][]float32{wide(), wide()}, 4097, true, "", false},
		{"narrow flow far from zero", [][]float32{wide(), narrow}, 0, false, "Kolmogorov", true},
		{"beyond fp16's range", [][]float32{wide(), flowRaw(0.5, 0, 1, repeat(-1, m), 0.5, 70000)}, 0, false, "outside the fp16 range", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var data []float32
			for _, f := range tc.flows {
				data = append(data, f...)
			}
			gate, err := bernsteinGate("fc.bf_weight", data, m, tc.g)
			if err != nil {
				t.Fatal(err)
			}
			g := tc.g
			if g == 0 {
				g = 257
			}
			t.Logf("%+v", gate)
			if gate.F16 != tc.f16 || !strings.Contains(gate.Reason, tc.reason) || gate.Flows != len(tc.flows) {
				t.Fatalf("gate %+v, want f16 %v, reason containing %q, %d flows", gate, tc.f16, tc.reason, len(tc.flows))
			}
			if gate.Bound != 1/float64(g-1) || !gate.Monotone {
				t.Errorf("bound %g (want 1/%d), monotone %v", gate.Bound, g-1, gate.Monotone)
			}
			if tc.f16 && !(gate.KS <= gate.Bound) {
				t.Errorf("passed with KS %g above the bound %g", gate.KS, gate.Bound)
			}
			for i, f := range tc.flows {
				if math.Abs(float64(f[len(f)-1])) > quant.MaxF16 {
					continue
				}
				f16 := make([]float32, len(f))
				for j, v := range f {
					f16[j] = quant.Round(v)
				}
				ref := refKS(t, m, g, f, f16)
				t.Logf("flow %d: reference KS %.3g (bound %.3g)", i, ref, gate.Bound)
				if tc.f16 && !(ref <= gate.Bound) {
					t.Errorf("flow %d: the gate passed but the reference estimate %g exceeds the bound %g", i, ref, gate.Bound)
				}
				if tc.f16 && !(ref <= gate.KS+1e-9) {
					t.Errorf("flow %d: the gate's upper bound %g is below the reference estimate %g", i, gate.KS, ref)
				}
				if tc.distance && i == len(tc.flows)-1 && !(ref > gate.Bound) {
					t.Errorf("flow %d: the gate failed on distance but the reference estimate %g is within the bound", i, ref)
				}
			}
		})
	}
}

// TestBernsteinGateNearUnderflow: rounding to fp16 never makes a flow that is strictly increasing
// in float32 flat, even where softplus underflows (δ near −745, where fp16's spacing is 1/2):
// every float32 δ in [−746, −744] either gives a zero step already or keeps a positive one.
func TestBernsteinGateNearUnderflow(t *testing.T) {
	c, err := newBernsteinFlowCheck(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for d := float32(-744); d >= -746; d = math.Nextafter32(d, -1000) {
		if _, monotone, err := c.check(flowRaw(0.5, 0, 0, []float32{d}, 0.5, 0)); !monotone {
			t.Fatalf("δ = %g: not monotone after rounding (%v)", d, err)
		}
		n++
	}
	if n < 30000 {
		t.Fatalf("checked only %d values", n)
	}
}

// TestConvertBernsteinF16 converts a one-layer Bernstein model to f16 twice: with wide flows the
// gate stores bf_weight and bf_bias as fp16 (exactly the rounded values), with one narrow flow in
// bf_bias that tensor stays F32 and the report and the file's metadata say why.
func TestConvertBernsteinF16(t *testing.T) {
	const m, in, out = 6, 8, 8 // bf_bias: 88 values, above quant.SmallTensor
	np := m + 5
	r := rand.New(rand.NewPCG(1, 1))
	wide := func() []float32 {
		d := make([]float32, m)
		for i := range d {
			d[i] = float32(-2 + 0.5*r.NormFloat64())
		}
		return flowRaw(0.5, float32(0.1*r.NormFloat64()), float32(-0.5+0.2*r.NormFloat64()), d, 0.5, 0)
	}
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{in},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: in, Out: out, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, PriorSD: 1}}}}
	for _, tc := range []struct {
		name       string
		narrowBias bool
		want       map[string]string // tensor → value type
	}{
		{"wide", false, map[string]string{"fc.bf_weight": "F16", "fc.bf_bias": "F16"}},
		{"narrow bias", true, map[string]string{"fc.bf_weight": "F16", "fc.bf_bias": "F32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var wv, bv []float32
			for i := 0; i < out*in; i++ {
				wv = append(wv, wide()...)
			}
			for i := 0; i < out; i++ {
				f := wide()
				if tc.narrowBias && i == 2 {
					f = flowRaw(0.5, 0, 100.3, repeat(-8, m), 0.5, 0)
				}
				bv = append(bv, f...)
			}
			w := format.NewWriter()
			if _, err := w.AddTensor("fc.bf_weight", []int{out, in, np}, wv, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.AddTensor("fc.bf_bias", []int{out, np}, bv, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			modeltest.AddSpec(t, w, &spec)
			src := filepath.Join(dir, "bf.ebnn")
			modeltest.Save(t, w, src)
			dst := filepath.Join(dir, "bf16.ebnn")
			rep, err := Convert(Options{Checkpoint: src, Out: dst, DType: "f16"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Bernstein) != 2 {
				t.Fatalf("gate reports %+v", rep.Bernstein)
			}
			f, err := format.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, s := range f.Sections() {
				// Dense or sparse (b₂ = 0 makes some entries zero), the value type is the gate's.
				if want, ok := tc.want[s.Name]; ok && !strings.HasSuffix(s.Encoding.String(), want) {
					t.Errorf("%s stored as %s, want %s values", s.Name, s.Encoding, want)
				}
			}
			for name, orig := range map[string][]float32{"fc.bf_weight": wv, "fc.bf_bias": bv} {
				got := modeltest.Tensor(t, f, name).Data
				for i, v := range orig {
					want := v
					if tc.want[name] == "F16" {
						want = quant.Round(v)
					}
					if got[i] != want {
						t.Fatalf("%s[%d] = %g, want %g", name, i, got[i], want)
					}
				}
			}
			s2 := modeltest.Spec(t, f)
			var info Info
			if err := json.Unmarshal(s2.Info, &info); err != nil {
				t.Fatal(err)
			}
			kept := map[string]string{}
			for _, k := range info.Quant.F32 {
				kept[k.Name] = k.Reason
			}
			if tc.narrowBias {
				if !strings.Contains(kept["fc.bf_bias"], "Bernstein fp16 gate: flow 2") || len(info.Quant.Bernstein) != 2 {
					t.Errorf("metadata: kept %v, gate %+v", kept, info.Quant.Bernstein)
				}
			} else if len(kept) != 0 {
				t.Errorf("metadata keeps %v in float32", kept)
			}
			if _, err := runtime.Load(dst); err != nil {
				t.Fatal(err)
			}
		})
	}
}
