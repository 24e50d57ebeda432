package autodiff

import (
	"fmt"
	"math"
	"slices"

	"github.com/edgebnn/edgebnn/internal/f64"
)

type binOp int

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
)

var binNames = [...]string{"Add", "Sub", "Mul", "Div"}

// broadcastShape returns the numpy-style broadcast of shapes a and b: shapes are aligned at
// their trailing dimensions and each pair of dimensions must be equal or contain a 1.
func broadcastShape(a, b []int) ([]int, error) {
	r := max(len(a), len(b))
	out := make([]int, r)
	for i := 0; i < r; i++ {
		da, db := 1, 1
		if j := len(a) - r + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - r + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast (dimension %d: %d vs %d)", a, b, i, da, db)
		}
	}
	return out, nil
}

// bcastStrides returns the strides of a tensor of the given shape viewed with the broadcast
// shape out (stride 0 along broadcast dimensions).
func bcastStrides(shape, out []int) []int {
	r := len(out)
	st := make([]int, r)
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		j := r - len(shape) + i
		if shape[i] != 1 {
			st[j] = s
		}
		s *= shape[i]
	}
	return st
}

// forEachBcast calls fn(i, ia, ib) for every flat index i of a tensor of shape out, with ia, ib
// the flat indices into two tensors with the broadcast strides sa, sb.
func forEachBcast(out, sa, sb []int, fn func(i, ia, ib int)) {
	n := 1
	for _, d := range out {
		n *= d
	}
	if n == 0 {
		return
	}
	r := len(out)
	if r == 0 {
		fn(0, 0, 0)
		return
	}
	idx := make([]int, r)
	ia, ib := 0, 0
	last := r - 1
	inner := out[last]
	for i := 0; i < n; i += inner {
		ja, jb := ia, ib
		for k := 0; k < inner; k++ {
			fn(i+k, ja, jb)
			ja += sa[last]
			jb += sb[last]
		}
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			ia += sa[d]
			ib += sb[d]
			if idx[d] < out[d] {
				break
			}
			ia -= sa[d] * out[d]
			ib -= sb[d] * out[d]
			idx[d] = 0
		}
	}
}

// Add returns a + b with numpy-style broadcasting (torch.add): shapes are aligned at their
// trailing dimensions and dimensions of size 1 (or missing) are repeated. A scalar, a row vector
// (shape (n,) against (m, n)), a column (m, 1) and general broadcasts are all allowed. The
// gradient of a broadcast input is the output gradient summed over the repeated dimensions.
func (t *Tape[T]) Add(a, b *Var[T]) *Var[T] { return t.binary(opAdd, a, b) }

// Sub returns a − b with broadcasting as in Add (torch.sub).
func (t *Tape[T]) Sub(a, b *Var[T]) *Var[T] { return t.binary(opSub, a, b) }

// Mul returns the elementwise product a ⊙ b with broadcasting as in Add (torch.mul).
func (t *Tape[T]) Mul(a, b *Var[T]) *Var[T] { return t.binary(opMul, a, b) }

// Div returns the elementwise quotient a / b with broadcasting as in Add (torch.div).
func (t *Tape[T]) Div(a, b *Var[T]) *Var[T] { return t.binary(opDiv, a, b) }

func (t *Tape[T]) binary(op binOp, a, b *Var[T]) *Var[T] {
	name := binNames[op]
	if !t.check(name, a, b) {
		return t.placeholder()
	}
	if slices.Equal(a.shape, b.shape) {
		return t.binarySame(op, a, b)
	}
	shape, err := broadcastShape(a.shape, b.shape)
	if err != nil {
		return t.fail(fmt.Errorf("autodiff: %s: %w", name, err))
	}
	sa, sb := bcastStrides(a.shape, shape), bcastStrides(b.shape, shape)
	out := t.newVar(shape, false)
	av, bv, ov := a.value, b.value, out.value
	switch op {
	case opAdd:
		forEachBcast(shape, sa, sb, func(i, ia, ib int) { ov[i] = av[ia] + bv[ib] })
	case opSub:
		forEachBcast(shape, sa, sb, func(i, ia, ib int) { ov[i] = av[ia] - bv[ib] })
	case opMul:
		forEachBcast(shape, sa, sb, func(i, ia, ib int) { ov[i] = av[ia] * bv[ib] })
	case opDiv:
		forEachBcast(shape, sa, sb, func(i, ia, ib int) { ov[i] = av[ia] / bv[ib] })
	}
	t.record(out, func() {
		g := out.grad
		ga, gb := a.gradBuf(), b.gradBuf()
		forEachBcast(shape, sa, sb, func(i, ia, ib int) {
			gi := g[i]
			switch op {
			case opAdd:
				if ga != nil {
					ga[ia] += gi
				}
				if gb != nil {
					gb[ib] += gi
				}
			case opSub:
				if ga != nil {
					ga[ia] += gi
				}
				if gb != nil {
					gb[ib] -= gi
				}
			case opMul:
				if ga != nil {
					ga[ia] += gi * bv[ib]
				}
				if gb != nil {
					gb[ib] += gi * av[ia]
				}
			case opDiv:
				if ga != nil {
					ga[ia] += gi / bv[ib]
				}
				if gb != nil {
					gb[ib] -= gi * ov[i] / bv[ib]
				}
			}
		})
	}, a, b)
	return out
}

// AddMul returns a + b ⊙ c: Add(a, Mul(b, c)) as one op, the same values and gradients bit for
// bit (the product rounded before the sum; the reverse pass accumulates into a, b and c in
// the order the two ops' passes do) without the product's Var and its gradient buffer — a
// weight sample μ + σ ⊙ ε. Inputs of different shapes or an input given twice take the two ops.
func (t *Tape[T]) AddMul(a, b, c *Var[T]) *Var[T] {
	if !t.check("AddMul", a, b, c) {
		return t.placeholder()
	}
	if !slices.Equal(a.shape, b.shape) || !slices.Equal(b.shape, c.shape) || a == b || b == c || a == c {
		return t.Add(a, t.Mul(b, c))
	}
	out := t.newVar(a.shape, false)
	av, bv, cv, ov := a.value, b.value[:len(a.value)], c.value[:len(a.value)], out.value[:len(a.value)]
	for i, x := range av {
		ov[i] = x + T(bv[i]*cv[i]) // the conversion rounds the product: no fused multiply-add
	}
	t.record(out, func() {
		g := out.grad
		// Add's pass: a's gradient, then the product's (a fresh zero buffer: 0 + g) ...
		if ga := a.gradBuf(); ga != nil {
			ga = ga[:len(g)]
			for i, gi := range g {
				ga[i] += gi
			}
		}
		// ... and Mul's, with the product's gradient 0 + g recomputed.
		var zero T
		if gb := b.gradBuf(); gb != nil {
			gb, cv := gb[:len(g)], cv[:len(g)]
			for i, gi := range g {
				gb[i] += (zero + gi) * cv[i]
			}
		}
		if gc := c.gradBuf(); gc != nil {
			gc, bv := gc[:len(g)], bv[:len(g)]
			for i, gi := range g {
				gc[i] += (zero + gi) * bv[i]
			}
		}
	}, a, b, c)
	return out
}

func (t *Tape[T]) binarySame(op binOp, a, b *Var[T]) *Var[T] {
	out := t.newVar(a.shape, false)
	av, bv, ov := a.value, b.value, out.value
	switch op {
	case opAdd:
		for i := range ov {
			ov[i] = av[i] + bv[i]
		}
	case opSub:
		for i := range ov {
			ov[i] = av[i] - bv[i]
		}
	case opMul:
		for i := range ov {
			ov[i] = av[i] * bv[i]
		}
	case opDiv:
		for i := range ov {
			ov[i] = av[i] / bv[i]
		}
	}
	t.record(out, func() {
		g := out.grad
		if ga := a.gradBuf(); ga != nil {
			switch op {
			case opAdd, opSub:
				for i, gi := range g {
					ga[i] += gi
				}
			case opMul:
				for i, gi := range g {
					ga[i] += gi * bv[i]
				}
			case opDiv:
				for i, gi := range g {
					ga[i] += gi / bv[i]
				}
			}
		}
		if gb := b.gradBuf(); gb != nil {
			switch op {
			case opAdd:
				for i, gi := range g {
					gb[i] += gi
				}
			case opSub:
				for i, gi := range g {
					gb[i] -= gi
				}
			case opMul:
				for i, gi := range g {
					gb[i] += gi * av[i]
				}
			case opDiv:
				for i, gi := range g {
					gb[i] -= gi * ov[i] / bv[i]
				}
			}
		}
	}, a, b)
	return out
}

// unary records y = f(x) elementwise with dy/dx = df(x, y).
func (t *Tape[T]) unary(name string, a *Var[T], f func(x T) T, df func(x, y T) T) *Var[T] {
	if !t.check(name, a) {
		return t.placeholder()
	}
	out := t.newVar(a.shape, false)
	av, ov := a.value, out.value
	for i, x := range av {
		ov[i] = f(x)
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for i, g := range out.grad {
			ga[i] += g * df(av[i], ov[i])
		}
	}, a)
	return out
}

// softplusCached32 writes Softplus32(x) to y and float32(Sigmoid(x)) to d (when d is not nil) for
// every x in xs, from c where x's bits are those c holds for its index, and refills c.
func softplusCached32(xs, y, d []float32, c *SoftplusCache) {
	n := len(xs)
	y = y[:n]
	if len(c.x) != n {
		c.x, c.y, c.d = make([]uint32, n), make([]float32, n), make([]float32, n)
		for i, x := range xs {
			s, g := f64.SoftplusSigmoid32(x)
			c.x[i], c.y[i], c.d[i] = math.Float32bits(x), s, float32(g)
		}
	}
	cx, cy, cd := c.x[:n], c.y[:n], c.d[:n]
	for i, x := range xs {
		if b := math.Float32bits(x); b != cx[i] {
			s, g := f64.SoftplusSigmoid32(x)
			cx[i], cy[i], cd[i] = b, s, float32(g)
		}
	}
	copy(y, cy)
	if d != nil {
		copy(d[:n], cd)
	}
}

// Neg returns −a (torch.neg).
func (t *Tape[T]) Neg(a *Var[T]) *Var[T] {
	return t.unary("Neg", a, func(x T) T { return -x }, func(_, _ T) T { return -1 })
}

// Scale returns s·a for a constant s (a * s in PyTorch).
func (t *Tape[T]) Scale(a *Var[T], s T) *Var[T] {
	return t.unary("Scale", a, func(x T) T { return s * x }, func(_, _ T) T { return s })
}

// AddScalar returns a + s for a constant s (a + s in PyTorch).
func (t *Tape[T]) AddScalar(a *Var[T], s T) *Var[T] {
	return t.unary("AddScalar", a, func(x T) T { return x + s }, func(_, _ T) T { return 1 })
}

// Exp returns eˣ elementwise (torch.exp).
func (t *Tape[T]) Exp(a *Var[T]) *Var[T] {
	return t.unary("Exp", a, func(x T) T { return T(math.Exp(float64(x))) }, func(_, y T) T { return y })
}

// Log returns the natural logarithm elementwise (torch.log); non-positive inputs give −Inf/NaN
// as in PyTorch.
func (t *Tape[T]) Log(a *Var[T]) *Var[T] {
	return t.unary("Log", a, func(x T) T { return T(math.Log(float64(x))) }, func(x, _ T) T { return 1 / x })
}

// Sqrt returns √x elementwise (torch.sqrt); the gradient is 1/(2√x).
func (t *Tape[T]) Sqrt(a *Var[T]) *Var[T] {
	return t.unary("Sqrt", a, func(x T) T { return T(math.Sqrt(float64(x))) }, func(_, y T) T { return 0.5 / y })
}

// NoisyMean returns mean + √(variance + delta)·eps elementwise, the draw of the local
// reparameterisation, as one op: the same values and gradients as
// Add(mean, Mul(Sqrt(AddScalar(variance, delta)), Const(eps))) — every product rounded before
// its sum, as there — without the three intermediate tensors. mean and variance have the same
// shape and eps (a constant) as many elements.
func (t *Tape[T]) NoisyMean(mean, variance *Var[T], delta T, eps []T) *Var[T] {
	if !t.check("NoisyMean", mean, variance) {
		return t.placeholder()
	}
	n := len(mean.value)
	if !slices.Equal(mean.shape, variance.shape) || len(eps) != n {
		t.failf("NoisyMean: mean %v, variance %v and %d noise values differ in shape", mean.shape, variance.shape, len(eps))
		return t.placeholder()
	}
	out := t.newVar(mean.shape, false)
	mv, vv, ov := mean.value, variance.value[:n], out.value[:n]
	eps = eps[:n]
	for i, m := range mv {
		s := T(math.Sqrt(float64(vv[i] + delta)))
		ov[i] = m + T(s*eps[i])
	}
	t.record(out, func() {
		g := out.grad[:n]
		if gm := mean.gradBuf(); gm != nil {
			for i, gi := range g {
				gm[i] += gi
			}
		}
		if gv := variance.gradBuf(); gv != nil {
			gv = gv[:n]
			for i, gi := range g {
				s := T(math.Sqrt(float64(vv[i] + delta)))
				gv[i] += T(T(gi*eps[i]) * (0.5 / s))
			}
		}
	}, mean, variance)
	return out
}

// Square returns x² elementwise (torch.square).
func (t *Tape[T]) Square(a *Var[T]) *Var[T] {
	return t.unary("Square", a, func(x T) T { return x * x }, func(x, _ T) T { return 2 * x })
}

// Pow returns xᵖ elementwise for a constant exponent p (torch.pow(x, p)); the gradient is
// p·xᵖ⁻¹.
func (t *Tape[T]) Pow(a *Var[T], p T) *Var[T] {
	return t.unary("Pow", a, func(x T) T { return T(math.Pow(float64(x), float64(p))) },
		func(x, _ T) T { return p * T(math.Pow(float64(x), float64(p-1))) })
}

// Abs returns |x| elementwise (torch.abs); the gradient is sign(x), 0 at x = 0 as in PyTorch.
func (t *Tape[T]) Abs(a *Var[T]) *Var[T] {
	return t.unary("Abs", a, func(x T) T { return T(math.Abs(float64(x))) }, func(x, _ T) T {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	})
}

// Tanh returns tanh(x) elementwise (torch.tanh).
func (t *Tape[T]) Tanh(a *Var[T]) *Var[T] {
	return t.unary("Tanh", a, func(x T) T { return T(math.Tanh(float64(x))) }, func(_, y T) T { return 1 - y*y })
}

// ReLU returns max(x, 0) elementwise (torch.relu); the gradient at 0 is 0 as in PyTorch.
func (t *Tape[T]) ReLU(a *Var[T]) *Var[T] {
	// unary's loops without its two calls per element: ReLU runs over every activation of a CNN.
	if !t.check("ReLU", a) {
		return t.placeholder()
	}
	out := t.newVar(a.shape, false)
	av, ov := a.value, out.value[:len(a.value)]
	for i, x := range av {
		ov[i] = max(x, 0)
	}
	t.record(out, func() {
		ga := a.gradBuf()[:len(av)]
		for i, g := range out.grad[:len(av)] {
			if av[i] > 0 {
				ga[i] += g
			}
		}
	}, a)
	return out
}

// Sigmoid returns 1/(1+e⁻ˣ) elementwise, computed without overflow (torch.sigmoid).
func (t *Tape[T]) Sigmoid(a *Var[T]) *Var[T] {
	return t.unary("Sigmoid", a, func(x T) T { return T(f64.Sigmoid(float64(x))) }, func(_, y T) T { return y * (1 - y) })
}

// Softplus returns log(1+eˣ) elementwise computed stably as max(x,0) + log1p(e^−|x|); the
// gradient is sigmoid(x). Unlike torch.nn.functional.softplus it has no linear threshold, so it
// is exact for every x (the two agree to float precision).
func (t *Tape[T]) Softplus(a *Var[T]) *Var[T] {
	return t.SoftplusCached(a, nil)
}

// SoftplusCache holds the inputs of a float32 Softplus, its values and derivatives, for
// SoftplusCached: elements whose bits have not changed since (a parameter's raw sds between
// two optimizer steps, most of which do not move by an ulp) take them from the cache. The
// zero value is empty.
type SoftplusCache struct {
	x    []uint32
	y, d []float32
}

// SoftplusCached is Softplus(a) — the same values and gradients bit for bit — that, for float32,
// reuses the values and derivatives cache holds for elements whose bits equal those of its last
// input, computes the others, and leaves a's values and their results in cache. A nil cache
// gives Softplus.
func (t *Tape[T]) SoftplusCached(a *Var[T], cache *SoftplusCache) *Var[T] {
	if a32, ok := any(a).(*Var[float32]); ok {
		return any(softplus32(any(t).(*Tape[float32]), a32, cache)).(*Var[T])
	}
	f := func(x T) T { return T(f64.Softplus(float64(x))) }
	return t.unary("Softplus", a, f, func(x, _ T) T { return T(f64.Sigmoid(float64(x))) })
}

// softplus32 is Softplus for float32: the values are f64.Softplus32's and the derivative
// f64.Sigmoid's, computed together from one exponential (f64.SoftplusSigmoid32) and saved for the
// reverse pass when it will be needed; with cache (SoftplusCached) taken from it where the
// input's bits are those it holds.
func softplus32(t *Tape[float32], a *Var[float32], cache *SoftplusCache) *Var[float32] {
	if !t.check("Softplus", a) {
		return t.placeholder()
	}
	out := t.newVar(a.shape, false)
	av, ov := a.value, out.value
	needGrad := t.noGrad == 0 && a.requiresGrad
	var sig []float32
	switch {
	case cache != nil:
		if needGrad {
			sig = t.get(len(av), false)
			out.aux = sig
		}
		softplusCached32(av, ov, sig, cache)
	case needGrad:
		sig = t.get(len(av), false)
		out.aux = sig
		sig := sig[:len(av)]
		for i, x := range av {
			s, d := f64.SoftplusSigmoid32(x)
			ov[i], sig[i] = s, float32(d)
		}
	default:
		for i, x := range av {
			ov[i] = f64.Softplus32(x)
		}
	}
	t.record(out, func() {
		ga := a.gradBuf()
		og := out.grad
		if len(og) == 0 {
			return
		}
		sig := sig[:len(og)]
		ga = ga[:len(og)]
		for i, g := range og {
			ga[i] += g * sig[i]
		}
	}, a)
	return out
}

// GELU returns the exact (erf) GELU x·Φ(x) elementwise (torch.nn.functional.gelu with
// approximate='none'); the gradient is Φ(x) + x·φ(x).
func (t *Tape[T]) GELU(a *Var[T]) *Var[T] {
	return t.unary("GELU", a, func(x T) T {
		xf := float64(x)
		return T(0.5 * xf * (1 + math.Erf(xf/math.Sqrt2)))
	}, func(x, _ T) T {
		xf := float64(x)
		cdf := 0.5 * (1 + math.Erf(xf/math.Sqrt2))
		pdf := math.Exp(-0.5*xf*xf) / math.Sqrt(2*math.Pi)
		return T(cdf + xf*pdf)
	})
}

// Clamp limits every element to [lo, hi] (torch.clamp(x, lo, hi)); the gradient is 1 where
// lo ≤ x ≤ hi and 0 outside, as in PyTorch. Use ±Inf for a one-sided clamp.
func (t *Tape[T]) Clamp(a *Var[T], lo, hi T) *Var[T] {
	if lo > hi {
		return t.failf("Clamp: lo %v > hi %v", lo, hi)
	}
	return t.unary("Clamp", a, func(x T) T { return min(max(x, lo), hi) }, func(x, _ T) T {
		if x >= lo && x <= hi {
			return 1
		}
		return 0
	})
}
