package fa

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/edgebnn/edgebnn/kernels"
)

// errNotPD reports a matrix that is not (numerically) positive definite.
var errNotPD = kernels.ErrNotPositiveDefinite

// cholesky returns the lower Cholesky factor of the n×n symmetric positive definite matrix a
// (row-major; only the lower triangle is read; a is not modified).
func cholesky(a []float64, n int) ([]float64, error) {
	l := slices.Clone(a[:n*n])
	if err := kernels.Cholesky(l, n); err != nil {
		return nil, err
	}
	return l, nil
}

// spdInverse returns the inverse of an n×n symmetric positive definite matrix.
func spdInverse(a []float64, n int) ([]float64, error) {
	l, err := cholesky(a, n)
	if err != nil {
		return nil, err
	}
	inv := make([]float64, n*n)
	kernels.CholeskyInverse(inv, l, n)
	return inv, nil
}

// logDetChol is log|L Lᵀ| for a Cholesky factor L.
func logDetChol(l []float64, n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += 2 * math.Log(l[i*n+i])
	}
	return s
}

// orthonormalColumns returns a d×k matrix with orthonormal columns: the Q of the reduced QR
// decomposition of a d×k standard-normal matrix (thesis 001 §4.4). Modified Gram–Schmidt is
// applied twice for numerical orthogonality. It needs k ≤ d.
func orthonormalColumns(rng *rand.Rand, d, k int) []float64 {
	q := make([]float64, d*k)
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	gramSchmidt(q, d, k)
	return q
}

// gramSchmidt orthonormalises the columns of the d×k row-major matrix q in place (twice-applied
// modified Gram–Schmidt). A column that becomes numerically zero is replaced by a unit vector
// orthogonal to the previous ones where possible.
func gramSchmidt(q []float64, d, k int) {
	for pass := 0; pass < 2; pass++ {
		for j := 0; j < k; j++ {
			for p := 0; p < j; p++ {
				dot := 0.0
				for i := 0; i < d; i++ {
					dot += q[i*k+p] * q[i*k+j]
				}
				for i := 0; i < d; i++ {
					q[i*k+j] -= dot * q[i*k+p]
				}
			}
			nrm := 0.0
			for i := 0; i < d; i++ {
				nrm += q[i*k+j] * q[i*k+j]
			}
			nrm = math.Sqrt(nrm)
			if nrm == 0 {
				continue
			}
			for i := 0; i < d; i++ {
				q[i*k+j] /= nrm
			}
		}
	}
}

// symEigen returns the eigenvalues (ascending) and eigenvectors (columns of the n×n row-major
// matrix v) of the symmetric matrix a by cyclic Jacobi rotations. Intended for small n.
func symEigen(a []float64, n int) (vals, v []float64) {
	m := append([]float64(nil), a...)
	v = make([]float64, n*n)
	for i := 0; i < n; i++ {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		off, tot := 0.0, 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j {
					off += m[i*n+j] * m[i*n+j]
				}
				tot += m[i*n+j] * m[i*n+j]
			}
		}
		if off <= 1e-30*tot || off == 0 {
			break
		}
		for p := 0; p < n-1; p++ {
			for q := p + 1; q < n; q++ {
				apq := m[p*n+q]
				if apq == 0 {
					continue
				}
				theta := (m[q*n+q] - m[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := 0; k < n; k++ { // columns p, q
					mkp, mkq := m[k*n+p], m[k*n+q]
					m[k*n+p] = c*mkp - s*mkq
					m[k*n+q] = s*mkp + c*mkq
				}
				for k := 0; k < n; k++ { // rows p, q
					mpk, mqk := m[p*n+k], m[q*n+k]
					m[p*n+k] = c*mpk - s*mqk
					m[q*n+k] = s*mpk + c*mqk
				}
				for k := 0; k < n; k++ {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p] = c*vkp - s*vkq
					v[k*n+q] = s*vkp + c*vkq
				}
			}
		}
	}
	vals = make([]float64, n)
	idx := make([]int, n)
	for i := range vals {
		vals[i] = m[i*n+i]
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
	sv, svec := make([]float64, n), make([]float64, n*n)
	for c, j := range idx {
		sv[c] = vals[j]
		for r := 0; r < n; r++ {
			svec[r*n+c] = v[r*n+j]
		}
	}
	return sv, svec
}

// symSqrt returns the symmetric square root of a symmetric positive semi-definite matrix (negative
// eigenvalues from rounding are clamped to zero).
func symSqrt(a []float64, n int) []float64 {
	vals, v := symEigen(a, n)
	out := make([]float64, n*n)
	for k := 0; k < n; k++ {
		s := math.Sqrt(math.Max(vals[k], 0))
		for i := 0; i < n; i++ {
			vi := v[i*n+k] * s
			for j := 0; j < n; j++ {
				out[i*n+j] += vi * v[j*n+k]
			}
		}
	}
	return out
}

// topEigen returns the k largest eigenvalues (descending) of the symmetric n×n matrix a and their
// eigenvectors as the columns of an n×k row-major matrix. It reduces a to tridiagonal form by
// Householder reflections (O(n³)), finds the eigenvalues by Sturm-sequence bisection and the
// eigenvectors by inverse iteration on the tridiagonal matrix, then transforms them back.
func topEigen(a []float64, n, k int) (vals, vecs []float64) {
	m := append([]float64(nil), a...)
	diag, off := make([]float64, n), make([]float64, n) // off[i] couples i and i+1
	hv := make([][]float64, 0, n)                       // Householder vectors, unit norm, for rows k+1..
	p := make([]float64, n)
	for c := 0; c < n-2; c++ {
		// x = m[c+1:, c]
		x := make([]float64, n-c-1)
		nrm := 0.0
		for i := range x {
			x[i] = m[(c+1+i)*n+c]
			nrm += x[i] * x[i]
		}
		nrm = math.Sqrt(nrm)
		alpha := -math.Copysign(nrm, x[0])
		v := x
		v[0] -= alpha
		vn := 0.0
		for _, e := range v {
			vn += e * e
		}
		vn = math.Sqrt(vn)
		if vn == 0 || nrm == 0 {
			hv = append(hv, nil)
			continue
		}
		for i := range v {
			v[i] /= vn
		}
		hv = append(hv, v)
		// Trailing block B = m[c+1:, c+1:]: B ← B − 2(v wᵀ + w vᵀ), w = Bv − (vᵀBv) v.
		s := n - c - 1
		pp := p[:s]
		for i := 0; i < s; i++ {
			row := m[(c+1+i)*n+c+1 : (c+1+i)*n+n]
			t := 0.0
			for j, e := range row {
				t += e * v[j]
			}
			pp[i] = t
		}
		kappa := 0.0
		for i := range pp {
			kappa += v[i] * pp[i]
		}
		for i := range pp {
			pp[i] -= kappa * v[i]
		}
		for i := 0; i < s; i++ {
			row := m[(c+1+i)*n+c+1 : (c+1+i)*n+n]
			vi, wi := v[i], pp[i]
			for j := range row {
				row[j] -= 2 * (vi*pp[j] + wi*v[j])
			}
		}
		// Column c below the diagonal becomes (alpha, 0, …).
		m[(c+1)*n+c], m[c*n+c+1] = alpha, alpha
		for i := c + 2; i < n; i++ {
			m[i*n+c], m[c*n+i] = 0, 0
		}
	}
	for i := 0; i < n; i++ {
		diag[i] = m[i*n+i]
		if i+1 < n {
			off[i] = m[(i+1)*n+i]
		}
	}
	// Gershgorin interval.
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		r := 0.0
		if i > 0 {
			r += math.Abs(off[i-1])
		}
		if i+1 < n {
			r += math.Abs(off[i])
		}
		lo = math.Min(lo, diag[i]-r)
		hi = math.Max(hi, diag[i]+r)
	}
	scale := math.Max(math.Abs(lo), math.Abs(hi))
	if scale == 0 {
		scale = 1
	}
	// count returns the number of eigenvalues < x.
	count := func(x float64) int {
		cnt := 0
		q := 1.0
		for i := 0; i < n; i++ {
			b2 := 0.0
			if i > 0 {
				b2 = off[i-1] * off[i-1]
			}
			q = diag[i] - x - b2/q
			if q == 0 {
				q = -1e-300
			}
			if q < 0 {
				cnt++
			}
		}
		return cnt
	}
	vals = make([]float64, k)
	vecs = make([]float64, n*k)
	ys := make([][]float64, 0, k)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	for e := 0; e < k; e++ {
		target := n - 1 - e // ascending index
		a0, b0 := lo, hi
		for it := 0; it < 200 && b0-a0 > 1e-15*scale; it++ {
			mid := 0.5 * (a0 + b0)
			if count(mid) > target {
				b0 = mid
			} else {
				a0 = mid
			}
		}
		lam := 0.5 * (a0 + b0)
		vals[e] = lam
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		shift := lam + 1e-10*scale
		for it := 0; it < 4; it++ {
			tridiagSolve(diag, off, shift, y)
			// Orthogonalise against eigenvectors of (nearly) equal eigenvalues.
			for j, prev := range ys {
				if math.Abs(vals[j]-lam) > 1e-3*scale {
					continue
				}
				d := 0.0
				for i := range y {
					d += y[i] * prev[i]
				}
				for i := range y {
					y[i] -= d * prev[i]
				}
			}
			nrm := 0.0
			for _, t := range y {
				nrm += t * t
			}
			nrm = math.Sqrt(nrm)
			if nrm == 0 || math.IsInf(nrm, 0) || math.IsNaN(nrm) {
				for i := range y {
					y[i] = rng.NormFloat64()
				}
				continue
			}
			for i := range y {
				y[i] /= nrm
			}
		}
		ys = append(ys, y)
	}
	// Back-transform: x = H_0 H_1 … H_{n-3} y.
	for e, y := range ys {
		x := append([]float64(nil), y...)
		for c := len(hv) - 1; c >= 0; c-- {
			v := hv[c]
			if v == nil {
				continue
			}
			seg := x[c+1:]
			d := 0.0
			for i, t := range v {
				d += t * seg[i]
			}
			for i, t := range v {
				seg[i] -= 2 * d * t
			}
		}
		for i := 0; i < n; i++ {
			vecs[i*k+e] = x[i]
		}
	}
	return vals, vecs
}

// tridiagSolve overwrites y with (T − shift·I)⁻¹ y for the symmetric tridiagonal T (diag, off),
// by Gaussian elimination with partial pivoting; exactly singular pivots are nudged.
func tridiagSolve(diag, off []float64, shift float64, y []float64) {
	n := len(diag)
	// Rows of the banded upper factor: u0 (diagonal), u1, u2 (two superdiagonals).
	u0, u1, u2 := make([]float64, n), make([]float64, n), make([]float64, n)
	// Current row being eliminated: (a, b, c) at columns i, i+1, i+2.
	tiny := 1e-300
	a := diag[0] - shift
	b := 0.0
	if n > 1 {
		b = off[0]
	}
	c := 0.0
	for i := 0; i < n; i++ {
		if i == n-1 {
			if a == 0 {
				a = tiny
			}
			u0[i], u1[i], u2[i] = a, 0, 0
			break
		}
		// Next row: (off[i], diag[i+1]-shift, off[i+1]) at columns i, i+1, i+2.
		na, nb, nc := off[i], diag[i+1]-shift, 0.0
		if i+2 < n {
			nc = off[i+1]
		}
		if math.Abs(na) > math.Abs(a) { // swap rows i and i+1
			a, b, c, na, nb, nc = na, nb, nc, a, b, c
			y[i], y[i+1] = y[i+1], y[i]
		}
		if a == 0 {
			a = tiny
		}
		f := na / a
		u0[i], u1[i], u2[i] = a, b, c
		y[i+1] -= f * y[i]
		a, b, c = nb-f*b, nc-f*c, 0
	}
	for i := n - 1; i >= 0; i-- {
		s := y[i]
		if i+1 < n {
			s -= u1[i] * y[i+1]
		}
		if i+2 < n {
			s -= u2[i] * y[i+2]
		}
		y[i] = s / u0[i]
	}
}
