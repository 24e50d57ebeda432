package fa

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/kernels"
)

// Moments accumulates the sample mean and the (maximum-likelihood, 1/T) sample covariance of a
// stream of vectors, for the batch FA reference. Observations are shifted by the first one and
// accumulated in blocks: each block's outer products are formed in float32 by kernels.Gemm and
// added to float64 sums. Memory is O(D²).
type Moments struct {
	d, n      int
	shift     []float64
	sum       []float64 // Σ (θ − shift)
	outer     []float64 // Σ (θ − shift)(θ − shift)ᵀ, D×D
	block     []float32 // D × blockSize (transposed observations)
	blockN    int
	blockProd []float32
}

const momentsBlock = 128

// NewMoments returns an empty accumulator for vectors of length d.
func NewMoments(d int) (*Moments, error) {
	if d < 1 || d > 1<<15 {
		return nil, fmt.Errorf("fa: moments: dimension %d out of range [1, 32768]", d)
	}
	return &Moments{d: d, sum: make([]float64, d), outer: make([]float64, d*d),
		block: make([]float32, d*momentsBlock), blockProd: make([]float32, d*d)}, nil
}

// Count is the number of vectors added.
func (s *Moments) Count() int { return s.n }

// Add accumulates one vector.
func (s *Moments) Add(theta []float64) error {
	if len(theta) != s.d {
		return fmt.Errorf("fa: moments: vector has %d values, want %d", len(theta), s.d)
	}
	if s.shift == nil {
		s.shift = append([]float64(nil), theta...)
	}
	for i, v := range theta {
		x := v - s.shift[i]
		s.sum[i] += x
		s.block[i*momentsBlock+s.blockN] = float32(x)
	}
	s.n++
	s.blockN++
	if s.blockN == momentsBlock {
		s.flush()
	}
	return nil
}

func (s *Moments) flush() {
	if s.blockN == 0 {
		return
	}
	d := s.d
	for i := 0; i < d; i++ {
		row := s.block[i*momentsBlock : (i+1)*momentsBlock]
		clear(row[s.blockN:])
	}
	kernels.Gemm(false, true, d, d, momentsBlock, 1, s.block, momentsBlock, s.block, momentsBlock, 0, s.blockProd, d)
	for i, v := range s.blockProd {
		s.outer[i] += float64(v)
	}
	s.blockN = 0
}

// Mean and Covariance return the sample mean and the 1/T sample covariance (D×D).
func (s *Moments) Mean() []float64 {
	m := make([]float64, s.d)
	for i := range m {
		m[i] = s.shift[i] + s.sum[i]/float64(s.n)
	}
	return m
}

// Covariance returns the maximum-likelihood (1/T) sample covariance, D×D row-major.
func (s *Moments) Covariance() []float64 {
	s.flush()
	d, n := s.d, float64(s.n)
	c := make([]float64, d*d)
	for i := 0; i < d; i++ {
		mi := s.sum[i] / n
		for j := 0; j < d; j++ {
			c[i*d+j] = s.outer[i*d+j]/n - mi*s.sum[j]/n
		}
	}
	return c
}

// MLConfig configures the batch maximum-likelihood FA fit.
type MLConfig struct {
	// Tol stops EM when the per-observation log-likelihood changes by less than
	// Tol·(1 + |ℓ|) between iterations; 0 means 1e-10.
	Tol float64
	// MaxIter bounds the EM iterations; 0 means 5000.
	MaxIter int
	// Init warm-starts EM (e.g. from the fit at a smaller sample size); nil starts from
	// probabilistic PCA of the covariance.
	Init *Model
}

// MLResult reports a batch fit.
type MLResult struct {
	Iterations int
	// LogLik is the average log-likelihood per observation at the fit.
	LogLik    float64
	Converged bool
}

// FitML fits F and ψ of an FA model with k factors to a sample mean and covariance (D×D, 1/T
// normalised) by EM until convergence (the classic batch algorithm; each iteration costs
// O(D²K)). Variances are kept above 1e-6 of the sample variances (Heywood cases).
func FitML(mean, cov []float64, d, k int, cfg MLConfig) (*Model, MLResult, error) {
	if d < 1 || k < 1 || k > d || len(mean) != d || len(cov) != d*d {
		return nil, MLResult{}, fmt.Errorf("fa: fit: need 1 ≤ k (%d) ≤ d (%d), a mean of d values (%d) and a d×d covariance (%d values)",
			k, d, len(mean), len(cov))
	}
	tol, maxIter := cfg.Tol, cfg.MaxIter
	if tol <= 0 {
		tol = 1e-10
	}
	if maxIter <= 0 {
		maxIter = 5000
	}
	floor := make([]float64, d)
	for i := 0; i < d; i++ {
		v := cov[i*d+i]
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, MLResult{}, fmt.Errorf("fa: fit: covariance diagonal %d is %g", i, v)
		}
		floor[i] = math.Max(1e-6*v, 1e-300)
	}
	m := &Model{D: d, K: k, Mean: append([]float64(nil), mean...)}
	if cfg.Init != nil {
		if cfg.Init.D != d || cfg.Init.K != k {
			return nil, MLResult{}, fmt.Errorf("fa: fit: initial model is %d×%d, want %d×%d", cfg.Init.D, cfg.Init.K, d, k)
		}
		m.F = append([]float64(nil), cfg.Init.F...)
		m.Psi = append([]float64(nil), cfg.Init.Psi...)
	} else {
		m.F, m.Psi = ppcaInit(cov, d, k, floor)
	}
	res := MLResult{LogLik: math.Inf(-1)}
	a := make([]float64, d*k)
	for it := 1; it <= maxIter; it++ {
		for i := 0; i < d; i++ {
			for j := 0; j < k; j++ {
				a[i*k+j] = m.F[i*k+j] / m.Psi[i]
			}
		}
		ib := kernels.MatMul(true, false, k, k, d, m.F, a) // FᵀΨ⁻¹F
		for j := 0; j < k; j++ {
			ib[j*k+j]++
		}
		l, err := cholesky(ib, k)
		if err != nil {
			return nil, res, fmt.Errorf("fa: fit: iteration %d: %w", it, err)
		}
		sigmaH := make([]float64, k*k)
		for j := 0; j < k; j++ {
			sigmaH[j*k+j] = 1
		}
		kernels.CholeskySolve(l, k, sigmaH, k)
		sa := symTimes(cov, d, a, k) // S A, D×K
		// Log-likelihood at the current parameters.
		logDet := logDetChol(l, k)
		tr := 0.0
		for i := 0; i < d; i++ {
			logDet += math.Log(m.Psi[i])
			tr += cov[i*d+i] / m.Psi[i]
		}
		asa := kernels.MatMul(true, false, k, k, d, a, sa)
		for p := 0; p < k*k; p++ {
			tr -= sigmaH[p] * asa[p] // tr((I+B)⁻¹ AᵀSA), both symmetric
		}
		ll := -0.5 * (float64(d)*math.Log(2*math.Pi) + logDet + tr)
		if math.IsNaN(ll) {
			return nil, res, fmt.Errorf("fa: fit: iteration %d: log-likelihood is NaN", it)
		}
		res.Iterations = it
		if math.Abs(ll-res.LogLik) < tol*(1+math.Abs(ll)) {
			res.LogLik, res.Converged = ll, true
			break
		}
		res.LogLik = ll
		// M-step: β = Σ_h Aᵀ; S βᵀ = (S A) Σ_h; E = Σ_h + β S βᵀ; F = S βᵀ E⁻¹.
		sbt := kernels.MatMul(false, false, d, k, k, sa, sigmaH)
		bsb := kernels.MatMul(false, false, k, k, k, sigmaH, kernels.MatMul(true, false, k, k, d, a, sbt))
		for p := range bsb {
			bsb[p] += sigmaH[p]
		}
		einv, err := spdInverse(symmetrize(bsb, k), k)
		if err != nil {
			return nil, res, fmt.Errorf("fa: fit: iteration %d: E[hhᵀ]: %w", it, err)
		}
		m.F = kernels.MatMul(false, false, d, k, k, sbt, einv)
		for i := 0; i < d; i++ {
			s := cov[i*d+i]
			for j := 0; j < k; j++ {
				s -= m.F[i*k+j] * sbt[i*k+j]
			}
			m.Psi[i] = math.Max(s, floor[i])
		}
	}
	return m, res, nil
}

// LogLikelihood is the average Gaussian log-likelihood per observation of data with sample mean
// equal to the model mean and 1/T covariance cov under the model (dense O(D³); for tests).
func LogLikelihood(m *Model, cov []float64) (float64, error) {
	s := m.Covariance()
	l, err := cholesky(s, m.D)
	if err != nil {
		return 0, fmt.Errorf("fa: log-likelihood: %w", err)
	}
	x := append([]float64(nil), cov...)
	kernels.CholeskySolve(l, m.D, x, m.D)
	tr := 0.0
	for i := 0; i < m.D; i++ {
		tr += x[i*m.D+i]
	}
	return -0.5 * (float64(m.D)*math.Log(2*math.Pi) + logDetChol(l, m.D) + tr), nil
}

func symmetrize(a []float64, n int) []float64 {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * (a[i*n+j] + a[j*n+i])
			a[i*n+j], a[j*n+i] = v, v
		}
	}
	return a
}

// symTimes returns S·X for the symmetric d×d S and d×k X, as contiguous dot products of the
// rows of S with the columns of X.
func symTimes(s []float64, d int, x []float64, k int) []float64 {
	xt := make([]float64, k*d)
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			xt[j*d+i] = x[i*k+j]
		}
	}
	out := make([]float64, d*k)
	for i := 0; i < d; i++ {
		row := s[i*d : (i+1)*d]
		for j := 0; j < k; j++ {
			out[i*k+j] = f64.Dot(row, xt[j*d:(j+1)*d])
		}
	}
	return out
}

// ppcaInit is the probabilistic-PCA start: F = V_K (Λ_K − σ²)^½, ψ = diag(S) − rowsum(F²).
func ppcaInit(cov []float64, d, k int, floor []float64) (f, psi []float64) {
	vals, vecs := topEigen(cov, d, k)
	tr := 0.0
	for i := 0; i < d; i++ {
		tr += cov[i*d+i]
	}
	top := 0.0
	for _, v := range vals {
		top += v
	}
	sigma2 := 0.0
	if d > k {
		sigma2 = math.Max((tr-top)/float64(d-k), 0)
	}
	f = make([]float64, d*k)
	for j := 0; j < k; j++ {
		s := math.Sqrt(math.Max(vals[j]-sigma2, 0))
		for i := 0; i < d; i++ {
			f[i*k+j] = vecs[i*k+j] * s
		}
	}
	psi = make([]float64, d)
	for i := 0; i < d; i++ {
		p := cov[i*d+i]
		for j := 0; j < k; j++ {
			p -= f[i*k+j] * f[i*k+j]
		}
		psi[i] = math.Max(p, math.Max(floor[i], 1e-3*cov[i*d+i]))
	}
	return f, psi
}
