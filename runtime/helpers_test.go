package runtime_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// This file holds the tests' independent float64 reference code (dense matrices, a jittered
// Cholesky, softplus) and the moment checks used by the sampler tests. Nothing here calls into the
// package under test except to build models.

// mat is a dense row-major float64 matrix.
type mat struct {
	r, c int
	v    []float64
}

func newMat(r, c int) mat { return mat{r: r, c: c, v: make([]float64, r*c)} }

// matOf wraps float32 data (row-major r×c) as a float64 matrix.
func matOf(r, c int, data []float32) mat {
	m := newMat(r, c)
	for i, x := range data {
		m.v[i] = float64(x)
	}
	return m
}

func (m mat) at(i, j int) float64     { return m.v[i*m.c+j] }
func (m mat) set(i, j int, x float64) { m.v[i*m.c+j] = x }
func (m mat) add(i, j int, x float64) { m.v[i*m.c+j] += x }

func (m mat) T() mat {
	t := newMat(m.c, m.r)
	for i := 0; i < m.r; i++ {
		for j := 0; j < m.c; j++ {
			t.set(j, i, m.at(i, j))
		}
	}
	return t
}

func mul(a, b mat) mat {
	if a.c != b.r {
		panic(fmt.Sprintf("mul: %d×%d times %d×%d", a.r, a.c, b.r, b.c))
	}
	o := newMat(a.r, b.c)
	for i := 0; i < a.r; i++ {
		for j := 0; j < b.c; j++ {
			s := 0.0
			for p := 0; p < a.c; p++ {
				s += a.at(i, p) * b.at(p, j)
			}
			o.set(i, j, s)
		}
	}
	return o
}

func matAdd(a, b mat) mat {
	o := newMat(a.r, a.c)
	for i := range o.v {
		o.v[i] = a.v[i] + b.v[i]
	}
	return o
}

func matScale(s float64, a mat) mat {
	o := newMat(a.r, a.c)
	for i := range o.v {
		o.v[i] = s * a.v[i]
	}
	return o
}

func eye(n int) mat {
	o := newMat(n, n)
	for i := 0; i < n; i++ {
		o.set(i, i, 1)
	}
	return o
}

func matVec(a mat, x []float64) []float64 {
	y := make([]float64, a.r)
	for i := range y {
		for j := 0; j < a.c; j++ {
			y[i] += a.at(i, j) * x[j]
		}
	}
	return y
}

// chol64 is a textbook Cholesky–Banachiewicz factorisation after adding bayesianize's jitter
// 1e-4·mean(diag) to the diagonal (MATH.md §1).
func chol64(a mat) mat { return cholRel(a, 1e-4) }

// cholRel factors a + rel·mean(diag(a))·I.
func cholRel(a mat, rel float64) mat {
	n := a.r
	j := 0.0
	for i := 0; i < n; i++ {
		j += a.at(i, i)
	}
	j = rel * j / float64(n)
	l := newMat(n, n)
	for i := 0; i < n; i++ {
		for k := 0; k <= i; k++ {
			s := a.at(i, k)
			if i == k {
				s += j
			}
			for p := 0; p < k; p++ {
				s -= l.at(i, p) * l.at(k, p)
			}
			if i == k {
				if s <= 0 {
					panic("chol64: not positive definite")
				}
				l.set(i, i, math.Sqrt(s))
			} else {
				l.set(i, k, s/l.at(k, k))
			}
		}
	}
	return l
}

// lowerInv inverts a lower-triangular matrix by forward substitution.
func lowerInv(l mat) mat {
	n := l.r
	inv := newMat(n, n)
	for c := 0; c < n; c++ {
		for i := 0; i < n; i++ {
			s := 0.0
			if i == c {
				s = 1
			}
			for p := 0; p < i; p++ {
				s -= l.at(i, p) * inv.at(p, c)
			}
			inv.set(i, c, s/l.at(i, i))
		}
	}
	return inv
}

// cholInv returns (L Lᵀ)⁻¹.
func cholInv(l mat) mat {
	li := lowerInv(l)
	return mul(li.T(), li)
}

func softplus64(x float64) float64 { return math.Log1p(math.Exp(x)) }

// randn returns n standard normal float32 values scaled by s.
func randn(r *rand.Rand, n int, s float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(s * r.NormFloat64())
	}
	return v
}

func ptr(v float64) *float64 { return &v }

func tensor(data []float32, shape ...int) runtime.Tensor {
	return runtime.Tensor{Shape: shape, Data: data}
}

// sampleCount is the number of Monte Carlo samples for a moment test: full on a plain host run,
// fewer under -short (QEMU) and under the race detector. It is rounded up to a multiple of 12 so
// that ensembles of up to 4 members (and 6, 12) are visited equally often.
func sampleCount(full int) int {
	n := full
	switch {
	case testing.Short():
		n = full / 10
	case raceEnabled:
		n = full / 5
	}
	return (n + 11) / 12 * 12
}

// skipUnderRace skips a statistical test in a -race build. Such a test predicts on one goroutine
// (Threads 1), so the race detector has nothing to find in it, while instrumentation makes its
// sampling and moment loops 10–20 times slower (TestInducingGramMoments: 18 s of the host's
// race pass). It runs in full without -race and with -short on every emulated CPU.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("one goroutine: nothing for -race to find; runs without -race")
	}
}

// moments are the sample mean and covariance of K draws of a p-vector with the standard errors of
// each entry, estimated from the samples themselves.
type moments struct {
	k, p           int
	mean, meanSE   []float64
	cov, covSE     mat
	cols, colNames []string
}

// sampleMoments computes the moments of x (K × p, row-major) in two passes.
func sampleMoments(x []float64, p int) moments {
	k := len(x) / p
	m := moments{k: k, p: p, mean: make([]float64, p), meanSE: make([]float64, p),
		cov: newMat(p, p), covSE: newMat(p, p)}
	for s := 0; s < k; s++ {
		for j := 0; j < p; j++ {
			m.mean[j] += x[s*p+j]
		}
	}
	for j := range m.mean {
		m.mean[j] /= float64(k)
	}
	sum, sum2 := newMat(p, p), newMat(p, p)
	d := make([]float64, p)
	for s := 0; s < k; s++ {
		for j := 0; j < p; j++ {
			d[j] = x[s*p+j] - m.mean[j]
		}
		for a := 0; a < p; a++ {
			da := d[a]
			ra, r2 := sum.v[a*p:a*p+p], sum2.v[a*p:a*p+p]
			for b := a; b < p; b++ {
				z := da * d[b]
				ra[b] += z
				r2[b] += z * z
			}
		}
	}
	kf := float64(k)
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			c := sum.at(a, b) / kf
			v := math.Max(sum2.at(a, b)/kf-c*c, 0)
			m.cov.set(a, b, c)
			m.cov.set(b, a, c)
			m.covSE.set(a, b, math.Sqrt(v/kf))
			m.covSE.set(b, a, math.Sqrt(v/kf))
		}
	}
	for j := 0; j < p; j++ {
		m.meanSE[j] = math.Sqrt(m.cov.at(j, j) / kf)
	}
	return m
}

// sampleMeanVar returns the sample mean and variance of each of the p coordinates of x (K × p,
// row-major): sampleMoments' mean and covariance diagonal, in O(K p) instead of O(K p²).
func sampleMeanVar(x []float64, p int) (mean, vari []float64) {
	k := len(x) / p
	mean, vari = make([]float64, p), make([]float64, p)
	for s := 0; s < k; s++ {
		for j, v := range x[s*p : s*p+p] {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(k)
	}
	for s := 0; s < k; s++ {
		for j, v := range x[s*p : s*p+p] {
			d := v - mean[j]
			vari[j] += d * d
		}
	}
	for j := range vari {
		vari[j] /= float64(k)
	}
	return mean, vari
}

// seTol is the number of standard errors a sample moment may be away from its closed form.
const seTol = 5

// checkMoments requires every entry of the sample mean and covariance to be within seTol standard
// errors of the closed form, plus a floor of 1e-5 relative to the entry's scale for float32
// rounding (far below one standard error at these sample sizes); a mean's scale includes the
// root mean square of all the means, since an entry near zero is a float32 sum of terms of that
// size (this floor matters only where the closed-form covariance is zero, e.g. point estimates).
// No samples (moments 0/0) or a NaN moment is a failure: they had passed every comparison.
func checkMoments(t *testing.T, what string, got moments, wantMean []float64, wantCov mat) {
	t.Helper()
	if got.k < 1 {
		t.Fatalf("%s: %d samples, too few for moments", what, got.k)
	}
	if got.p < 1 || len(wantMean) != got.p || wantCov.r != got.p || wantCov.c != got.p {
		t.Fatalf("%s: %d sampled coordinates, closed form has %d means and a %d×%d covariance", what, got.p, len(wantMean), wantCov.r, wantCov.c)
	}
	type miss struct {
		z   float64
		msg string
	}
	var misses []miss
	worst := 0.0
	sd := make([]float64, got.p)
	for j := range sd {
		sd[j] = math.Sqrt(math.Max(wantCov.at(j, j), 0))
	}
	rms := 0.0
	for _, v := range wantMean {
		rms += v * v / float64(len(wantMean))
	}
	rms = math.Sqrt(rms)
	for j := 0; j < got.p; j++ {
		diff := math.Abs(got.mean[j] - wantMean[j])
		tol := seTol*got.meanSE[j] + 1e-5*(math.Abs(wantMean[j])+sd[j]+rms) + 1e-12
		z := diff / (got.meanSE[j] + 1e-300)
		if z > worst && got.meanSE[j] > 0 {
			worst = z
		}
		if !(diff <= tol) { // NaN too
			misses = append(misses, miss{z, fmt.Sprintf("mean[%d] = %.6g, closed form %.6g (SE %.3g, %.1f SE)",
				j, got.mean[j], wantMean[j], got.meanSE[j], z)})
		}
	}
	for a := 0; a < got.p; a++ {
		for b := a; b < got.p; b++ {
			diff := math.Abs(got.cov.at(a, b) - wantCov.at(a, b))
			se := got.covSE.at(a, b)
			tol := seTol*se + 1e-5*(math.Abs(wantCov.at(a, b))+sd[a]*sd[b]) + 1e-12
			z := diff / (se + 1e-300)
			if z > worst && se > 0 {
				worst = z
			}
			if !(diff <= tol) { // NaN too
				misses = append(misses, miss{z, fmt.Sprintf("cov[%d,%d] = %.6g, closed form %.6g (SE %.3g, %.1f SE)",
					a, b, got.cov.at(a, b), wantCov.at(a, b), se, z)})
			}
		}
	}
	t.Logf("%s: %d samples, %d means and %d covariances checked; largest deviation %.2f SE",
		what, got.k, got.p, got.p*(got.p+1)/2, worst)
	if len(misses) > 0 {
		sort.Slice(misses, func(i, j int) bool { return misses[i].z > misses[j].z })
		if len(misses) > 8 {
			misses = misses[:8]
		}
		for _, m := range misses {
			t.Errorf("%s: %s", what, m.msg)
		}
	}
}

func vecScale(s float64, x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = s * v
	}
	return y
}

// predictAll predicts the inputs xs (m.InputSize values each) with a new predictor for opts.
func predictAll(t testing.TB, m *runtime.Model, opts runtime.Options, xs []float32) []runtime.Prediction {
	t.Helper()
	p, err := m.NewPredictor(opts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]runtime.Prediction, len(xs)/m.InputSize())
	if err := p.PredictBatch(xs, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// predictLocal predicts the inputs xs in one batch with samples local-reparameterisation draws
// from seed, keeping the samples.
func predictLocal(t testing.TB, m *runtime.Model, samples int, seed uint64, xs []float32) []runtime.Prediction {
	t.Helper()
	return predictAll(t, m, runtime.Options{Samples: samples, Seed: seed, Strategy: runtime.Local,
		MaxBatch: len(xs) / m.InputSize(), KeepSamples: true}, xs)
}

// newModel builds a model from spec and ts (runtime.New), failing the test on an error.
func newModel(t testing.TB, spec *runtime.Spec, ts runtime.TensorSource) *runtime.Model {
	t.Helper()
	m, err := runtime.New(spec, ts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// softmax64 is a plain float64 softmax of logits.
func softmax64(z []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v))
	}
	p := make([]float64, len(z))
	sum := 0.0
	for i, v := range z {
		p[i] = math.Exp(float64(v) - mx)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// TestSampleMeanVar: sampleMeanVar is sampleMoments' mean and covariance diagonal.
func TestSampleMeanVar(t *testing.T) {
	const k, p = 50, 7
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, k*p)
	for i := range x {
		x[i] = r.NormFloat64()*float64(i%p+1) + float64(i%p)
	}
	want := sampleMoments(x, p)
	mean, vari := sampleMeanVar(x, p)
	for j := range p {
		if !(math.Abs(mean[j]-want.mean[j]) <= 1e-12*(1+math.Abs(want.mean[j]))) || !(math.Abs(vari[j]-want.cov.at(j, j)) <= 1e-12*want.cov.at(j, j)) {
			t.Errorf("coordinate %d: mean %g var %g, sampleMoments %g %g", j, mean[j], vari[j], want.mean[j], want.cov.at(j, j))
		}
	}
}

// writeModelFile writes a model file holding src's tensors (in name order, stored as opt says;
// nil: float32) and blobs and the spec, and returns its path.
func writeModelFile(t testing.TB, spec *runtime.Spec, src runtime.MemorySource, opt func(name string) format.AddOptions) string {
	t.Helper()
	w := format.NewWriter()
	for _, name := range slices.Sorted(maps.Keys(src.Tensors)) {
		var o format.AddOptions
		if opt != nil {
			o = opt(name)
		}
		v := src.Tensors[name]
		if _, err := w.AddTensor(name, v.Shape, v.Data, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(src.Blobs)) {
		if err := w.AddBlob(name, src.Blobs[name], false); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob(runtime.MetaBlob, meta, false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.ebnn")
	if err := w.WriteFile(path, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}
