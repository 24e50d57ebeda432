package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// point is a phase-space point: position q, momentum p, log density lp and its gradient g.
type point struct {
	q, p, g []float64
	lp      float64
}

func newPoint(dim int) point {
	b := make([]float64, 3*dim)
	return point{q: b[:dim:dim], p: b[dim : 2*dim : 2*dim], g: b[2*dim:]}
}

// set copies o into z.
func (z *point) set(o *point) {
	copy(z.q, o.q)
	copy(z.p, o.p)
	copy(z.g, o.g)
	z.lp = o.lp
}

// level is the scratch space of one NUTS recursion depth.
type level struct {
	propFinal                         point
	rhoInit, pInitEnd, pSharpInitEnd  []float64
	rhoFinal, pFinalBeg, pSharpFinBeg []float64
	rhoExt                            []float64
}

// sampler is one chain's state.
type sampler struct {
	f         LogDensity
	dim       int
	alg       Algorithm
	maxDepth  int
	numSteps  int
	jitter    bool // StaticHMC: draw the number of steps around numSteps
	maxDeltaH float64
	initR     float64
	inits     [][]float64
	rng       *rand.Rand

	eps  float64
	invM []float64
	q    []float64 // current draw
	g    []float64 // its gradient
	lp   float64

	z, zFwd, zBck, zSample, zProp, zInit point
	rho, rhoSub, rhoExt                  []float64
	pSharpFwd, pSharpBck                 []float64
	pNewBeg, pNewEnd, pSharpNewBeg       []float64
	pSharpNewEnd                         []float64
	levels                               []level

	// per-transition tree state
	nLeapfrog    int
	sumMetroProb float64
	divergent    bool
}

func newSampler(f LogDensity, dim int, cfg *Config, rng *rand.Rand) *sampler {
	s := &sampler{f: f, dim: dim, alg: cfg.Algorithm, maxDepth: cfg.MaxTreeDepth, numSteps: cfg.NumSteps, jitter: cfg.JitterSteps,
		maxDeltaH: cfg.MaxEnergyError, initR: cfg.InitRadius, inits: cfg.Inits, rng: rng, eps: cfg.StepSize}
	vec := func() []float64 { return make([]float64, dim) }
	s.invM = vec()
	if cfg.InvMetric != nil {
		copy(s.invM, cfg.InvMetric)
	} else {
		for i := range s.invM {
			s.invM[i] = 1
		}
	}
	s.q, s.g = vec(), vec()
	for _, z := range []*point{&s.z, &s.zFwd, &s.zBck, &s.zSample, &s.zProp, &s.zInit} {
		*z = newPoint(dim)
	}
	s.rho, s.rhoSub, s.rhoExt = vec(), vec(), vec()
	s.pSharpFwd, s.pSharpBck = vec(), vec()
	s.pNewBeg, s.pNewEnd, s.pSharpNewBeg, s.pSharpNewEnd = vec(), vec(), vec(), vec()
	if cfg.Algorithm == NUTS {
		s.levels = make([]level, cfg.MaxTreeDepth)
		for d := range s.levels {
			s.levels[d] = level{propFinal: newPoint(dim), rhoInit: vec(), pInitEnd: vec(), pSharpInitEnd: vec(),
				rhoFinal: vec(), pFinalBeg: vec(), pSharpFinBeg: vec(), rhoExt: vec()}
		}
	}
	return s
}

// eval evaluates the density at q into g; a non-finite value or gradient gives −Inf.
func (s *sampler) eval(q, g []float64) float64 {
	lp := s.f(q, g)
	if math.IsNaN(lp) || math.IsInf(lp, 0) {
		return math.Inf(-1)
	}
	for _, v := range g {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.Inf(-1)
		}
	}
	return lp
}

// init sets the chain's initial point.
func (s *sampler) init(cfg *Config, c int) error {
	if s.inits != nil {
		x := s.inits[0]
		if len(s.inits) > 1 {
			x = s.inits[c]
		}
		copy(s.q, x)
		if s.lp = s.eval(s.q, s.g); math.IsInf(s.lp, -1) {
			return errors.New("log density or its gradient is not finite at Config.Inits")
		}
		return nil
	}
	const tries = 100
	for range tries {
		for i := range s.q {
			s.q[i] = s.initR * (2*s.rng.Float64() - 1)
		}
		if s.lp = s.eval(s.q, s.g); !math.IsInf(s.lp, -1) {
			return nil
		}
	}
	return fmt.Errorf("no finite log density and gradient at %d random initial points in (−%g, %g)^%d",
		tries, s.initR, s.initR, s.dim)
}

// samplePoint loads the current draw into z with a fresh momentum p ~ N(0, M).
func (s *sampler) samplePoint(z *point) {
	copy(z.q, s.q)
	copy(z.g, s.g)
	z.lp = s.lp
	for i := range z.p {
		z.p[i] = s.rng.NormFloat64() / math.Sqrt(s.invM[i])
	}
}

// hamiltonian returns H = −log p + ½ pᵀM⁻¹p, +Inf when not finite.
func (s *sampler) hamiltonian(z *point) float64 {
	k := 0.0
	for i, p := range z.p {
		k += s.invM[i] * p * p
	}
	h := -z.lp + 0.5*k
	if math.IsNaN(h) {
		return math.Inf(1)
	}
	return h
}

// leapfrog advances z by one step of size eps.
func (s *sampler) leapfrog(z *point, eps float64) {
	for i := range z.p {
		z.p[i] += 0.5 * eps * z.g[i]
	}
	for i := range z.q {
		z.q[i] += eps * s.invM[i] * z.p[i]
	}
	z.lp = s.eval(z.q, z.g)
	for i := range z.p {
		z.p[i] += 0.5 * eps * z.g[i]
	}
}

// sharp writes M⁻¹p into dst.
func (s *sampler) sharp(dst, p []float64) {
	for i, v := range p {
		dst[i] = s.invM[i] * v
	}
}

func dot(a, b []float64) float64 {
	t := 0.0
	for i, v := range a {
		t += v * b[i]
	}
	return t
}

// criterion is the generalized no-U-turn criterion: the trajectory keeps going while both end
// velocities have a positive projection on the summed momentum rho.
func criterion(pSharpMinus, pSharpPlus, rho []float64) bool {
	return dot(pSharpPlus, rho) > 0 && dot(pSharpMinus, rho) > 0
}

func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a > b {
		return a + math.Log1p(math.Exp(b-a))
	}
	return b + math.Log1p(math.Exp(a-b))
}

func addTo(dst, a []float64) {
	for i, v := range a {
		dst[i] += v
	}
}

func sum2(dst, a, b []float64) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func zero(v []float64) {
	for i := range v {
		v[i] = 0
	}
}

// transition moves the chain one iteration and returns its stats.
func (s *sampler) transition() DrawStats {
	if s.alg == StaticHMC {
		return s.staticTransition()
	}
	return s.nutsTransition()
}

// staticTransition is one HMC transition with numSteps leapfrog steps.
func (s *sampler) staticTransition() DrawStats {
	z := &s.z
	s.samplePoint(z)
	h0 := s.hamiltonian(z)
	n, steps := 0, s.numSteps
	if s.jitter {
		lo := (s.numSteps + 1) / 2
		steps = lo + s.rng.IntN(s.numSteps+s.numSteps/2-lo+1)
	}
	for range steps {
		s.leapfrog(z, s.eps)
		n++
		if math.IsInf(z.lp, -1) {
			break
		}
	}
	h := s.hamiltonian(z)
	st := DrawStats{Leapfrog: n, Divergent: h-h0 > s.maxDeltaH}
	st.AcceptStat = math.Min(1, math.Exp(h0-h))
	if s.rng.Float64() < st.AcceptStat {
		copy(s.q, z.q)
		copy(s.g, z.g)
		s.lp = z.lp
		st.Energy = h
	} else {
		st.Energy = h0
	}
	st.LogDensity = s.lp
	return st
}

// nutsTransition is one multinomial NUTS transition (Stan's base_nuts::transition).
func (s *sampler) nutsTransition() DrawStats {
	s.samplePoint(&s.zFwd)
	h0 := s.hamiltonian(&s.zFwd)
	s.zBck.set(&s.zFwd)
	s.zSample.set(&s.zFwd)
	s.sharp(s.pSharpFwd, s.zFwd.p)
	copy(s.pSharpBck, s.pSharpFwd)
	copy(s.rho, s.zFwd.p)
	// zFwd.p and zBck.p stay the momenta at the trajectory's two ends.

	logSumWeight := 0.0 // log exp(H0 − H0)
	s.nLeapfrog, s.sumMetroProb, s.divergent = 0, 0, false
	depth := 0
	for depth < s.maxDepth {
		zero(s.rhoSub)
		lswSub := math.Inf(-1)
		// The old trajectory A is extended by a new subtree B on one side: aFarSharp is M⁻¹p at
		// A's end away from B, aNear the end B grows from.
		var aNear *point
		var aFarSharp, aNearSharp []float64
		var valid bool
		if s.rng.Float64() > 0.5 {
			aFarSharp, aNear, aNearSharp = s.pSharpBck, &s.zFwd, s.pSharpFwd
			s.z.set(&s.zFwd)
			valid = s.buildTree(depth, &s.zProp, s.pSharpNewBeg, s.pSharpNewEnd, s.rhoSub, s.pNewBeg, s.pNewEnd, h0, 1, &lswSub)
		} else {
			aFarSharp, aNear, aNearSharp = s.pSharpFwd, &s.zBck, s.pSharpBck
			s.z.set(&s.zBck)
			valid = s.buildTree(depth, &s.zProp, s.pSharpNewBeg, s.pSharpNewEnd, s.rhoSub, s.pNewBeg, s.pNewEnd, h0, -1, &lswSub)
		}
		if !valid {
			break
		}
		depth++
		// Biased progressive sampling favours the new subtree.
		if lswSub > logSumWeight {
			s.zSample.set(&s.zProp)
		} else if s.rng.Float64() < math.Exp(lswSub-logSumWeight) {
			s.zSample.set(&s.zProp)
		}
		logSumWeight = logAddExp(logSumWeight, lswSub)

		// No-U-turn across the merged trajectory and the two subtrees extended by one point
		// of the other.
		persist := true
		sum2(s.rhoExt, s.rho, s.rhoSub)
		persist = persist && criterion(aFarSharp, s.pSharpNewEnd, s.rhoExt)
		sum2(s.rhoExt, s.rho, s.pNewBeg)
		persist = persist && criterion(aFarSharp, s.pSharpNewBeg, s.rhoExt)
		sum2(s.rhoExt, s.rhoSub, aNear.p)
		persist = persist && criterion(aNearSharp, s.pSharpNewEnd, s.rhoExt)
		addTo(s.rho, s.rhoSub)
		// B's far end is the trajectory's new end on that side.
		aNear.set(&s.z)
		copy(aNearSharp, s.pSharpNewEnd)
		if !persist {
			break
		}
	}
	s.z.set(&s.zSample)
	copy(s.q, s.zSample.q)
	copy(s.g, s.zSample.g)
	s.lp = s.zSample.lp
	return DrawStats{
		LogDensity: s.lp,
		AcceptStat: s.sumMetroProb / float64(s.nLeapfrog),
		TreeDepth:  depth,
		Leapfrog:   s.nLeapfrog,
		Divergent:  s.divergent,
		Energy:     s.hamiltonian(&s.zSample),
	}
}

// buildTree integrates 2^depth leapfrog steps from s.z in direction sign, proposing a point
// into prop by multinomial sampling and accumulating the summed momentum into rho. pSharpBeg,
// pBeg (first point) and pSharpEnd, pEnd (last point) receive the subtree's end momenta. It
// returns false when the subtree diverged or turned.
func (s *sampler) buildTree(depth int, prop *point, pSharpBeg, pSharpEnd, rho, pBeg, pEnd []float64,
	h0, sign float64, logSumWeight *float64) bool {
	if depth == 0 {
		z := &s.z
		s.leapfrog(z, sign*s.eps)
		s.nLeapfrog++
		h := s.hamiltonian(z)
		if h-h0 > s.maxDeltaH {
			s.divergent = true
		}
		*logSumWeight = logAddExp(*logSumWeight, h0-h)
		if h0-h > 0 {
			s.sumMetroProb++
		} else {
			s.sumMetroProb += math.Exp(h0 - h)
		}
		prop.set(z)
		addTo(rho, z.p)
		s.sharp(pSharpBeg, z.p)
		copy(pSharpEnd, pSharpBeg)
		copy(pBeg, z.p)
		copy(pEnd, z.p)
		return !s.divergent
	}
	l := &s.levels[depth]
	lswInit := math.Inf(-1)
	zero(l.rhoInit)
	if !s.buildTree(depth-1, prop, pSharpBeg, l.pSharpInitEnd, l.rhoInit, pBeg, l.pInitEnd, h0, sign, &lswInit) {
		return false
	}
	lswFinal := math.Inf(-1)
	zero(l.rhoFinal)
	if !s.buildTree(depth-1, &l.propFinal, l.pSharpFinBeg, pSharpEnd, l.rhoFinal, l.pFinalBeg, pEnd, h0, sign, &lswFinal) {
		return false
	}
	lswSub := logAddExp(lswInit, lswFinal)
	*logSumWeight = logAddExp(*logSumWeight, lswSub)
	if lswFinal > lswSub {
		prop.set(&l.propFinal)
	} else if s.rng.Float64() < math.Exp(lswFinal-lswSub) {
		prop.set(&l.propFinal)
	}
	sum2(l.rhoExt, l.rhoInit, l.rhoFinal)
	addTo(rho, l.rhoExt)
	persist := criterion(pSharpBeg, pSharpEnd, l.rhoExt)
	sum2(l.rhoExt, l.rhoInit, l.pFinalBeg)
	persist = persist && criterion(pSharpBeg, l.pSharpFinBeg, l.rhoExt)
	sum2(l.rhoExt, l.rhoFinal, l.pInitEnd)
	persist = persist && criterion(l.pSharpInitEnd, pSharpEnd, l.rhoExt)
	return persist
}

// initStepSize is Stan's heuristic: from the current draw, double or halve the step size until
// one leapfrog step's acceptance probability crosses 0.8.
func (s *sampler) initStepSize() error {
	z := &s.zInit
	deltaH := func() float64 {
		s.samplePoint(z)
		h0 := s.hamiltonian(z)
		s.leapfrog(z, s.eps)
		return h0 - s.hamiltonian(z)
	}
	logTarget := math.Log(0.8)
	dir := -1.0
	if deltaH() > logTarget {
		dir = 1
	}
	for {
		d := deltaH()
		if dir == 1 && !(d > logTarget) || dir == -1 && !(d < logTarget) {
			return nil
		}
		if dir == 1 {
			s.eps *= 2
		} else {
			s.eps /= 2
		}
		if s.eps > 1e7 {
			return fmt.Errorf("step size initialisation: step size above 1e7, the posterior may be improper")
		}
		if s.eps == 0 {
			return fmt.Errorf("step size initialisation: no acceptably small step size (the density or its gradient may be wrong)")
		}
	}
}
