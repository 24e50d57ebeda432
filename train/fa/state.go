package fa

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// State is the complete internal state of a learner (VIFA or Online): integer counters, float64
// buffers and opaque byte strings (the random number generator), each by name. It lets a trainer
// checkpoint a learner and continue exactly where it stopped.
type State struct {
	Ints   map[string]int64
	Floats map[string][]float64
	Bytes  map[string][]byte
}

func newState() State {
	return State{Ints: map[string]int64{}, Floats: map[string][]float64{}, Bytes: map[string][]byte{}}
}

// load copies the buffer name of s into dst, which must have the same length.
func (s State) load(name string, dst []float64) error {
	v, ok := s.Floats[name]
	if !ok {
		return fmt.Errorf("fa: state: buffer %q is missing", name)
	}
	if len(v) != len(dst) {
		return fmt.Errorf("fa: state: buffer %q has %d values, want %d", name, len(v), len(dst))
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("fa: state: buffer %q: entry %d is %g", name, i, x)
		}
	}
	copy(dst, v)
	return nil
}

func (s State) int(name string, lo, hi int64) (int64, error) {
	v, ok := s.Ints[name]
	if !ok {
		return 0, fmt.Errorf("fa: state: counter %q is missing", name)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("fa: state: counter %q = %d outside [%d, %d]", name, v, lo, hi)
	}
	return v, nil
}

func clone(x []float64) []float64 { return append([]float64(nil), x...) }

// cloneFloats replaces every buffer of s by a copy (State from SharedState).
func (s State) cloneFloats() State {
	for name, buf := range s.Floats {
		s.Floats[name] = clone(buf)
	}
	return s
}

// State returns a copy of the learner's complete state: c, F, γ, the Adam moments and step
// counts, the number of updates and the state of the random number generator.
func (v *VIFA) State() (State, error) {
	s, err := v.SharedState()
	return s.cloneFloats(), err
}

// SharedState is State without the copies: its float64 buffers are the learner's own, to be
// read (a checkpoint encoding them, say) and not modified, and only until the learner's next
// Step, SetPosterior or LoadState. It saves holding the state twice (6 values of D and 3 of
// D×K).
func (v *VIFA) SharedState() (State, error) {
	s := newState()
	s.Ints["steps"] = int64(v.steps)
	s.Ints["rank"] = int64(v.k)
	for name, a := range map[string]*adamState{"c": &v.optC, "f": &v.optF, "gamma": &v.optG} {
		s.Ints["adam_t_"+name] = int64(a.t)
		s.Floats["adam_m_"+name] = a.m
		s.Floats["adam_v_"+name] = a.v
	}
	s.Floats["c"], s.Floats["f"], s.Floats["gamma"] = v.c, v.f, v.gamma
	rng, err := v.src.MarshalBinary()
	if err != nil {
		return State{}, fmt.Errorf("fa: vifa: state: %w", err)
	}
	s.Bytes["rng"] = rng
	return s, nil
}

// LoadState restores a state written by State for a learner of the same dimension and rank. On
// error the learner is unchanged.
func (v *VIFA) LoadState(s State) error {
	if k, err := s.int("rank", 0, math.MaxInt32); err != nil {
		return err
	} else if int(k) != v.k {
		return fmt.Errorf("fa: vifa: state has rank %d, want %d", k, v.k)
	}
	w := &VIFA{cfg: v.cfg, d: v.d, k: v.k, c: make([]float64, v.d), f: make([]float64, v.d*v.k), gamma: make([]float64, v.d)}
	w.optC.init(v.d)
	w.optF.init(v.d * v.k)
	w.optG.init(v.d)
	steps, err := s.int("steps", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	for name, a := range map[string]*adamState{"c": &w.optC, "f": &w.optF, "gamma": &w.optG} {
		t, err := s.int("adam_t_"+name, 0, math.MaxInt32)
		if err != nil {
			return err
		}
		a.t = int(t)
		if err := s.load("adam_m_"+name, a.m); err != nil {
			return err
		}
		if err := s.load("adam_v_"+name, a.v); err != nil {
			return err
		}
	}
	for name, dst := range map[string][]float64{"c": w.c, "f": w.f, "gamma": w.gamma} {
		if err := s.load(name, dst); err != nil {
			return err
		}
	}
	src := new(rand.PCG)
	if err := src.UnmarshalBinary(s.Bytes["rng"]); err != nil {
		return fmt.Errorf("fa: vifa: state: rng: %w", err)
	}
	*v.src = *src
	v.steps = int(steps)
	v.optC, v.optF, v.optG = w.optC, w.optF, w.optG
	copy(v.c, w.c)
	copy(v.f, w.f)
	for i, g := range w.gamma {
		v.gamma[i], v.psi[i] = g, math.Exp(g)
	}
	return nil
}

// State returns a copy of the learner's complete state: the observation count, the running mean,
// F, ψ and the running statistics of online EM (Ā, B̄, d̄², and with averaging their averages,
// weight and the re-centring buffers) or the log-variances of online SGA.
func (o *Online) State() (State, error) {
	s, err := o.SharedState()
	return s.cloneFloats(), err
}

// SharedState is State without the copies: its float64 buffers are the learner's own, to be
// read and not modified, and only until the learner's next Observe or LoadState.
func (o *Online) SharedState() (State, error) {
	s := newState()
	s.Ints["t"] = int64(o.t)
	s.Ints["rank"] = int64(o.k)
	s.Floats["wsum"] = []float64{o.wsum}
	s.Floats["mean"], s.Floats["f"], s.Floats["psi"] = o.mean, o.f, o.psi
	if o.em {
		s.Floats["abar"], s.Floats["bbar"], s.Floats["d2bar"] = o.abar, o.bbar, o.d2bar
	} else {
		s.Floats["gamma"] = o.gamma
	}
	for name, buf := range o.averages() {
		s.Floats[name] = buf
	}
	if o.aavg != nil {
		s.Floats["avg_weight"] = []float64{o.avgW}
	}
	return s, nil
}

// averages names the optional buffers of Polyak–Ruppert averaging and re-centring that the
// learner's configuration allocated.
func (o *Online) averages() map[string][]float64 {
	m := map[string][]float64{}
	if o.aavg != nil {
		m["aavg"], m["bavg"], m["d2avg"] = o.aavg, o.bavg, o.d2avg
	}
	if o.betabar != nil {
		m["betabar"], m["betaavg"] = o.betabar, o.betaavg
	}
	return m
}

// LoadState restores a state written by State for a learner of the same kind, dimension and
// rank. On error the learner is unchanged.
func (o *Online) LoadState(s State) error {
	if k, err := s.int("rank", 0, math.MaxInt32); err != nil {
		return err
	} else if int(k) != o.k {
		return fmt.Errorf("fa: online: state has rank %d, want %d", k, o.k)
	}
	t, err := s.int("t", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	bufs := map[string][]float64{"wsum": {0}, "mean": make([]float64, o.d), "f": make([]float64, o.d*o.k),
		"psi": make([]float64, o.d)}
	if o.em {
		bufs["abar"], bufs["bbar"], bufs["d2bar"] = make([]float64, o.d*o.k), make([]float64, o.k*o.k), make([]float64, o.d)
	} else {
		bufs["gamma"] = make([]float64, o.d)
	}
	for name, dst := range bufs {
		if err := s.load(name, dst); err != nil {
			return fmt.Errorf("%w (is the state from online %s?)", err, map[bool]string{true: "SGA", false: "EM"}[o.em])
		}
	}
	avgs := o.averages()
	avgBufs := map[string][]float64{}
	for name, buf := range avgs {
		avgBufs[name] = make([]float64, len(buf))
	}
	if o.aavg != nil {
		avgBufs["avg_weight"] = []float64{0}
	}
	for name, dst := range avgBufs {
		if err := s.load(name, dst); err != nil {
			return fmt.Errorf("%w (was the state written without the averaging or re-centring this learner is configured for?)", err)
		}
	}
	if w := avgBufs["avg_weight"]; w != nil && !(w[0] >= 0 && w[0] <= float64(t)) {
		return fmt.Errorf("fa: online: state: averaging weight %g outside [0, %d observations]", w[0], t)
	}
	for i, p := range bufs["psi"] {
		if !(p > 0) {
			return fmt.Errorf("fa: online: state: psi[%d] = %g must be positive", i, p)
		}
	}
	o.t, o.wsum = int(t), bufs["wsum"][0]
	copy(o.mean, bufs["mean"])
	copy(o.f, bufs["f"])
	copy(o.psi, bufs["psi"])
	if o.em {
		copy(o.abar, bufs["abar"])
		copy(o.bbar, bufs["bbar"])
		copy(o.d2bar, bufs["d2bar"])
	} else {
		copy(o.gamma, bufs["gamma"])
	}
	for name, buf := range avgs {
		copy(buf, avgBufs[name])
	}
	if o.aavg != nil {
		o.avgW = avgBufs["avg_weight"][0]
	}
	return nil
}
