package autodiff

import (
	"math"
	"math/rand/v2"
)

// MatMul returns the matrix product a·b of 2-D tensors (m×k)·(k×n) → (m×n) (torch.matmul for
// matrices).
func (t *Tape[T]) MatMul(a, b *Var[T]) *Var[T] { return t.MatMulTrans(a, b, false, false) }

// MatMulTrans returns op(a)·op(b) where op transposes its argument when the matching flag is
// set (torch.matmul(a.T if transA else a, b.T if transB else b)), without materialising the
// transposes. op(a) must be m×k and op(b) k×n.
func (t *Tape[T]) MatMulTrans(a, b *Var[T], transA, transB bool) *Var[T] {
	if !t.check("MatMul", a, b) {
		return t.placeholder()
	}
	if len(a.shape) != 2 || len(b.shape) != 2 {
		return t.failf("MatMul: need 2-D operands, got shapes %v and %v", a.shape, b.shape)
	}
	m, k := a.shape[0], a.shape[1]
	if transA {
		m, k = k, m
	}
	k2, n := b.shape[0], b.shape[1]
	if transB {
		k2, n = n, k2
	}
	if k != k2 {
		return t.failf("MatMul: inner dimensions differ: op(a) is %d×%d, op(b) is %d×%d (shapes %v, %v, transA=%v, transB=%v)",
			m, k, k2, n, a.shape, b.shape, transA, transB)
	}
	lda, ldb := a.shape[1], b.shape[1]
	out := t.newVar([]int{m, n}, false)
	t.gemm(transA, transB, m, n, k, 1, a.value, lda, b.value, ldb, 0, out.value, n)
	t.record(out, func() {
		g := out.grad
		if ga := a.gradBuf(); ga != nil {
			if !transA { // dA (m×k) += dC·op(B)ᵀ
				t.gemm(false, !transB, m, k, n, 1, g, n, b.value, ldb, 1, ga, lda)
			} else { // dA (k×m) += op(B)·dCᵀ
				t.gemm(transB, true, k, m, n, 1, b.value, ldb, g, n, 1, ga, lda)
			}
		}
		if gb := b.gradBuf(); gb != nil {
			if !transB { // dB (k×n) += op(A)ᵀ·dC
				t.gemm(!transA, false, k, n, m, 1, a.value, lda, g, n, 1, gb, ldb)
			} else { // dB (n×k) += dCᵀ·op(A)
				t.gemm(true, transA, n, k, m, 1, g, n, a.value, lda, 1, gb, ldb)
			}
		}
	}, a, b)
	return out
}

// Linear returns x·wᵀ + b for x (N, in), weight w (out, in) and optional bias b (out) or nil:
// torch.nn.functional.linear.
func (t *Tape[T]) Linear(x, w, b *Var[T]) *Var[T] {
	if b == nil {
		return t.MatMulTrans(x, w, false, true)
	}
	if !t.check("Linear", x, w, b) {
		return t.placeholder()
	}
	if len(w.shape) != 2 || len(b.shape) != 1 || b.shape[0] != w.shape[0] {
		return t.failf("Linear: weight shape %v and bias shape %v do not match", w.shape, b.shape)
	}
	y := t.MatMulTrans(x, w, false, true)
	if t.err != nil {
		return y
	}
	// Fused row-broadcast bias add, written in place of a separate Add node.
	nout := w.shape[0]
	out := t.newVar(y.shape, false)
	for r := 0; r < len(y.value); r += nout {
		dst, src := out.value[r:r+nout], y.value[r:r+nout]
		for j := range dst {
			dst[j] = src[j] + b.value[j]
		}
	}
	t.record(out, func() {
		g := out.grad
		if gy := y.gradBuf(); gy != nil {
			for i, x := range g {
				gy[i] += x
			}
		}
		if gbias := b.gradBuf(); gbias != nil {
			for r := 0; r < len(g); r += nout {
				for j, x := range g[r : r+nout] {
					gbias[j] += x
				}
			}
		}
	}, y, b)
	return out
}

// rowsLast returns the number of rows and the row length of a tensor viewed as (rows, last).
func rowsLast(shape []int) (rows, n int) {
	if len(shape) == 0 {
		return 1, 1
	}
	n = shape[len(shape)-1]
	rows = 1
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	return rows, n
}

// maxSumExp returns m = max(x) and s = Σ exp(x − m), so that log Σ exp(x) = m + log s.
func maxSumExp[T Float](x []T) (m, s float64) {
	if len(x) == 0 {
		return math.Inf(-1), 1
	}
	m = float64(x[0])
	for _, v := range x[1:] {
		m = max(m, float64(v))
	}
	if math.IsInf(m, 0) {
		return m, 1
	}
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m, s
}

// lastDimOp applies fwd to each row of a along its last dimension, writing the row y of the
// result, and records bwd, which adds to dst a row's input gradient given its output y and
// output gradient g.
func (t *Tape[T]) lastDimOp(name string, a *Var[T], fwd func(x, y []T), bwd func(y, g, dst []T)) *Var[T] {
	if !t.check(name, a) {
		return t.placeholder()
	}
	rows, n := rowsLast(a.shape)
	out := t.newVar(a.shape, false)
	for r := 0; r < rows; r++ {
		fwd(a.value[r*n:(r+1)*n], out.value[r*n:(r+1)*n])
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for r := 0; r < rows; r++ {
			bwd(out.value[r*n:(r+1)*n], out.grad[r*n:(r+1)*n], ga[r*n:(r+1)*n])
		}
	}, a)
	return out
}

// Softmax returns the softmax along the last dimension (torch.softmax(a, dim=-1)).
func (t *Tape[T]) Softmax(a *Var[T]) *Var[T] {
	return t.lastDimOp("Softmax", a, func(x, y []T) {
		m, sum := maxSumExp(x)
		for i, v := range x {
			y[i] = T(math.Exp(float64(v)-m) / sum)
		}
	}, func(y, g, dst []T) {
		var s T
		for i := range y {
			s += g[i] * y[i]
		}
		for i := range y {
			dst[i] += y[i] * (g[i] - s)
		}
	})
}

// LogSoftmax returns x − logsumexp(x) along the last dimension, computed stably
// (torch.log_softmax(a, dim=-1)).
func (t *Tape[T]) LogSoftmax(a *Var[T]) *Var[T] {
	return t.lastDimOp("LogSoftmax", a, func(x, y []T) {
		m, sum := maxSumExp(x)
		ls := math.Log(sum)
		for i, v := range x {
			y[i] = T(float64(v) - m - ls)
		}
	}, func(y, g, dst []T) {
		var s T
		for _, v := range g {
			s += v
		}
		for i := range y {
			dst[i] += g[i] - T(math.Exp(float64(y[i])))*s
		}
	})
}

// NLLPerExample returns the per-example cross-entropy −log softmax(logits)[i, labels[i]] of
// logits (N, C) and integer labels in [0, C): shape (N,)
// (torch.nn.functional.cross_entropy(logits, labels, reduction='none')).
func (t *Tape[T]) NLLPerExample(logits *Var[T], labels []int) *Var[T] {
	if !t.check("NLLPerExample", logits) {
		return t.placeholder()
	}
	if len(logits.shape) != 2 || logits.shape[0] != len(labels) {
		return t.failf("NLLPerExample: logits shape %v does not match %d labels (need (N, C))", logits.shape, len(labels))
	}
	nb, c := logits.shape[0], logits.shape[1]
	for i, y := range labels {
		if y < 0 || y >= c {
			return t.failf("NLLPerExample: label %d of example %d out of range [0, %d)", y, i, c)
		}
	}
	out := t.newVar([]int{nb}, false)
	lab := t.getInts(nb)
	copy(lab, labels)
	out.ints = lab
	lses := t.get(nb, false)
	out.aux = lses
	for i := 0; i < nb; i++ {
		x := logits.value[i*c : (i+1)*c]
		m, sum := maxSumExp(x)
		lses[i] = T(m + math.Log(sum))
		out.value[i] = T((m - float64(x[lab[i]])) + math.Log(sum))
	}
	t.record(out, func() {
		ga := logits.gradBuf()
		for i := 0; i < nb; i++ {
			g := out.grad[i]
			if g == 0 {
				continue
			}
			x, dst := logits.value[i*c:(i+1)*c], ga[i*c:(i+1)*c]
			lse := float64(lses[i])
			for j, v := range x {
				dst[j] += g * T(math.Exp(float64(v)-lse))
			}
			dst[lab[i]] -= g
		}
	}, logits)
	return out
}

// CrossEntropy returns the mean over the batch of NLLPerExample(logits, labels)
// (torch.nn.functional.cross_entropy with reduction='mean'); a scalar.
func (t *Tape[T]) CrossEntropy(logits *Var[T], labels []int) *Var[T] {
	return t.Mean(t.NLLPerExample(logits, labels))
}

// GaussianNLLPerElement returns ½·(τ·(y−μ)² − log τ + log 2π) elementwise for mean mu, target y
// and precision tau, all broadcast together as in Add. A fixed precision is a constant
// (t.Scalar(τ)); a learned one is any positive Var, e.g. Softplus or Exp of a parameter.
func (t *Tape[T]) GaussianNLLPerElement(mu, y, tau *Var[T]) *Var[T] {
	if !t.check("GaussianNLL", mu, y, tau) {
		return t.placeholder()
	}
	sq := t.Square(t.Sub(y, mu))
	v := t.Sub(t.Mul(tau, sq), t.Log(tau))
	return t.Scale(t.AddScalar(v, T(math.Log(2*math.Pi))), 0.5)
}

// GaussianNLL returns the mean of GaussianNLLPerElement(mu, y, tau): the average Gaussian
// negative log-likelihood with precision τ (torch.nn.GaussianNLLLoss(full=True) with var = 1/τ).
func (t *Tape[T]) GaussianNLL(mu, y, tau *Var[T]) *Var[T] {
	return t.Mean(t.GaussianNLLPerElement(mu, y, tau))
}

// Dropout zeroes each element with probability p and scales the survivors by 1/(1−p) when
// training is true (torch.nn.functional.dropout); in eval mode, or for p = 0, it returns a
// unchanged. p must lie in [0, 1]; p = 1 gives zeros.
func (t *Tape[T]) Dropout(a *Var[T], p float64, training bool, rng *rand.Rand) *Var[T] {
	if !t.check("Dropout", a) {
		return t.placeholder()
	}
	if !(p >= 0 && p <= 1) {
		return t.failf("Dropout: probability %v outside [0, 1]", p)
	}
	if !training || p == 0 {
		return a
	}
	if rng == nil {
		return t.failf("Dropout: nil random source in training mode")
	}
	out := t.newVar(a.shape, false)
	mask := t.get(len(a.value), false)
	out.aux = mask
	keep := T(0)
	if p < 1 {
		keep = T(1 / (1 - p))
	}
	for i, x := range a.value {
		if rng.Float64() < p {
			mask[i] = 0
		} else {
			mask[i] = keep
		}
		out.value[i] = x * mask[i]
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for i, g := range out.grad {
			ga[i] += g * mask[i]
		}
	}, a)
	return out
}
