package autodiff

import (
	"fmt"
	"math"
)

// Cholesky returns the lower-triangular factor L of the symmetric positive-definite n×n matrix
// a, a = L·Lᵀ (torch.linalg.cholesky). Only a's lower triangle is read. The gradient is the
// symmetrised one of Murray (2016) / PyTorch: with Φ(X) the lower triangle of X with its diagonal
// halved, S = L⁻ᵀ Φ(Lᵀ·tril(L̄)) L⁻¹ and Ā = (S + Sᵀ)/2. A matrix that is not positive definite
// is an error.
func (t *Tape[T]) Cholesky(a *Var[T]) *Var[T] { return t.cholesky("Cholesky", a, 0) }

// JitteredCholesky returns Cholesky(a + j·I) with j = rel·mean(diag(a)) treated as a constant
// (no gradient through j): bayesianize's _jittered_cholesky, which uses rel = 1e-4 on a detached
// diagonal mean.
func (t *Tape[T]) JitteredCholesky(a *Var[T], rel T) *Var[T] {
	return t.cholesky("JitteredCholesky", a, rel)
}

func (t *Tape[T]) cholesky(name string, a *Var[T], rel T) *Var[T] {
	if !t.check(name, a) {
		return t.placeholder()
	}
	if len(a.shape) != 2 || a.shape[0] != a.shape[1] {
		return t.failf("%s: need a square matrix, got shape %v", name, a.shape)
	}
	n := a.shape[0]
	out := t.newVar(a.shape, false)
	l := out.value
	copy(l, a.value)
	if rel != 0 && n > 0 {
		var s float64
		for i := 0; i < n; i++ {
			s += float64(a.value[i*n+i])
		}
		j := T(float64(rel) * s / float64(n))
		for i := 0; i < n; i++ {
			l[i*n+i] += j
		}
	}
	if err := cholesky(l, n); err != nil {
		return t.fail(fmt.Errorf("autodiff: %s of %d×%d matrix: %w", name, n, n, err))
	}
	t.record(out, func() {
		ga := a.gradBuf()
		gl := t.get(n*n, false)
		s := t.get(n*n, false)
		defer t.put(gl)
		defer t.put(s)
		// tril(L̄)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if j <= i {
					gl[i*n+j] = out.grad[i*n+j]
				} else {
					gl[i*n+j] = 0
				}
			}
		}
		// P = Φ(Lᵀ·tril(L̄))
		gemm(true, false, n, n, n, 1, l, n, gl, n, 0, s, n)
		for i := 0; i < n; i++ {
			s[i*n+i] *= 0.5
			for j := i + 1; j < n; j++ {
				s[i*n+j] = 0
			}
		}
		trsm(false, true, false, n, n, l, n, s, n) // P·L⁻¹
		trsm(true, true, true, n, n, l, n, s, n)   // L⁻ᵀ·(P·L⁻¹)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				ga[i*n+j] += 0.5 * (s[i*n+j] + s[j*n+i])
			}
		}
	}, a)
	return out
}

// SolveTriangular solves op(A)·X = B (left = true) or X·op(A) = B (left = false) for X, with A
// square and triangular (lower or upper; only that triangle is read) and op(A) = Aᵀ when trans
// is set. B is 2-D: (m, n) with A m×m (left) or n×n (right). Equivalent to
// torch.linalg.solve_triangular(op(A), B, upper=…, left=left). The gradient with respect to A
// is restricted to A's triangle.
func (t *Tape[T]) SolveTriangular(a, b *Var[T], left, lower, trans bool) *Var[T] {
	if !t.check("SolveTriangular", a, b) {
		return t.placeholder()
	}
	if len(a.shape) != 2 || a.shape[0] != a.shape[1] || len(b.shape) != 2 {
		return t.failf("SolveTriangular: need a square A and a 2-D B, got shapes %v and %v", a.shape, b.shape)
	}
	k := a.shape[0]
	m, n := b.shape[0], b.shape[1]
	if (left && m != k) || (!left && n != k) {
		return t.failf("SolveTriangular: A %v does not match B %v (left=%v)", a.shape, b.shape, left)
	}
	for i := 0; i < k; i++ {
		if a.value[i*k+i] == 0 {
			return t.failf("SolveTriangular: A is singular (zero diagonal entry %d)", i)
		}
	}
	out := t.newVar(b.shape, false)
	copy(out.value, b.value)
	trsm(left, lower, trans, m, n, a.value, k, out.value, n)
	t.record(out, func() {
		gb := t.get(m*n, false)
		defer t.put(gb)
		copy(gb, out.grad)
		// B̄ = op(A)⁻ᵀ·X̄ (left) or X̄·op(A)⁻ᵀ (right).
		trsm(left, lower, !trans, m, n, a.value, k, gb, n)
		if gB := b.gradBuf(); gB != nil {
			for i, v := range gb {
				gB[i] += v
			}
		}
		ga := a.gradBuf()
		if ga == nil {
			return
		}
		// op(A)̄ = −B̄·Xᵀ (left, k×k) or −Xᵀ·B̄ (right, k×k).
		gm := t.get(k*k, false)
		defer t.put(gm)
		if left {
			gemm(false, true, k, k, n, -1, gb, n, out.value, n, 0, gm, k)
		} else {
			gemm(true, false, k, k, m, -1, out.value, n, gb, n, 0, gm, k)
		}
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				if (lower && j > i) || (!lower && j < i) {
					continue
				}
				if trans {
					ga[i*k+j] += gm[j*k+i]
				} else {
					ga[i*k+j] += gm[i*k+j]
				}
			}
		}
	}, a, b)
	return out
}

// CholeskySolve returns X = (L·Lᵀ)⁻¹·B for the lower Cholesky factor l (n×n) and B (n, k):
// torch.cholesky_solve(B, L). It is two SolveTriangular calls, so gradients flow to both.
func (t *Tape[T]) CholeskySolve(l, b *Var[T]) *Var[T] {
	y := t.SolveTriangular(l, b, true, true, false)
	return t.SolveTriangular(l, y, true, true, true)
}

// LogDetChol returns log det(L·Lᵀ) = 2·Σ log L_ii for a lower Cholesky factor l (n×n), as a
// scalar (torch.logdet of the factored matrix).
func (t *Tape[T]) LogDetChol(l *Var[T]) *Var[T] {
	if !t.check("LogDetChol", l) {
		return t.placeholder()
	}
	if len(l.shape) != 2 || l.shape[0] != l.shape[1] {
		return t.failf("LogDetChol: need a square matrix, got shape %v", l.shape)
	}
	n := l.shape[0]
	out := t.newVar(nil, false)
	var s float64
	for i := 0; i < n; i++ {
		s += math.Log(float64(l.value[i*n+i]))
	}
	out.value[0] = T(2 * s)
	t.record(out, func() {
		gl := l.gradBuf()
		g := out.grad[0]
		for i := 0; i < n; i++ {
			gl[i*n+i] += 2 * g / l.value[i*n+i]
		}
	}, l)
	return out
}
