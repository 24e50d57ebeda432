package convert

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// snrLayers are the FFG layers of the test model: name, in, out.
var snrLayers = []struct {
	name    string
	in, out int
}{{"0", 6, 5}, {"2", 5, 3}}

const snrMaxSD = 0.4

// writeFFGModel writes a dense FFG-W model file (two Linear layers around a ReLU) with random
// means and raw standard deviations and returns its path and tensors.
func writeFFGModel(t *testing.T) (string, map[string][]float32) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	ts := map[string][]float32{}
	w := format.NewWriter()
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{6}}
	for i, l := range snrLayers {
		if i > 0 {
			spec.Layers = append(spec.Layers, runtime.LayerSpec{Name: "1", Op: runtime.OpReLU})
		}
		spec.Layers = append(spec.Layers, runtime.LayerSpec{Name: l.name, Op: runtime.OpLinear, In: l.in, Out: l.out, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1, MaxSD: ptrF(snrMaxSD)}})
		for _, f := range []struct {
			field string
			n     int
			shape []int
			shift float64
			prior bool
		}{{"weight_mean", l.in * l.out, []int{l.out, l.in}, 0, false}, {"_weight_sd", l.in * l.out, []int{l.out, l.in}, -1.5, false},
			{"bias_mean", l.out, []int{l.out}, 0, false}, {"_bias_sd", l.out, []int{l.out}, -1.5, false},
			{"prior_weight_mean", l.in * l.out, []int{l.out, l.in}, 0, true}, {"prior_weight_sd", l.in * l.out, []int{l.out, l.in}, 1, true},
			{"prior_bias_mean", l.out, []int{l.out}, 0, true}, {"prior_bias_sd", l.out, []int{l.out}, 1, true}} {
			v := make([]float32, f.n)
			for j := range v {
				if f.prior {
					v[j] = float32(f.shift)
				} else {
					v[j] = float32(r.NormFloat64() + f.shift)
				}
			}
			name := l.name + "." + f.field
			ts[name] = v
			if _, err := w.AddTensor(name, f.shape, v, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	modeltest.AddSpec(t, w, spec)
	path := filepath.Join(t.TempDir(), "ffgw.ebnn")
	modeltest.Save(t, w, path)
	return path, ts
}

func ptrF(v float64) *float64 { return &v }

// TestConvertSNRKeep: --snr-keep keeps the weights of largest |μ|/σ over both layers (computed
// here from the raw tensors), stores only those, and the loaded model has exactly zero mean and
// variance elsewhere; converting the pruned file again is refused.
func TestConvertSNRKeep(t *testing.T) {
	src, ts := writeFFGModel(t)
	type w struct {
		layer string
		i     int
		snr   float64
	}
	var all []w
	for _, l := range snrLayers {
		for i, mu := range ts[l.name+".weight_mean"] {
			s := math.Min(math.Log1p(math.Exp(float64(ts[l.name+"._weight_sd"][i]))), snrMaxSD)
			all = append(all, w{l.name, i, math.Abs(float64(mu)) / s})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].snr > all[j].snr })
	const keep = 0.25
	k := int(math.Floor(keep*float64(len(all)) + 0.5)) // 45 weights: 11
	kept := map[string]map[int]bool{"0": {}, "2": {}}
	for _, e := range all[:k] {
		kept[e.layer][e.i] = true
	}
	out := filepath.Join(t.TempDir(), "pruned.ebnn")
	rep, err := Convert(Options{Checkpoint: src, Out: out, SNRKeep: keep})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PruneSNR == nil || rep.PruneSNR.Kept != k || rep.PruneSNR.Weights != len(all) {
		t.Fatalf("report %+v, want %d of %d kept", rep.PruneSNR, k, len(all))
	}
	if want := int64(2*k + 2*(5+3)); rep.Parameters != want {
		t.Errorf("parameters %d, want %d (kept means and sds, biases)", rep.Parameters, want)
	}
	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(f.Tensors(), " ")
	f.Close()
	if strings.Contains(names, "0.weight_mean ") || !strings.Contains(names, "0.weight_mean_kept") {
		t.Errorf("tensors %s: want the kept weights only", names)
	}
	in, err := Inspect(out, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Parameters != rep.Parameters || len(in.Layers) != 2 || in.Layers[0].Kind != runtime.KindFFG {
		t.Errorf("Inspect: %d parameters, layers %+v; want %d", in.Parameters, in.Layers, rep.Parameters)
	}
	m, err := runtime.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	post, err := m.Posterior(1000)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, l := range snrLayers {
		for i, mu := range ts[l.name+".weight_mean"] {
			wantMu, wantVar := 0.0, 0.0
			if kept[l.name][i] {
				s := math.Min(math.Log1p(math.Exp(float64(ts[l.name+"._weight_sd"][i]))), snrMaxSD)
				wantMu, wantVar = float64(mu), s*s
			}
			q := off + i
			if post.Mean[q] != wantMu || !(math.Abs(post.Cov[q*post.Dim+q]-wantVar) <= 1e-6*wantVar) {
				t.Errorf("layer %s weight %d: mean %g var %g, want %g and %g", l.name, i, post.Mean[q], post.Cov[q*post.Dim+q], wantMu, wantVar)
			}
		}
		off += l.in*l.out + l.out
	}
	_, err = Convert(Options{Checkpoint: out, Out: filepath.Join(t.TempDir(), "again.ebnn"), SNRKeep: keep})
	if err == nil || !strings.Contains(err.Error(), `layer "0" is a pruned FFG layer`) {
		t.Errorf("re-converting the pruned file: %v", err)
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Convert(Options{Checkpoint: src, Out: filepath.Join(t.TempDir(), "bad.ebnn"), SNRKeep: bad}); err == nil {
			t.Errorf("SNRKeep %v accepted", bad)
		}
	}
	// A fraction that keeps no weight at all (45 weights × 0.01 rounds to 0): a model that
	// ignores its input is refused, with the smallest fraction that keeps one.
	if _, err := Convert(Options{Checkpoint: src, Out: filepath.Join(t.TempDir(), "none.ebnn"), SNRKeep: 0.01}); err == nil || !strings.Contains(err.Error(), "keeps none of the 45 FFG weights") {
		t.Errorf("SNRKeep 0.01 of 45 weights: %v, want a refusal", err)
	} else if !strings.Contains(err.Error(), "the smallest fraction that keeps one is 0.0112)") {
		t.Errorf("SNRKeep 0.01 of 45 weights: %v, want 0.0112 (0.5/45 rounded up) suggested", err)
	}
	// The suggested fraction works.
	if _, err := Convert(Options{Checkpoint: src, Out: filepath.Join(t.TempDir(), "one.ebnn"), SNRKeep: 0.0112}); err != nil {
		t.Errorf("SNRKeep 0.0112, the suggested fraction: %v", err)
	}
}
