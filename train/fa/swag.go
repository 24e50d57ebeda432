package fa

import (
	"fmt"
	"math"
)

// SWAGScale is the scale SWAG samples its Gaussian with (Maddox et al. 2019, and their code's
// default): Σ = ½ (diag(θ²̄ − θ̄²) + D̂ D̂ᵀ / (K − 1)).
const SWAGScale = 0.5

// swagVarFloor keeps ψ positive where a coordinate never moved (SWAG clamps the variance at 1e-30;
// an FA model needs ψ > 0 for its latent posterior).
const swagVarFloor = 1e-30

// SWAG is SWA-Gaussian (Maddox, Garipov, Izmailov, Vetrov & Wilson, NeurIPS 2019) over a stream of
// parameter vectors θ_1, θ_2, … (SGD iterates): the running mean θ̄, the running mean of squares
// θ²̄, and the deviations θ_t − θ̄_t (θ̄_t including θ_t) of the last K iterates as the columns of
// D̂. Its Gaussian N(θ̄, ½ (diag(θ²̄ − θ̄²) + D̂D̂ᵀ/(K − 1))) is exactly a factor-analysis model
// with c = θ̄, F = D̂ / √(2(K − 1)) and ψ = ½ (θ²̄ − θ̄²), so it deploys as the runtime's fa kind
// unchanged. Until K iterates are collected, K in the formula is the number collected (F = 0
// below two). Memory is O(DK). It is not safe for concurrent use.
type SWAG struct {
	d, k       int
	n          int       // iterates observed
	mean, sq   []float64 // θ̄, θ²̄
	dev        []float64 // D × K, column j the deviation of slot j
	cols, next int       // columns filled, slot of the next deviation
}

// NewSWAG returns a SWAG learner for vectors of length d keeping the last k deviations (SWAG's
// "max_num_models"; the paper uses 20).
func NewSWAG(d, k int) (*SWAG, error) {
	if d < 1 || k < 1 || k > d || int64(d)*int64(k) > math.MaxInt32 {
		return nil, fmt.Errorf("fa: swag: need 1 ≤ rank (%d) ≤ dimension (%d) and rank × dimension < 2³¹", k, d)
	}
	return &SWAG{d: d, k: k, mean: make([]float64, d), sq: make([]float64, d), dev: make([]float64, d*k)}, nil
}

// Count is the number of iterates observed.
func (s *SWAG) Count() int { return s.n }

// Observe adds one iterate.
func (s *SWAG) Observe(theta []float64) error {
	if err := checkObserved("fa: swag: iterate", theta, s.d, s.n+1); err != nil {
		return err
	}
	s.n++
	w := 1 / float64(s.n)
	j := s.next
	for i, v := range theta {
		s.mean[i] += w * (v - s.mean[i])
		s.sq[i] += w * (v*v - s.sq[i])
		s.dev[i*s.k+j] = v - s.mean[i]
	}
	s.next = (j + 1) % s.k
	s.cols = min(s.cols+1, s.k)
	return nil
}

// Model returns the FA form of SWAG's Gaussian (a new Model).
func (s *SWAG) Model() *Model {
	m := s.SharedModel()
	m.Mean = clone(m.Mean)
	return m
}

// SharedModel is Model with the learner's own running mean as Mean (F and ψ are new), to be
// read and not modified, and only until the learner's next Observe or LoadState.
func (s *SWAG) SharedModel() *Model {
	m := &Model{D: s.d, K: s.k, Mean: s.mean, F: make([]float64, s.d*s.k), Psi: make([]float64, s.d)}
	for i := range m.Psi {
		m.Psi[i] = SWAGScale * max(s.sq[i]-s.mean[i]*s.mean[i], swagVarFloor)
	}
	if s.cols >= 2 {
		f := math.Sqrt(SWAGScale / float64(s.cols-1))
		for i, v := range s.dev {
			m.F[i] = f * v
		}
	}
	return m
}

// State returns a copy of the learner's complete state.
func (s *SWAG) State() (State, error) {
	st, err := s.SharedState()
	return st.cloneFloats(), err
}

// SharedState is State without the copies: its float64 buffers are the learner's own, to be
// read and not modified, and only until the learner's next Observe or LoadState.
func (s *SWAG) SharedState() (State, error) {
	st := newState()
	st.Ints["n"], st.Ints["rank"], st.Ints["cols"], st.Ints["next"] = int64(s.n), int64(s.k), int64(s.cols), int64(s.next)
	st.Floats["mean"], st.Floats["sq"], st.Floats["dev"] = s.mean, s.sq, s.dev
	return st, nil
}

// LoadState restores a state written by State for a learner of the same dimension and rank. On
// error the learner is unchanged.
func (s *SWAG) LoadState(st State) error {
	if k, err := st.int("rank", 0, math.MaxInt32); err != nil {
		return err
	} else if int(k) != s.k {
		return fmt.Errorf("fa: swag: state has rank %d, want %d", k, s.k)
	}
	n, err := st.int("n", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	cols, err := st.int("cols", 0, int64(s.k))
	if err != nil {
		return err
	}
	next, err := st.int("next", 0, int64(s.k-1))
	if err != nil {
		return err
	}
	if cols != min(n, int64(s.k)) || (cols < int64(s.k) && next != cols) {
		return fmt.Errorf("fa: swag: state: %d columns and next slot %d after %d iterates are inconsistent", cols, next, n)
	}
	mean, sq, dev := make([]float64, s.d), make([]float64, s.d), make([]float64, s.d*s.k)
	for name, dst := range map[string][]float64{"mean": mean, "sq": sq, "dev": dev} {
		if err := st.load(name, dst); err != nil {
			return fmt.Errorf("%w (is the state from SWAG?)", err)
		}
	}
	s.n, s.cols, s.next = int(n), int(cols), int(next)
	s.mean, s.sq, s.dev = mean, sq, dev
	return nil
}
