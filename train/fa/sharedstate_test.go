package fa

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSharedState: SharedState holds what State holds, in the learner's own buffers (an update
// shows in them), while State's copies stay as they were; for VIFA, online EM (with averaging and
// re-centring), online SGA and SWAG.
func TestSharedState(t *testing.T) {
	const d, k = 9, 2
	rng := rand.New(rand.NewPCG(5, 6))
	q := randomQuad(rng, d)
	obs := func() []float64 {
		x := make([]float64, d)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return x
	}
	type learner struct {
		state, shared func() (State, error)
		update        func() error
	}
	v, err := NewVIFA(d, VIFAConfig{Rank: k, N: 50, PriorPrecision: 0.5, LRMean: 0.01, LRFactors: 0.01, LRLogVar: 0.01, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	em, err := NewOnlineEM(d, OnlineConfig{Rank: k, Warmup: 2, StepExponent: 0.6, AverageAfter: 3, Recenter: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sga, err := NewOnlineSGA(d, OnlineConfig{Rank: k, Warmup: 2, LR: 1e-3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSWAG(d, k)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]learner{
		"vifa": {v.State, v.SharedState, func() error { _, err := v.Step(q.grad); return err }},
		"em":   {em.State, em.SharedState, func() error { return em.Observe(obs()) }},
		"sga":  {sga.State, sga.SharedState, func() error { return sga.Observe(obs()) }},
		"swag": {sw.State, sw.SharedState, func() error { return sw.Observe(obs()) }},
	} {
		for range 6 {
			if err := l.update(); err != nil {
				t.Fatal(name, err)
			}
		}
		st, err := l.state()
		if err != nil {
			t.Fatal(name, err)
		}
		sh, err := l.shared()
		if err != nil {
			t.Fatal(name, err)
		}
		if !maps.Equal(st.Ints, sh.Ints) || !slices.Equal(slices.Sorted(maps.Keys(st.Floats)), slices.Sorted(maps.Keys(sh.Floats))) {
			t.Fatalf("%s: State has %v and buffers %v, SharedState %v and %v", name, st.Ints, slices.Sorted(maps.Keys(st.Floats)),
				sh.Ints, slices.Sorted(maps.Keys(sh.Floats)))
		}
		for n, b := range st.Floats {
			if !slices.Equal(b, sh.Floats[n]) {
				t.Fatalf("%s: buffer %q differs between State and SharedState", name, n)
			}
		}
		if err := l.update(); err != nil {
			t.Fatal(name, err)
		}
		moved, kept := false, true
		for n, b := range st.Floats {
			if !slices.Equal(b, sh.Floats[n]) {
				moved = true // the shared buffer followed the update
			}
		}
		again, _ := l.state()
		for n, b := range again.Floats {
			if !slices.Equal(b, sh.Floats[n]) && len(sh.Floats[n]) > 1 {
				kept = false
			}
		}
		if !moved || !kept {
			t.Errorf("%s: after an update the shared buffers changed: %v, and are the learner's: %v", name, moved, kept)
		}
	}
}
