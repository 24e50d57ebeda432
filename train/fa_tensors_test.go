package train

import (
	"context"
	"math"
	"testing"
)

// TestFATensorsMatchModel: tensors (the checkpoint's and the model's fa.mean, fa.factors and
// fa.psi, converted from the learners' own buffers) are model()'s posterior in float32, bit for
// bit, at every step: vifa with and without its tail average, and fa_em, fa_sga and swag before
// their first iterate, in their warm-up and after it.
func TestFATensorsMatchModel(t *testing.T) {
	for _, tc := range []struct {
		name, posterior string
		set             func(*Config)
	}{
		{"vifa", "vifa", nil},
		{"vifa averaged", "vifa", func(c *Config) { c.FAAverageEpochs = 2 }},
		{"fa_em", "fa_em", nil},
		{"fa_sga", "fa_sga", nil},
		{"swag", "swag", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := faConfig(t, tc.posterior)
			c.Epochs, c.FAStartEpoch = 4, 1
			if tc.set != nil {
				tc.set(&c)
			}
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			r := tr.fa
			checks := 0
			check := func() {
				got, want := r.tensors(), map[string][]float32{}
				want["fa.mean"], want["fa.factors"], want["fa.psi"] = r.model().Float32()
				for name, w := range want {
					g := got[name].Data
					if len(g) != len(w) {
						t.Fatalf("step %d: %s has %d values, model() %d", tr.Step, name, len(g), len(w))
					}
					for i := range w {
						if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
							t.Fatalf("step %d: %s[%d] = %v, model() gives %v", tr.Step, name, i, g[i], w[i])
						}
					}
				}
				checks++
			}
			check()
			if err := tr.Run(context.Background(), Hooks{Step: func(StepInfo) { check() }}); err != nil {
				t.Fatal(err)
			}
			if r.vifa == nil && r.online.Count() <= r.warmup {
				t.Fatalf("the online fit saw %d iterates, not past its warm-up of %d", r.online.Count(), r.warmup)
			}
			if tc.set != nil && r.avg == nil {
				t.Fatal("no tail average")
			}
			t.Logf("%d steps checked", checks)
		})
	}
}
