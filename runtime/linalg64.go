package runtime

import (
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// Load-time linear algebra in float64 (small matrices: M × M and M × d).

// cholJitter is bayesianize's relative Cholesky jitter (MATH.md §1).
const cholJitter = 1e-4

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// gram returns Z Zᵀ (+ diag(d²) when d is not nil) for Z rows × cols.
func gram(z []float64, rows, cols int, d []float64) []float64 {
	g := kernels.MatMul(false, true, rows, rows, cols, z, z)
	for i := range d {
		g[i*rows+i] += d[i] * d[i]
	}
	return g
}

// jchol returns the jittered lower Cholesky factor of the n×n matrix a (a is not modified).
func jchol(a []float64, n int) ([]float64, error) {
	l := append([]float64(nil), a...)
	if _, err := kernels.JitteredCholesky(l, n, cholJitter); err != nil {
		return nil, err
	}
	return l, nil
}

// vecToChol builds the lower-triangular d×d matrix of bayesianize's vec_to_chol: the first d
// entries, through softplus, form the diagonal; the rest fill the strict lower triangle row by row.
func vecToChol(v []float32, d int) []float64 {
	l := make([]float64, d*d)
	for i := 0; i < d; i++ {
		l[i*d+i] = softplus(float64(v[i]))
	}
	k := d
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			l[i*d+j] = float64(v[k])
			k++
		}
	}
	return l
}

// logDiagSum returns Σ log L_ii.
func logDiagSum(l []float64, n int) float64 {
	s := 0.0
	for i := 0; i < n; i++ {
		s += math.Log(l[i*n+i])
	}
	return s
}
