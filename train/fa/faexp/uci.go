package faexp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/csvrecords"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/fa"
	"github.com/edgebnn/edgebnn/train/mcmc"
)

// UCIData is a real data set for paper 000's appendices C and D: N rows of D inputs and a target.
type UCIData struct {
	Name string
	N, D int
	X    []float64 // N×D
	Y    []float64
}

// ReadUCICSV reads a comma-separated table whose last column is the target, through
// train/data's CSV reader (a regular file within its limits; every field a finite number). A
// first line with a field that is not a number is a header and skipped (a column-name header, or
// scikit-learn's "569,30,malignant,benign"); at least 4 data rows are needed.
func ReadUCICSV(path string) (*UCIData, error) {
	lim := csvrecords.Limits{}.WithDefaults()
	f, err := readlimit.Open(path, lim.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("faexp: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	first, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("faexp: %s: %w", path, err)
	}
	var r io.Reader = io.MultiReader(strings.NewReader(first), br)
	for _, s := range strings.Split(first, ",") {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			// A header, whatever its number of fields: replaced by an empty line, so that line
			// numbers in errors stay the file's.
			r = io.MultiReader(strings.NewReader("\n"), br)
			break
		}
	}
	ds, err := data.ReadCSV(r, path, data.CSVOptions{Regression: true, Limits: lim})
	if err != nil {
		return nil, fmt.Errorf("faexp: %w", err)
	}
	if ds.N < 4 {
		return nil, fmt.Errorf("faexp: %s: %d rows, want at least 4", path, ds.N)
	}
	d := &UCIData{Name: path, N: ds.N, D: ds.Dim, X: make([]float64, len(ds.X)), Y: make([]float64, len(ds.Targets))}
	for i, v := range ds.X {
		d.X[i] = float64(v)
	}
	for i, v := range ds.Targets {
		d.Y[i] = float64(v)
	}
	return d, nil
}

// standardize rescales every column of x (n×d) to mean 0 and standard deviation 1 (population);
// a constant column is an error.
func standardize(x []float64, n, d int) error {
	for j := 0; j < d; j++ {
		m, v := 0.0, 0.0
		for i := 0; i < n; i++ {
			m += x[i*d+j]
		}
		m /= float64(n)
		for i := 0; i < n; i++ {
			v += (x[i*d+j] - m) * (x[i*d+j] - m)
		}
		sd := math.Sqrt(v / float64(n))
		if !(sd > 0) {
			return fmt.Errorf("input %d is constant", j+1)
		}
		for i := 0; i < n; i++ {
			x[i*d+j] = (x[i*d+j] - m) / sd
		}
	}
	return nil
}

// minMaxScale rescales every column of x (n×d) to [−1, 1], as LIBSVM's svm-scale made the
// "-scale" data sets of paper 000's appendix D; a constant column is an error.
func minMaxScale(x []float64, n, d int) error {
	for j := 0; j < d; j++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := 0; i < n; i++ {
			lo, hi = math.Min(lo, x[i*d+j]), math.Max(hi, x[i*d+j])
		}
		if !(hi > lo) {
			return fmt.Errorf("input %d is constant", j+1)
		}
		for i := 0; i < n; i++ {
			x[i*d+j] = 2*(x[i*d+j]-lo)/(hi-lo) - 1
		}
	}
	return nil
}

// half returns the rows of the second half of a random permutation of n rows (⌊n/2⌋ rows): paper
// 000 splits each data set into validation and test halves, tunes on the first and reports on
// the second. The permutation is PCG(seed, 0x0c1)'s.
func half(n int, seed uint64) []int {
	perm := rand.New(rand.NewPCG(seed, 0x0c1)).Perm(n)
	return perm[n-n/2:]
}

// UCIResult is one split's reference posterior, VIFA's and their distances (paper 000 Tables 7
// and 10).
type UCIResult struct {
	// N and Dim are the rows and parameters of the posterior; Alpha is the prior precision and
	// Beta the noise precision (regression; selected by evidence maximisation).
	N, Dim      int
	Alpha, Beta float64
	TrueMean    []float64
	TrueCov     []float64 // Dim×Dim
	VIFA        *fa.Model
	Distances   Distances
	FinalNLL    float64
	// RhatMax and ESSMin summarise the NUTS reference (logistic regression only).
	RhatMax, ESSMin float64
}

// PaperUCILinear is paper 000's Table 6 row for Boston housing: K = 3, 25 000 epochs, M = 100,
// L = 10, one learning rate η = 0.001 for c, F and γ, gradient norms clipped at 10, plain SGD
// updates (Algorithm 1), the last iterate.
func PaperUCILinear() RegressionConfig {
	return RegressionConfig{Epochs: 25000, Batch: 100, MCSamples: 10, LRMean: 0.001, LRF: 0.001, LRLogVar: 0.001,
		Clip: 10, Optimizer: "sgd", Rank: 3}
}

// PaperUCILogistic is paper 000's Table 9 row for Breast-cancer-scale: K = 5, 23 000 epochs,
// M = 100, L = 10, η = 0.001, prior precision 1, gradient norms clipped at 10, plain SGD.
func PaperUCILogistic() RegressionConfig {
	return RegressionConfig{Alpha: 1, Epochs: 23000, Batch: 100, MCSamples: 10, LRMean: 0.001, LRF: 0.001,
		LRLogVar: 0.001, Clip: 10, Optimizer: "sgd", Rank: 5}
}

// EvidenceMax returns the prior precision α and noise precision β that maximise the evidence
// N(y; 0, X Xᵀ/α + I/β) of Bayesian linear regression, by MacKay's (1992) fixed point (what
// scikit-learn's BayesianRidge iterates, without its 10⁻⁶ Gamma hyperpriors): with λ_i the
// eigenvalues of XᵀX, m = βA⁻¹Xᵀy, A = αI + βXᵀX, γ = Σ βλ_i/(α + βλ_i), α ← γ/|m|² and
// β ← (n − γ)/|y − Xm|², from α = 1, β = 1/Var(y), until both change by less than 10⁻¹⁰
// relatively (at most 10 000 iterations).
func EvidenceMax(x, y []float64, n, d int) (alpha, beta float64, err error) {
	X := mat.NewDense(n, d, x)
	Y := mat.NewVecDense(n, y)
	var xtx mat.SymDense
	xtx.SymOuterK(1, X.T())
	var eig mat.EigenSym
	if !eig.Factorize(&xtx, false) {
		return 0, 0, errors.New("faexp: evidence: eigendecomposition of XᵀX failed")
	}
	lam := eig.Values(nil)
	var xty mat.VecDense
	xty.MulVec(X.T(), Y)
	mean, vy := 0.0, 0.0
	for _, v := range y {
		mean += v / float64(n)
	}
	for _, v := range y {
		vy += (v - mean) * (v - mean) / float64(n)
	}
	alpha, beta = 1, 1/vy
	for it := 0; it < 10000; it++ {
		m, err := linRegMean(&xtx, &xty, alpha, beta, d)
		if err != nil {
			return 0, 0, err
		}
		gamma := 0.0
		for _, l := range lam {
			gamma += beta * l / (alpha + beta*l)
		}
		var r mat.VecDense
		r.MulVec(X, m)
		r.SubVec(Y, &r)
		na, nb := gamma/mat.Dot(m, m), (float64(n)-gamma)/mat.Dot(&r, &r)
		if !(na > 0) || !(nb > 0) || math.IsInf(na, 0) || math.IsInf(nb, 0) {
			return 0, 0, fmt.Errorf("faexp: evidence: α = %g, β = %g at iteration %d", na, nb, it)
		}
		done := math.Abs(na-alpha) < 1e-10*alpha && math.Abs(nb-beta) < 1e-10*beta
		alpha, beta = na, nb
		if done {
			return alpha, beta, nil
		}
	}
	return 0, 0, errors.New("faexp: evidence maximisation did not converge in 10 000 iterations")
}

// linRegMean returns m = β(αI + βXᵀX)⁻¹Xᵀy.
func linRegMean(xtx *mat.SymDense, xty *mat.VecDense, alpha, beta float64, d int) (*mat.VecDense, error) {
	a := linRegPrecision(xtx, alpha, beta, d)
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return nil, errors.New("faexp: posterior precision not positive definite")
	}
	var m mat.VecDense
	if err := ch.SolveVecTo(&m, xty); err != nil {
		return nil, err
	}
	m.ScaleVec(beta, &m)
	return &m, nil
}

func linRegPrecision(xtx *mat.SymDense, alpha, beta float64, d int) *mat.SymDense {
	a := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			v := beta * xtx.At(i, j)
			if i == j {
				v += alpha
			}
			a.SetSym(i, j, v)
		}
	}
	return a
}

// UCILinear runs paper 000's appendix C protocol for one split: inputs standardised over the
// whole data set, the test half of a random split (half), inputs and targets centred on it (the
// intercept, as BayesianRidge's fit_intercept), α and β by evidence maximisation, the exact
// posterior N(m, S), S = (αI + βXᵀX)⁻¹, and VIFA with each of cfgs (their N, Alpha and Beta are
// set here): one result per configuration, against the same reference.
func UCILinear(data *UCIData, cfgs []RegressionConfig, seed uint64) ([]*UCIResult, error) {
	n, d := data.N, data.D
	xs := append([]float64(nil), data.X...)
	if err := standardize(xs, n, d); err != nil {
		return nil, fmt.Errorf("faexp: %s: %w", data.Name, err)
	}
	rows := half(n, seed)
	h := len(rows)
	x := make([]float64, 0, h*d)
	y := make([]float64, 0, h)
	for _, r := range rows {
		x = append(x, xs[r*d:(r+1)*d]...)
		y = append(y, data.Y[r])
	}
	center(x, h, d)
	center(y, h, 1)
	alpha, beta, err := EvidenceMax(x, y, h, d)
	if err != nil {
		return nil, fmt.Errorf("faexp: %s split %d: %w", data.Name, seed, err)
	}
	X := mat.NewDense(h, d, x)
	var xtx mat.SymDense
	xtx.SymOuterK(1, X.T())
	var xty mat.VecDense
	xty.MulVec(X.T(), mat.NewVecDense(h, y))
	m, err := linRegMean(&xtx, &xty, alpha, beta, d)
	if err != nil {
		return nil, err
	}
	var ch mat.Cholesky
	if !ch.Factorize(linRegPrecision(&xtx, alpha, beta, d)) {
		return nil, errors.New("faexp: posterior precision not positive definite")
	}
	var S mat.SymDense
	if err := ch.InverseTo(&S); err != nil {
		return nil, err
	}
	var out []*UCIResult
	for _, cfg := range cfgs {
		cfg.N, cfg.Alpha, cfg.Beta = h, alpha, beta
		q, nll, err := runVIFA(cfg, d, seed, func(idx []int, th, grad []float64) float64 {
			total := 0.0
			inv := 1 / float64(len(idx))
			for _, i := range idx {
				xi := x[i*d : (i+1)*d]
				r := y[i]
				for j, v := range xi {
					r -= th[j] * v
				}
				total += 0.5*beta*r*r - 0.5*math.Log(beta/(2*math.Pi))
				for j, v := range xi {
					grad[j] -= inv * beta * r * v
				}
			}
			return total * inv
		})
		if err != nil {
			return nil, fmt.Errorf("faexp: %s split %d: %w", data.Name, seed, err)
		}
		res := &UCIResult{N: h, Dim: d, Alpha: alpha, Beta: beta, TrueMean: m.RawVector().Data, TrueCov: symData(&S),
			VIFA: q, FinalNLL: nll}
		res.Distances = Compare(q.Mean, q.Covariance(), res.TrueMean, res.TrueCov, d)
		out = append(out, res)
	}
	return out, nil
}

// center subtracts each column's mean from x (n×d).
func center(x []float64, n, d int) {
	for j := 0; j < d; j++ {
		m := 0.0
		for i := 0; i < n; i++ {
			m += x[i*d+j]
		}
		m /= float64(n)
		for i := 0; i < n; i++ {
			x[i*d+j] -= m
		}
	}
}

func symData(s *mat.SymDense) []float64 {
	d := s.SymmetricDim()
	out := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			out[i*d+j] = s.At(i, j)
		}
	}
	return out
}

// logisticLogPost is the log posterior of logistic regression with the prior N(0, α⁻¹I) over
// θ (d values; x is n×d, y in {0, 1}) and its gradient.
func logisticLogPost(x, y []float64, n, d int, alpha float64) mcmc.LogDensity {
	return func(th, grad []float64) float64 {
		lp := 0.0
		for j, t := range th {
			lp -= 0.5 * alpha * t * t
			grad[j] = -alpha * t
		}
		for i := 0; i < n; i++ {
			xi := x[i*d : (i+1)*d]
			a := 0.0
			for j, v := range xi {
				a += th[j] * v
			}
			if y[i] == 1 {
				lp += logSigmoid(a)
			} else {
				lp += logSigmoid(-a)
			}
			g := y[i] - 1/(1+math.Exp(-a))
			for j, v := range xi {
				grad[j] += g * v
			}
		}
		return lp
	}
}

// nutsMoments samples f with NUTS (mc) and returns the draws' mean and covariance with the
// largest R̂ and smallest bulk ESS over the parameters.
func nutsMoments(ctx context.Context, f mcmc.LogDensity, d int, mc mcmc.Config) (mean, cov []float64, rhat, ess float64, err error) {
	res, err := mcmc.Sample(ctx, f, d, mc)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	mean, cov = make([]float64, d), make([]float64, d*d)
	all := res.Flatten(1)
	for _, th := range all {
		for j, v := range th {
			mean[j] += v / float64(len(all))
		}
	}
	for _, th := range all {
		for i := 0; i < d; i++ {
			for j := 0; j <= i; j++ {
				cov[i*d+j] += (th[i] - mean[i]) * (th[j] - mean[j]) / float64(len(all)-1)
			}
		}
	}
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			cov[j*d+i] = cov[i*d+j]
		}
	}
	ess = math.Inf(1)
	for j := 0; j < d; j++ {
		p := res.Param(j)
		rhat = math.Max(rhat, mcmc.Rhat(p))
		ess = math.Min(ess, mcmc.ESSBulk(p))
	}
	return mean, cov, rhat, ess, nil
}

// UCILogistic runs paper 000's appendix D protocol for one split: inputs scaled to [−1, 1] over
// the whole data set (LIBSVM's "-scale" sets) and, when intercept is set, a column of ones
// appended (LIBSVM's and LIBLINEAR's models have no bias term unless asked for one), the
// test half of a random split, the posterior under the prior N(0, α⁻¹I) (α = cfg.Alpha) by NUTS
// (mc: the paper used 20 000 MCMC iterations with Bambi) summarised by its mean and covariance,
// and VIFA with each of cfgs (prior precision cfgs[0].Alpha; one result per configuration,
// against the same reference). The target must be 0 or 1.
func UCILogistic(ctx context.Context, data *UCIData, cfgs []RegressionConfig, mc mcmc.Config, seed uint64, intercept bool) ([]*UCIResult, error) {
	if len(cfgs) == 0 {
		return nil, errors.New("faexp: UCILogistic: no configurations")
	}
	n, d := data.N, data.D
	for i, v := range data.Y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("faexp: %s: row %d: target %g is not 0 or 1", data.Name, i+1, v)
		}
	}
	xs := append([]float64(nil), data.X...)
	if err := minMaxScale(xs, n, d); err != nil {
		return nil, fmt.Errorf("faexp: %s: %w", data.Name, err)
	}
	rows := half(n, seed)
	h, p := len(rows), d
	if intercept {
		p++
	}
	x := make([]float64, 0, h*p)
	y := make([]float64, 0, h)
	for _, r := range rows {
		x = append(x, xs[r*d:(r+1)*d]...)
		if intercept {
			x = append(x, 1)
		}
		y = append(y, data.Y[r])
	}
	mc.Seed = seed + 1
	alpha := cfgs[0].Alpha
	m, s, rhat, ess, err := nutsMoments(ctx, logisticLogPost(x, y, h, p, alpha), p, mc)
	if err != nil {
		return nil, fmt.Errorf("faexp: %s split %d: NUTS: %w", data.Name, seed, err)
	}
	var out []*UCIResult
	for _, cfg := range cfgs {
		cfg.N, cfg.Alpha = h, alpha
		q, nll, err := runVIFA(cfg, p, seed, func(idx []int, th, grad []float64) float64 {
			total := 0.0
			inv := 1 / float64(len(idx))
			for _, i := range idx {
				xi := x[i*p : (i+1)*p]
				a := 0.0
				for j, v := range xi {
					a += th[j] * v
				}
				if y[i] == 1 {
					total -= logSigmoid(a)
				} else {
					total -= logSigmoid(-a)
				}
				g := 1/(1+math.Exp(-a)) - y[i]
				for j, v := range xi {
					grad[j] += inv * g * v
				}
			}
			return total * inv
		})
		if err != nil {
			return nil, fmt.Errorf("faexp: %s split %d: %w", data.Name, seed, err)
		}
		res := &UCIResult{N: h, Dim: p, Alpha: alpha, TrueMean: m, TrueCov: s, VIFA: q, FinalNLL: nll, RhatMax: rhat, ESSMin: ess}
		res.Distances = Compare(q.Mean, q.Covariance(), m, s, p)
		out = append(out, res)
	}
	return out, nil
}
