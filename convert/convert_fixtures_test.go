package convert

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
)

var fixtureDir = filepath.Join("..", "testdata", "bayesianize")

var fixtures = []string{"mlp_ffgu", "cnn_ensembleu", "cnn_noisy_ffgu"}

func fixtureOpts(fx, ext, out string) Options {
	d := filepath.Join(fixtureDir, fx)
	return Options{Checkpoint: filepath.Join(d, "state_dict"+ext), Config: filepath.Join(d, "inference_config.json"),
		Arch: filepath.Join(d, "model.txt"), Out: out}
}

// writeSafetensors writes ts to path as a safetensors file.
func writeSafetensors(t *testing.T, path string, ts []safetensors.Tensor) {
	t.Helper()
	if err := safetensors.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
}

// editedStateDict writes fixture fx's state_dict to dir/name.safetensors with tensor's values
// changed by edit (on a copy), and returns the path.
func editedStateDict(t *testing.T, fx, dir, name, tensor string, edit func([]float32)) string {
	t.Helper()
	var ts []safetensors.Tensor
	found := false
	for _, tn := range fixtureFile(t, fx, "state_dict").Tensors {
		if tn.Name == tensor {
			v, err := tn.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			v = append([]float32(nil), v...)
			edit(v)
			if tn, err = safetensors.NewF32(tn.Name, tn.Shape, v); err != nil {
				t.Fatal(err)
			}
			found = true
		}
		ts = append(ts, tn)
	}
	if !found {
		t.Fatalf("fixture %s has no tensor %q", fx, tensor)
	}
	p := filepath.Join(dir, name+".safetensors")
	writeSafetensors(t, p, ts)
	return p
}

// fixtureFile reads the safetensors file name (state_dict or reference) of fixture fx.
func fixtureFile(t testing.TB, fx, name string) *safetensors.File {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(fixtureDir, fx, name+".safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func refTensor(t testing.TB, fx, name string) ([]float64, []int) {
	t.Helper()
	tn, ok := fixtureFile(t, fx, "reference").Tensor(name)
	if !ok {
		t.Fatalf("reference has no %q", name)
	}
	v, err := tn.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v, tn.Shape
}

// TestFixturesConvert: every fixture converts from .pt and .safetensors, f32 and f16, with and
// without pruning and zstd; .pt and .safetensors give byte-identical files.
func TestFixturesConvert(t *testing.T) {
	dir := t.TempDir()
	for _, fx := range fixtures {
		for _, dtype := range []string{"f32", "f16"} {
			for _, pr := range []float64{0, 0.5} {
				for _, comp := range []string{"none", "zstd"} {
					name := fmt.Sprintf("%s/%s/prune%v/%s", fx, dtype, pr, comp)
					t.Run(name, func(t *testing.T) {
						var files [2][]byte
						for i, ext := range []string{".pt", ".safetensors"} {
							out := filepath.Join(dir, fmt.Sprintf("%s-%s-%v-%s%s.ebnn", fx, dtype, pr, comp, ext))
							o := fixtureOpts(fx, ext, out)
							o.DType, o.Prune, o.Compress = dtype, pr, comp
							rep, err := Convert(o)
							if err != nil {
								t.Fatal(err)
							}
							b, err := os.ReadFile(out)
							if err != nil {
								t.Fatal(err)
							}
							if int64(len(b)) != rep.FileBytes {
								t.Errorf("report says %d bytes, file has %d", rep.FileBytes, len(b))
							}
							files[i] = b
							m, err := runtime.Load(out)
							if err != nil {
								t.Fatal(err)
							}
							m.Close()
						}
						if !bytes.Equal(files[0], files[1]) {
							t.Errorf(".pt and .safetensors give different files (%d vs %d bytes)", len(files[0]), len(files[1]))
						}
					})
				}
			}
		}
	}
}

// TestFixturesParity: the converted f32 files' logits at the mean match bayesianize's within
// 1e-4; f16 files' predictive probabilities stay within 0.01 of the f32 files' (same seed).
func TestFixturesParity(t *testing.T) {
	dir := t.TempDir()
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			ref, _ := refTensor(t, fx, "logits_at_mean")
			inF, shape := refTensor(t, fx, "inputs")
			n := min(shape[0], 64)
			if testing.Short() {
				n = 16
			}
			x := make([]float32, n*784)
			for i := range x {
				x[i] = float32(inF[i])
			}
			load := func(dtype string) *runtime.Model {
				out := filepath.Join(dir, fx+dtype+".ebnn")
				o := fixtureOpts(fx, ".pt", out)
				o.DType = dtype
				if _, err := Convert(o); err != nil {
					t.Fatal(err)
				}
				m, err := runtime.Load(out)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			m32, m16 := load("f32"), load("f16")
			p, err := m32.NewPredictor(runtime.Options{Mean: true, KeepSamples: true, MaxBatch: 64})
			if err != nil {
				t.Fatal(err)
			}
			out := make([]runtime.Prediction, n)
			if err := p.PredictBatch(x, out); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := range out {
				if len(out[i].Outputs) != 10 {
					t.Fatalf("input %d: %d logits kept, want 10", i, len(out[i].Outputs))
				}
				for j, v := range out[i].Outputs {
					w := ref[i*10+j]
					worst = math.Max(worst, math.Abs(float64(v)-w)/math.Max(1, math.Abs(w)))
				}
			}
			t.Logf("f32: max |logit − bayesianize| (relative above 1) = %.3g", worst)
			if !(worst <= 1e-4) {
				t.Errorf("logits at mean differ by %.3g > 1e-4", worst)
			}
			K := 256
			if testing.Short() {
				K = 32
			}
			pa, err := predictProbs(m32, x, n, K, 11)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := predictProbs(m16, x, n, K, 11)
			if err != nil {
				t.Fatal(err)
			}
			d := 0.0
			for i := range pa {
				d = math.Max(d, math.Abs(float64(pa[i]-pb[i])))
			}
			t.Logf("f16 vs f32, %d samples, %d inputs: max |Δp| = %.3g", K, n, d)
			if !(d <= 0.01) {
				t.Errorf("f16 predictive probabilities differ from f32 by %.3g > 0.01", d)
			}
		})
	}
}
