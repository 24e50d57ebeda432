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

// check returns the buffer name of s after checking that it has n values, all finite.
func (s State) check(name string, n int) ([]float64, error) {
	v, ok := s.Floats[name]
	if !ok {
		return nil, fmt.Errorf("fa: state: buffer %q is missing", name)
	}
	if len(v) != n {
		return nil, fmt.Errorf("fa: state: buffer %q has %d values, want %d", name, len(v), n)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("fa: state: buffer %q: entry %d is %g", name, i, x)
		}
	}
	return v, nil
}

// load copies the buffer name of s into dst, which must have the same length.
func (s State) load(name string, dst []float64) error {
	v, err := s.check(name, len(dst))
	if err != nil {
		return err
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
	// Everything is checked before anything is copied (no staging copy of the state: 12 + 6K
	// float32 values per parameter); s's buffers may be the learner's own (SharedState's).
	steps, err := s.int("steps", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	opts := []struct {
		name string
		a    *adamState
		n    int
		t    int64
	}{{"c", &v.optC, v.d, 0}, {"f", &v.optF, v.d * v.k, 0}, {"gamma", &v.optG, v.d, 0}}
	for i := range opts {
		o := &opts[i]
		if o.t, err = s.int("adam_t_"+o.name, 0, math.MaxInt32); err != nil {
			return err
		}
		if _, err := s.check("adam_m_"+o.name, o.n); err != nil {
			return err
		}
		if _, err := s.check("adam_v_"+o.name, o.n); err != nil {
			return err
		}
	}
	for name, n := range map[string]int{"c": v.d, "f": v.d * v.k, "gamma": v.d} {
		if _, err := s.check(name, n); err != nil {
			return err
		}
	}
	src := new(rand.PCG)
	if err := src.UnmarshalBinary(s.Bytes["rng"]); err != nil {
		return fmt.Errorf("fa: vifa: state: rng: %w", err)
	}
	*v.src = *src
	v.steps = int(steps)
	for _, o := range opts {
		o.a.t = int(o.t)
		copy(o.a.m, s.Floats["adam_m_"+o.name])
		copy(o.a.v, s.Floats["adam_v_"+o.name])
	}
	copy(v.c, s.Floats["c"])
	copy(v.f, s.Floats["f"])
	for i, g := range s.Floats["gamma"] {
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
	// Everything is checked before anything is copied (no staging copy of the state); s's
	// buffers may be the learner's own (SharedState's).
	bufs := map[string][]float64{"mean": o.mean, "f": o.f, "psi": o.psi}
	if o.em {
		bufs["abar"], bufs["bbar"], bufs["d2bar"] = o.abar, o.bbar, o.d2bar
	} else {
		bufs["gamma"] = o.gamma
	}
	lens := map[string]int{"wsum": 1}
	for name, buf := range bufs {
		lens[name] = len(buf)
	}
	for name, n := range lens {
		if _, err := s.check(name, n); err != nil {
			return fmt.Errorf("%w (is the state from online %s?)", err, map[bool]string{true: "SGA", false: "EM"}[o.em])
		}
	}
	avgs := o.averages()
	avgLens := map[string]int{}
	for name, buf := range avgs {
		avgLens[name] = len(buf)
	}
	if o.aavg != nil {
		avgLens["avg_weight"] = 1
	}
	for name, n := range avgLens {
		if _, err := s.check(name, n); err != nil {
			return fmt.Errorf("%w (was the state written without the averaging or re-centring this learner is configured for?)", err)
		}
	}
	if o.aavg != nil {
		if w := s.Floats["avg_weight"][0]; !(w >= 0 && w <= float64(t)) {
			return fmt.Errorf("fa: online: state: averaging weight %g outside [0, %d observations]", w, t)
		}
	}
	for i, p := range s.Floats["psi"] {
		if !(p > 0) {
			return fmt.Errorf("fa: online: state: psi[%d] = %g must be positive", i, p)
		}
	}
	o.t, o.wsum = int(t), s.Floats["wsum"][0]
	for name, buf := range bufs {
		copy(buf, s.Floats[name])
	}
	for name, buf := range avgs {
		copy(buf, s.Floats[name])
	}
	if o.aavg != nil {
		o.avgW = s.Floats["avg_weight"][0]
	}
	return nil
}
