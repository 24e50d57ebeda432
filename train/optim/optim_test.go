package optim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

func param(t *testing.T, name string, v ...float64) *autodiff.Param[float64] {
	t.Helper()
	p, err := autodiff.NewParam(name, v, len(v))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// quadGrad sets the gradient of f(x) = ½·a·x² (elementwise): ∇ = a·x.
func quadGrad(p *autodiff.Param[float64], a float64) {
	for i, x := range p.Value {
		p.Grad[i] = a * x
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Fatalf("%s = %.15g, want %.15g", what, got, want)
	}
}

// TestSGDHandComputed checks SGD on f = ½·2·x² from x₀ = 1 with lr 0.1 against steps worked out
// by hand.
func TestSGDHandComputed(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  SGDConfig
		wd   float64
		want []float64
	}{
		// x ← x − 0.1·2x = 0.8x.
		{"plain", SGDConfig{}, 0, []float64{0.8, 0.64, 0.512}},
		// g = 2x + 0.5x = 2.5x: x ← 0.75x.
		{"weightDecay", SGDConfig{}, 0.5, []float64{0.75, 0.5625, 0.421875}},
		// b₁ = 2 → x₁ = 0.8; g = 1.6, b = 3.4 → 0.46; g = 0.92, b = 3.98 → 0.062.
		{"momentum", SGDConfig{Momentum: 0.9}, 0, []float64{0.8, 0.46, 0.062}},
		// Nesterov: d₁ = 2 + 0.9·2 = 3.8 → 0.62; g = 1.24, b = 3.04, d = 3.976 → 0.2224.
		{"nesterov", SGDConfig{Momentum: 0.9, Nesterov: true}, 0, []float64{0.62, 0.2224}},
		// Dampening 0.5: b₁ = 2 → 0.8; g = 1.6, b = 1.8 + 0.8 = 2.6 → 0.54.
		{"dampening", SGDConfig{Momentum: 0.9, Dampening: 0.5}, 0, []float64{0.8, 0.54}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := param(t, "x", 1)
			opt, err := NewSGD([]Group[float64]{{Params: []*autodiff.Param[float64]{p}, LR: 0.1, WeightDecay: tc.wd}}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for k, w := range tc.want {
				quadGrad(p, 2)
				opt.Step()
				near(t, "x after step "+string(rune('1'+k)), p.Value[0], w, 1e-14)
			}
		})
	}
	if _, err := NewSGD([]Group[float64]{}, SGDConfig{Nesterov: true}); err == nil {
		t.Fatal("Nesterov without momentum accepted")
	}
}

// TestAdamHandComputed checks Adam on f = ½·2·x² from x₀ = 1 (lr 0.1, PyTorch defaults).
func TestAdamHandComputed(t *testing.T) {
	p := param(t, "x", 1)
	opt, err := NewAdam([]Group[float64]{{Params: []*autodiff.Param[float64]{p}, LR: 0.1}}, DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Step 1: m̂ = g, v̂ = g², so x₁ = x₀ − lr·g/(|g| + ε) = 1 − 0.1·2/(2 + 1e-8).
	quadGrad(p, 2)
	opt.Step()
	near(t, "x1", p.Value[0], 1-0.2/(2+1e-8), 1e-15)
	// Step 2: g = 2·x₁ ≈ 1.8; m = 0.9·0.2 + 0.1·g, v = 0.999·0.004 + 0.001·g².
	x1 := p.Value[0]
	g := 2 * x1
	m := 0.18 + 0.1*g
	v := 0.999*0.004 + 0.001*g*g
	want := x1 - 0.1/(1-0.81)*m/(math.Sqrt(v)/math.Sqrt(1-0.998001)+1e-8)
	quadGrad(p, 2)
	opt.Step()
	near(t, "x2", p.Value[0], want, 1e-15)
	// With g ≈ 1.8 exactly the hand numbers: m̂ = 0.36/0.19, v̂ = 0.007236/0.001999.
	near(t, "x2 (rounded hand value)", p.Value[0], 0.9-0.1*(0.36/0.19)/math.Sqrt(0.007236/0.001999), 1e-8)
	if opt.Steps() != 2 {
		t.Fatalf("Steps() = %d", opt.Steps())
	}
}

func TestAdamWeightDecay(t *testing.T) {
	// L2 (Adam): first step direction is sign(g + wd·x) with magnitude lr: x₁ = x₀ − lr·g'/(|g'|+ε).
	p := param(t, "x", 2)
	opt, _ := NewAdam([]Group[float64]{{Params: []*autodiff.Param[float64]{p}, LR: 0.01, WeightDecay: 0.5}}, DefaultAdamConfig())
	p.Grad[0] = -0.5 // g' = −0.5 + 0.5·2 = 0.5 > 0
	opt.Step()
	near(t, "Adam L2", p.Value[0], 2-0.01*0.5/(0.5+1e-8), 1e-15)
	// Decoupled (AdamW): x ← x·(1 − lr·wd), then the plain Adam step with g = −0.5.
	q := param(t, "x", 2)
	cfg := DefaultAdamConfig()
	cfg.Decoupled = true
	optW, _ := NewAdam([]Group[float64]{{Params: []*autodiff.Param[float64]{q}, LR: 0.01, WeightDecay: 0.5}}, cfg)
	q.Grad[0] = -0.5
	optW.Step()
	near(t, "AdamW", q.Value[0], 2*(1-0.005)+0.01*0.5/(0.5+1e-8), 1e-15)
}

func TestGroupsAndSchedule(t *testing.T) {
	a, b := param(t, "a", 1, 1), param(t, "b", 1)
	opt, err := NewSGD([]Group[float64]{
		{Params: []*autodiff.Param[float64]{a}, LR: 0.1},
		{Params: []*autodiff.Param[float64]{b}, LR: 0.01},
	}, SGDConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sched := MultiStepLR{Milestones: []int{2, 4}, Gamma: 0.1}
	for epoch, want := range []float64{1, 1, 0.1, 0.1, 0.01, 0.01} {
		near(t, "MultiStepLR factor", sched.Factor(epoch), want, 1e-17)
	}
	opt.SetLRFactor(sched.Factor(2))
	a.Grad[0], a.Grad[1], b.Grad[0] = 1, 2, 1
	opt.Step()
	near(t, "a0", a.Value[0], 1-0.01, 1e-16)
	near(t, "a1", a.Value[1], 1-0.02, 1e-16)
	near(t, "b", b.Value[0], 1-0.001, 1e-16)
	opt.ZeroGrad()
	if a.Grad[1] != 0 || b.Grad[0] != 0 {
		t.Fatal("ZeroGrad left a gradient")
	}
	if _, err := NewSGD([]Group[float64]{{Params: []*autodiff.Param[float64]{a}}, {Params: []*autodiff.Param[float64]{a}}}, SGDConfig{}); err == nil {
		t.Fatal("duplicate parameter names accepted")
	}
	if _, err := NewAdam([]Group[float64]{{LR: -1}}, DefaultAdamConfig()); err == nil {
		t.Fatal("negative learning rate accepted")
	}
}

func TestClipGradNorm(t *testing.T) {
	for _, tc := range []struct {
		max     float64
		clipped bool
	}{{6.5, true}, {13.5, false}, {0.1, true}} {
		a, b := param(t, "a", 0, 0), param(t, "b", 0)
		a.Grad[0], a.Grad[1], b.Grad[0] = 3, 4, 12 // global norm √(9+16+144) = 13
		norm, err := ClipGradNorm([]*autodiff.Param[float64]{a, b}, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "norm", norm, 13, 1e-15)
		c := 1.0
		if tc.clipped {
			c = tc.max / (13 + 1e-6)
		}
		near(t, "a0", a.Grad[0], 3*c, 1e-14)
		near(t, "a1", a.Grad[1], 4*c, 1e-14)
		near(t, "b0", b.Grad[0], 12*c, 1e-14)
	}
	n := param(t, "n", 0)
	n.Grad[0] = math.NaN()
	if _, err := ClipGradNorm([]*autodiff.Param[float64]{n}, 1); err == nil {
		t.Fatal("NaN gradient norm accepted")
	}
}

// TestStateRoundTrip checks that an optimizer restored from State continues exactly as the
// original.
func TestStateRoundTrip(t *testing.T) {
	for _, kind := range []string{"adam", "sgd"} {
		t.Run(kind, func(t *testing.T) {
			mk := func(p *autodiff.Param[float64]) Optimizer[float64] {
				g := []Group[float64]{{Params: []*autodiff.Param[float64]{p}, LR: 0.05, WeightDecay: 0.01}}
				if kind == "adam" {
					o, err := NewAdam(g, DefaultAdamConfig())
					if err != nil {
						t.Fatal(err)
					}
					return o
				}
				o, err := NewSGD(g, SGDConfig{Momentum: 0.9, Nesterov: true})
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			p := param(t, "w", 1, -2, 3)
			o := mk(p)
			for i := 0; i < 3; i++ {
				quadGrad(p, 1.5)
				o.Step()
			}
			st := o.State()
			q := param(t, "w", p.Value...)
			o2 := mk(q)
			if err := o2.LoadState(st); err != nil {
				t.Fatal(err)
			}
			if o2.Steps() != 3 {
				t.Fatalf("restored Steps() = %d", o2.Steps())
			}
			for i := 0; i < 2; i++ {
				quadGrad(p, 1.5)
				o.Step()
				quadGrad(q, 1.5)
				o2.Step()
			}
			for i := range p.Value {
				if p.Value[i] != q.Value[i] {
					t.Fatalf("element %d: original %v, restored %v", i, p.Value[i], q.Value[i])
				}
			}
			// Corrupt states are rejected.
			bad := o.State()
			for k := range bad.Buffers {
				bad.Buffers[k] = bad.Buffers[k][:1]
				break
			}
			if err := o2.LoadState(bad); err == nil {
				t.Fatal("short buffer accepted")
			}
			extra := o.State()
			extra.Buffers["exp_avg/other"] = []float64{1}
			if err := o2.LoadState(extra); err == nil {
				t.Fatal("unexpected buffer accepted")
			}
		})
	}
}

// TestLoadStateRefusesOutOfDomain: a restored state whose values are finite but outside their
// domain — a step count near 2^63 (Adam's step++ would wrap to a negative count and its bias
// correction would be NaN), a negative second moment (√v is NaN), an infinite buffer — is refused
// with an error naming the buffer or the step, and leaves the optimizer as it was.
func TestLoadStateRefusesOutOfDomain(t *testing.T) {
	mk := func() (*Adam[float64], *autodiff.Param[float64]) {
		p := param(t, "w", 1, -2, 3)
		o, err := NewAdam([]Group[float64]{{Params: []*autodiff.Param[float64]{p}, LR: 0.05}}, DefaultAdamConfig())
		if err != nil {
			t.Fatal(err)
		}
		quadGrad(p, 1)
		o.Step()
		return o, p
	}
	for _, tc := range []struct {
		name string
		edit func(*State[float64])
		want string
	}{
		{"step 2^63-1", func(s *State[float64]) { s.Step = math.MaxInt64 }, "step 9223372036854775807"},
		{"step 2^53+1", func(s *State[float64]) { s.Step = MaxStep + 1 }, "outside [0, 2^53]"},
		{"negative step", func(s *State[float64]) { s.Step = -1 }, "outside [0, 2^53]"},
		{"negative second moment", func(s *State[float64]) { s.Buffers["exp_avg_sq/w"][1] = -1 }, `"exp_avg_sq/w": value 1 is -1`},
		{"infinite first moment", func(s *State[float64]) { s.Buffers["exp_avg/w"][2] = math.Inf(1) }, `"exp_avg/w": value 2 is +Inf`},
		{"NaN second moment", func(s *State[float64]) { s.Buffers["exp_avg_sq/w"][0] = math.NaN() }, `"exp_avg_sq/w": value 0 is NaN`},
		{"first moment of 1e30", func(s *State[float64]) { s.Buffers["exp_avg/w"][1] = 1e30 }, `"exp_avg/w" and "exp_avg_sq/w": value 1 is 1e+30 beside`},
		{"first moment beside a zero second moment", func(s *State[float64]) {
			s.Buffers["exp_avg/w"][2], s.Buffers["exp_avg_sq/w"][2] = -1e-3, 0
		}, `value 2 is -0.001 beside 0; a first moment m of Adam (β₁ 0.9, β₂ 0.999) has m² ≤ 52.86·v`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := mk()
			st := o.State()
			tc.edit(&st)
			o2, p2 := mk()
			before := slices.Clone(p2.Value)
			if err := o2.LoadState(st); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadState = %v, want an error containing %q", err, tc.want)
			}
			if o2.Steps() != 1 {
				t.Fatalf("a refused state changed the step count to %d", o2.Steps())
			}
			quadGrad(p2, 1)
			o2.Step()
			for i, v := range p2.Value {
				if math.IsNaN(v) || v == before[i] {
					t.Fatalf("after a refused state, Step gives value %d = %v (was %v)", i, v, before[i])
				}
			}
		})
	}
	// The largest step count allowed still gives finite updates.
	o, p := mk()
	st := o.State()
	st.Step = MaxStep
	if err := o.LoadState(st); err != nil {
		t.Fatal(err)
	}
	quadGrad(p, 1)
	o.Step()
	for i, v := range p.Value {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("step 2^53+1: value %d is %v", i, v)
		}
	}
}

// TestTrainsFloat32MLP trains a small float32 MLP on a separable problem end to end (tape,
// kernels.Gemm, Adam, clipping, schedule) and checks that it fits.
func TestTrainsFloat32MLP(t *testing.T) {
	// Four 2-D clusters (XOR layout), 2 classes.
	var xs []float32
	var ys []int
	for i := 0; i < 64; i++ {
		cx, cy := float32(i%2), float32((i/2)%2)
		jx := float32((i*37)%11)/55 - 0.1
		jy := float32((i*53)%13)/65 - 0.1
		xs = append(xs, 2*cx-1+jx, 2*cy-1+jy)
		ys = append(ys, (i%2)^((i/2)%2))
	}
	init := func(name string, n int, shape ...int) *autodiff.Param[float32] {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(i*7+n))) * 0.5
		}
		p, err := autodiff.NewParam(name, v, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w1, b1 := init("w1", 16*2, 16, 2), init("b1", 16, 16)
	w2, b2 := init("w2", 2*16, 2, 16), init("b2", 2, 2)
	groups := []Group[float32]{{Params: []*autodiff.Param[float32]{w1, b1, w2, b2}, LR: 0.05}}
	opt, err := NewAdam(groups, DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	sched := MultiStepLR{Milestones: []int{150}, Gamma: 0.3}
	tape := autodiff.NewTape[float32]()
	var loss float32
	for step := 0; step < 200; step++ {
		opt.SetLRFactor(sched.Factor(step))
		opt.ZeroGrad()
		tape.Reset()
		h := tape.Tanh(tape.Linear(tape.Const(xs, 64, 2), tape.Param(w1), tape.Param(b1)))
		l := tape.CrossEntropy(tape.Linear(h, tape.Param(w2), tape.Param(b2)), ys)
		if err := tape.Backward(l); err != nil {
			t.Fatal(err)
		}
		if _, err := ClipGradNorm(Params(groups), 5); err != nil {
			t.Fatal(err)
		}
		opt.Step()
		loss = l.Item()
	}
	if !(loss <= 0.05) {
		t.Fatalf("final training loss %v, want < 0.05", loss)
	}
}

// TestCosineLR: optax's cosine_decay_schedule at its landmarks and beyond its end.
func TestCosineLR(t *testing.T) {
	for _, c := range []struct {
		s    CosineLR
		step int64
		want float64
	}{
		{CosineLR{Total: 100, Alpha: 0}, 0, 1},
		{CosineLR{Total: 100, Alpha: 0}, 50, 0.5},
		{CosineLR{Total: 100, Alpha: 0}, 100, 0},
		{CosineLR{Total: 100, Alpha: 0}, 25, (1 + math.Sqrt2/2) / 2},
		{CosineLR{Total: 100, Alpha: 0.005}, 100, 0.005},
		{CosineLR{Total: 100, Alpha: 0.005}, 5000, 0.005},
		{CosineLR{Total: 100, Alpha: 0.2}, 50, 0.6},
		{CosineLR{Total: 100, Alpha: 0.2}, -3, 1},
		{CosineLR{Total: 0, Alpha: 0.2}, 7, 1},
	} {
		if got := c.s.Factor(c.step); !(math.Abs(got-c.want) <= 1e-12) {
			t.Errorf("%+v.Factor(%d) = %.15g, want %.15g", c.s, c.step, got, c.want)
		}
	}
}

// TestClipGradValue: every gradient clamped to [−limit, limit]; a non-finite gradient is an
// error naming its parameter that leaves every gradient as it was; the limit must be positive.
func TestClipGradValue(t *testing.T) {
	a, _ := autodiff.NewParam("a", []float32{0, 0, 0}, 3)
	b, _ := autodiff.NewParam("b", []float32{0, 0}, 2)
	copy(a.Grad, []float32{-3, 0.5, 2})
	copy(b.Grad, []float32{1, -0.25})
	if err := ClipGradValue([]*autodiff.Param[float32]{a, b}, 1); err != nil {
		t.Fatal(err)
	}
	if want := []float32{-1, 0.5, 1}; !slices.Equal(a.Grad, want) {
		t.Errorf("a: %v, want %v", a.Grad, want)
	}
	if want := []float32{1, -0.25}; !slices.Equal(b.Grad, want) {
		t.Errorf("b: %v, want %v", b.Grad, want)
	}
	copy(a.Grad, []float32{-3, 0.5, 2})
	b.Grad[1] = float32(math.NaN())
	err := ClipGradValue([]*autodiff.Param[float32]{a, b}, 1)
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("NaN gradient: error %v, want one naming parameter \"b\"", err)
	}
	if want := []float32{-3, 0.5, 2}; !slices.Equal(a.Grad, want) {
		t.Errorf("after the error a's gradients are %v, want %v unchanged", a.Grad, want)
	}
	for _, limit := range []float64{0, -1, math.NaN()} {
		if err := ClipGradValue([]*autodiff.Param[float32]{a}, limit); err == nil {
			t.Errorf("limit %v: no error", limit)
		}
	}
}

// TestAdamMomentBound: the state of Adam after any gradients passes LoadState's bound m² ≤ ρ·v —
// constant, alternating, geometrically growing and shrinking gradients (the bound's tight case
// grows the gradient by β₂/β₁ a step), tiny ones whose second moment underflows in float32 —
// in float32 as the trainer keeps it; a state a little beyond the bound does not.
func TestAdamMomentBound(t *testing.T) {
	rho := (0.1 * 0.1) / (0.001 * (1 - 0.81/0.999))
	grow := 0.999 / 0.9 // Cauchy–Schwarz is tight for g_{t−k} ∝ (β₁/β₂)ᵏ
	for _, tc := range []struct {
		name  string
		steps int
		g     func(k int) float32
	}{
		{"constant", 50, func(int) float32 { return 3 }},
		{"alternating", 50, func(k int) float32 { return float32(1 - 2*(k%2)) }},
		{"tight growth", 60, func(k int) float32 { return float32(1e-6 * math.Pow(grow, float64(k))) }},
		{"fast growth", 40, func(k int) float32 { return float32(1e-6 * math.Pow(2, float64(k))) }},
		{"spike after zeros", 30, func(k int) float32 { return float32(map[bool]float64{true: 1e6, false: 0}[k == 29]) }},
		{"shrinking", 60, func(k int) float32 { return float32(math.Pow(0.5, float64(k))) }},
		{"underflowing", 10, func(int) float32 { return 1e-23 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := autodiff.NewParam("w", []float32{0.5}, 1)
			if err != nil {
				t.Fatal(err)
			}
			o, err := NewAdam([]Group[float32]{{Params: []*autodiff.Param[float32]{p}, LR: 1e-3}}, DefaultAdamConfig())
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for k := range tc.steps {
				p.Grad[0] = tc.g(k)
				o.Step()
				st := o.State()
				if err := o.LoadState(st); err != nil {
					t.Fatalf("step %d (m %v, v %v): %v", k+1, st.Buffers["exp_avg/w"][0], st.Buffers["exp_avg_sq/w"][0], err)
				}
				if m, v := float64(st.Buffers["exp_avg/w"][0]), float64(st.Buffers["exp_avg_sq/w"][0]); v > 0 {
					worst = max(worst, m*m/(rho*v))
				}
			}
			t.Logf("largest m²/(ρv): %.4f", worst)
			st := o.State()
			v := float64(st.Buffers["exp_avg_sq/w"][0])
			if v == 0 {
				return
			}
			st.Buffers["exp_avg/w"][0] = float32(1.02 * math.Sqrt(rho*v))
			if err := o.LoadState(st); err == nil {
				t.Errorf("a first moment 2%% beyond the bound (v %v) was accepted", v)
			}
		})
	}
}
