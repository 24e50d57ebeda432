package convert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// TestPlanFFGPriors: the plan of a mean-field Gaussian (ffg) MLP stores an optional prior buffer
// only where the config's prior is not the spec's default (a nonzero prior_mean), as the
// converter does for a trained checkpoint, and plans exactly the size of that checkpoint's
// converted file. Plan had filled the prior buffers with random stand-ins, which the converter
// never leaves out: about twice the real file (4316992 bytes instead of 2159296 here).
func TestPlanFFGPriors(t *testing.T) {
	const arch = "mlp:784-256-256-10"
	layers := []struct {
		name    string
		in, out int
	}{{"1", 784, 256}, {"3", 256, 256}, {"5", 256, 10}}
	var means []string // the prior mean buffers
	for _, l := range layers {
		means = append(means, l.name+".prior_weight_mean", l.name+".prior_bias_mean")
	}
	slices.Sort(means)
	dir := t.TempDir()
	for _, c := range []struct {
		name           string
		mean, wsd, bsd float64 // the config's prior (sds before the width scaling)
		want           []string
	}{
		// bench/configs/fmnist_ffgw.json's prior: every buffer holds the spec's default.
		{"default", 0, 8, 8, nil},
		{"bias sd", 0, 8, 2, nil},
		// A nonzero prior mean is not the runtime's default: the mean buffers are stored.
		{"prior mean", 0.5, 8, 8, means},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, c.name+".json")
			js := fmt.Sprintf(`{"inference": "ffg", "init_sd": 0.001, "max_sd": 0.1, "prior_mean": %g, "prior_weight_sd": %g, "prior_bias_sd": %g, "sqrt_width_scaling": true}`,
				c.mean, c.wsd, c.bsd)
			if err := os.WriteFile(cfg, []byte(js), 0o644); err != nil {
				t.Fatal(err)
			}
			planned := filepath.Join(dir, c.name+".planned.ebnn")
			rep, err := Plan(PlanOptions{Arch: arch, Config: cfg, Out: planned})
			if err != nil {
				t.Fatal(err)
			}
			if got := storedPriors(t, planned); !slices.Equal(got, c.want) {
				t.Errorf("planned file stores prior buffers %q, want %q", got, c.want)
			}

			// A bayesianize state_dict of that shape with the buffers bayesianize registers.
			r := rand.New(rand.NewPCG(3, 4))
			var ts []safetensors.Tensor
			add := func(name string, shape []int, f func() float64) {
				n := 1
				for _, d := range shape {
					n *= d
				}
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(f())
				}
				tn, err := safetensors.NewF32(name, shape, v)
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, tn)
			}
			for _, l := range layers {
				k := math.Sqrt(float64(l.in + 1)) // sqrt_width_scaling: fan-in with the bias
				w, b := []int{l.out, l.in}, []int{l.out}
				add(l.name+".weight_mean", w, func() float64 { return r.NormFloat64() / k })
				add(l.name+"._weight_sd", w, func() float64 { return -7 + 0.1*r.NormFloat64() })
				add(l.name+".bias_mean", b, func() float64 { return 0.01 * r.NormFloat64() })
				add(l.name+"._bias_sd", b, func() float64 { return -7 + 0.1*r.NormFloat64() })
				add(l.name+".prior_weight_mean", w, func() float64 { return c.mean })
				add(l.name+".prior_weight_sd", w, func() float64 { return c.wsd / k })
				add(l.name+".prior_bias_mean", b, func() float64 { return c.mean })
				add(l.name+".prior_bias_sd", b, func() float64 { return c.bsd / k })
			}
			sd := filepath.Join(dir, c.name+".safetensors")
			writeSafetensors(t, sd, ts)
			converted := filepath.Join(dir, c.name+".ebnn")
			if _, err := Convert(Options{Checkpoint: sd, Config: cfg, Arch: arch, Out: converted}); err != nil {
				t.Fatal(err)
			}
			if got := storedPriors(t, converted); !slices.Equal(got, c.want) {
				t.Errorf("converted file stores prior buffers %q, want %q", got, c.want)
			}
			st, err := os.Stat(converted)
			if err != nil {
				t.Fatal(err)
			}
			if rep.FileBytes != st.Size() {
				t.Errorf("planned %d bytes, the converted checkpoint has %d", rep.FileBytes, st.Size())
			}
		})
	}
}
