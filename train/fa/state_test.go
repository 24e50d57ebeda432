package fa

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStateResume checks that a learner restored from State continues exactly as the
// uninterrupted one: VIFA (with its Adam moments and random number generator) and online EM / SGA.
func TestStateResume(t *testing.T) {
	const d, k = 7, 2
	rng := rand.New(rand.NewPCG(3, 4))
	q := randomQuad(rng, d)
	cfg := VIFAConfig{Rank: k, N: 50, PriorPrecision: 0.5, MCSamples: 2, LRMean: 0.01, LRFactors: 0.01,
		LRLogVar: 0.01, Clip: 10, Seed: 9}
	a, err := NewVIFA(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	step := func(v *VIFA, n int) {
		for i := 0; i < n; i++ {
			if _, err := v.Step(q.grad); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(a, 5)
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewVIFA(d, VIFAConfig{Rank: k, N: 50, PriorPrecision: 0.5, MCSamples: 2, LRMean: 0.01,
		LRFactors: 0.01, LRLogVar: 0.01, Clip: 10, Seed: 1234})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.LoadState(st); err != nil {
		t.Fatal(err)
	}
	step(a, 5)
	step(b, 5)
	pa, pb := a.Posterior(), b.Posterior()
	for i := range pa.F {
		if pa.F[i] != pb.F[i] {
			t.Fatalf("vifa F[%d]: uninterrupted %v, resumed %v", i, pa.F[i], pb.F[i])
		}
	}
	for i := range pa.Mean {
		if pa.Mean[i] != pb.Mean[i] || pa.Psi[i] != pb.Psi[i] {
			t.Fatalf("vifa c/ψ[%d]: uninterrupted %v/%v, resumed %v/%v", i, pa.Mean[i], pa.Psi[i], pb.Mean[i], pb.Psi[i])
		}
	}
	if a.Steps() != b.Steps() {
		t.Fatalf("steps %d vs %d", a.Steps(), b.Steps())
	}

	for _, kind := range []struct {
		name string
		em   bool
		cfg  OnlineConfig
	}{
		{"em", true, OnlineConfig{Rank: k, Warmup: 3}},
		// Averaging starts before the checkpoint, so the averages and the re-centring buffers
		// must travel with the state.
		{"em averaged re-centred", true, OnlineConfig{Rank: k, Warmup: 3, StepExponent: 0.7, StepDelay: 4,
			AverageAfter: 6, Recenter: true}},
		{"sga", false, OnlineConfig{Rank: k, Warmup: 3, LR: 0.01}},
	} {
		em := kind.em
		mk := func(seed uint64) *Online {
			c := kind.cfg
			c.Seed = seed
			var o *Online
			if em {
				o, err = NewOnlineEM(d, c)
			} else {
				o, err = NewOnlineSGA(d, c)
			}
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		obs := make([][]float64, 20)
		for i := range obs {
			obs[i] = make([]float64, d)
			for j := range obs[i] {
				obs[i][j] = rng.NormFloat64() * float64(j+1)
			}
		}
		x, y := mk(1), mk(2)
		for _, o := range obs[:10] {
			if err := x.Observe(o); err != nil {
				t.Fatal(err)
			}
		}
		s, err := x.State()
		if err != nil {
			t.Fatal(err)
		}
		if err := y.LoadState(s); err != nil {
			t.Fatal(err)
		}
		for _, o := range obs[10:] {
			if err := x.Observe(o); err != nil {
				t.Fatal(err)
			}
			if err := y.Observe(o); err != nil {
				t.Fatal(err)
			}
		}
		mx, my := x.Model(), y.Model()
		for i := range mx.F {
			if mx.F[i] != my.F[i] {
				t.Fatalf("%s F[%d]: uninterrupted %v, resumed %v", kind.name, i, mx.F[i], my.F[i])
			}
		}
		for i := range mx.Psi {
			if mx.Psi[i] != my.Psi[i] || mx.Mean[i] != my.Mean[i] {
				t.Fatalf("%s ψ/c[%d] differ", kind.name, i)
			}
		}
		// A state of the other kind is refused.
		other := mk(3)
		other.em = !em
		if err := other.LoadState(s); err == nil {
			t.Fatalf("%s: state of the other kind accepted", kind.name)
		}
	}
}

// TestOnlineStateAveragingErrors: a state without the averaging buffers the learner needs, or with
// an impossible averaging weight, is refused with a message saying so.
func TestOnlineStateAveragingErrors(t *testing.T) {
	plain, err := NewOnlineEM(4, OnlineConfig{Rank: 1, StepExponent: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := NewOnlineEM(4, OnlineConfig{Rank: 1, StepExponent: 0.7, AverageAfter: 2, Recenter: true})
	if err != nil {
		t.Fatal(err)
	}
	obs := [][]float64{{1, 2, 3, 4}, {0, 1, 0, 1}, {2, 0, 1, 3}, {1, 1, 2, 0}}
	for _, o := range obs {
		if err := plain.Observe(o); err != nil {
			t.Fatal(err)
		}
		if err := rec.Observe(o); err != nil {
			t.Fatal(err)
		}
	}
	s, err := plain.State()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LoadState(s); err == nil || !strings.Contains(err.Error(), "without the averaging or re-centring") {
		t.Errorf("state without averages: %v", err)
	}
	good, err := rec.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []float64{-1, 5} {
		good.Floats["avg_weight"] = []float64{w}
		if err := rec.LoadState(good); err == nil || !strings.Contains(err.Error(), "averaging weight") {
			t.Errorf("averaging weight %g: %v", w, err)
		}
	}
	if rec.Count() != len(obs) {
		t.Errorf("a refused state changed the learner (count %d)", rec.Count())
	}
}

// TestStateErrors checks that malformed states are refused and leave the learner unchanged.
func TestStateErrors(t *testing.T) {
	v, err := NewVIFA(3, VIFAConfig{Rank: 1, N: 10, PriorPrecision: 1, LRMean: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	good, err := v.State()
	if err != nil {
		t.Fatal(err)
	}
	before := v.Posterior()
	cases := map[string]func(s State){
		"rank":      func(s State) { s.Ints["rank"] = 2 },
		"short c":   func(s State) { s.Floats["c"] = []float64{1} },
		"nan f":     func(s State) { s.Floats["f"] = []float64{0, 0, nanF()} },
		"no rng":    func(s State) { delete(s.Bytes, "rng") },
		"neg steps": func(s State) { s.Ints["steps"] = -1 },
		"no adam":   func(s State) { delete(s.Floats, "adam_m_f") },
	}
	for name, edit := range cases {
		s := State{Ints: map[string]int64{}, Floats: map[string][]float64{}, Bytes: map[string][]byte{}}
		for k, x := range good.Ints {
			s.Ints[k] = x
		}
		for k, x := range good.Floats {
			s.Floats[k] = clone(x)
		}
		for k, x := range good.Bytes {
			s.Bytes[k] = x
		}
		edit(s)
		if err := v.LoadState(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
		after := v.Posterior()
		for i := range before.Mean {
			if before.Mean[i] != after.Mean[i] || before.Psi[i] != after.Psi[i] {
				t.Fatalf("%s: the learner changed", name)
			}
		}
	}
}

func nanF() float64 { z := 0.0; return z / z }
