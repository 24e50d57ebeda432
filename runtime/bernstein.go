package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/kernels"
)

// Bernstein-flow posterior (kind "bernstein", train/bfvi, paper 002). Every weight and bias has
// its own 1-D Bernstein flow of degree M mapping z ~ N(0, 1) to θ:
//
//	z₁ = a₁z − b₁, t = σ(z₁), z₃ = Σ_{i=0..M} ϑ_i Be_{i,M}(t), θ = a₂z₃ − b₂,
//	a₁ = softplus(a₁′), a₂ = softplus(a₂′), ϑ₀ free, ϑ_i = ϑ_{i−1} + softplus(δ_i),
//
// with raw parameters λ = (a₁′, b₁, ϑ₀, δ₁, …, δ_M, a₂′, b₂) (M + 5 values, bfvi.NumFlowParams).
// The map is strictly increasing with the bounded range (a₂ϑ₀ − b₂, a₂ϑ_M − b₂).
//
// At load time the quantile function Q(p) = θ(Φ⁻¹(p)) of every weight is tabulated at the G
// equally spaced probabilities p_i = i/(G−1), i = 0 … G−1 (p₀ = 0 and p_{G−1} = 1 are the ends
// of the range), in float32. A sample draws u ~ U(0, 1) and interpolates linearly between the
// neighbouring quantiles (inverse-CDF sampling): O(1) per weight per sample, independent of M.
//
// Error in distribution. Let F be the flow's CDF and F̃ the CDF of the interpolated sampler
// X̃ = Q̃(U), Q̃ the piecewise-linear interpolant of Q at the nodes p_i. For x in [Q(p_i),
// Q(p_{i+1})], monotonicity of Q and Q̃ and Q̃(p_i) = Q(p_i) give U ≤ p_i ⇒ both Q(U) ≤ x and
// Q̃(U) ≤ x, and U > p_{i+1} ⇒ neither (up to a null set), so F(x) and F̃(x) both lie in
// [p_i, p_{i+1}]. Hence the Kolmogorov distance
//
//	sup_x |F̃(x) − F(x)| ≤ max_i (p_{i+1} − p_i) = 1/(G−1)
//
// in exact arithmetic. Storing the table in float32 and drawing u with 24 random bits move a
// sample by at most a few float32 ulps of θ and u by at most 2⁻²⁴, which adds at most
// 2⁻²⁴ + F(x+ε) − F(x−ε) (ε a few ulps) — negligible next to 1/(G−1) for G ≤ 2¹⁶. The tests
// (TestBernsteinKolmogorov) check the bound empirically against the exact flow.
type bernstein struct {
	dOut, dIn, k int
	hasBias      bool
	g            int       // table points per weight
	table        []float32 // dOut·dIn × g quantiles, weight-matrix order (bias last column)
	mean         []float32 // dOut × dIn: the sampler's exact mean Σ (p_{i+1}−p_i)(q_i+q_{i+1})/2
	step         float32   // g − 1
}

// DefaultBernsteinTable is the table size G used when PosteriorSpec.TableSize is 0: 257 points,
// so that the Kolmogorov distance of the sampler from the exact flow is at most 1/256.
const DefaultBernsteinTable = 257

// MaxBernsteinTable is the largest PosteriorSpec.TableSize accepted.
const MaxBernsteinTable = 1 << 16

// The quantile tables are derived at load from a few raw parameters per weight — G points from
// M + 5 values, and zstd can make the parameters themselves small — so a model's tables are
// bounded as a whole, not only layer by layer: at most MaxBernsteinTableBytes of tables and
// MaxBernsteinWork flow-term evaluations (weights × G × (M + 1), ≈ 8 ns each on a 2020s x86
// core, so about 17 s) in all the model's Bernstein layers. A Bernstein last layer of 2 560
// weights at the defaults (G = 257, M = 50) is 2.6 MB and 3.4·10⁷.
const (
	MaxBernsteinTableBytes = 1 << 30
	MaxBernsteinWork       = 1 << 31
)

// BernsteinKSBound returns the bound 1/(G−1) on the Kolmogorov distance between the runtime's
// samples of a Bernstein-flow weight and the exact flow, for a table of G points (0: the
// default).
func BernsteinKSBound(tableSize int) float64 {
	if tableSize == 0 {
		tableSize = DefaultBernsteinTable
	}
	return 1 / float64(tableSize-1)
}

// bernsteinMap is one weight's flow in float64, for tabulation.
type bernsteinMap struct {
	m              int
	a1, b1, a2, b2 float64
	th0            float64
	delta          []float64 // Δ_j = softplus(δ_j)
	lb             []float64 // log C(M, i)
}

// set loads raw parameters λ (M + 5 values) and checks them.
func (f *bernsteinMap) set(raw []float32) error {
	m := f.m
	for i, v := range raw {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("raw flow parameter %d is %g", i, v)
		}
	}
	f.a1, f.b1 = softplus(float64(raw[0])), float64(raw[1])
	f.th0 = float64(raw[2])
	f.a2, f.b2 = softplus(float64(raw[m+3])), float64(raw[m+4])
	if !(f.a1 > 0) || !(f.a2 > 0) {
		return fmt.Errorf("flow scales a₁ = softplus(%g), a₂ = softplus(%g) underflow to zero", raw[0], raw[m+3])
	}
	for j := 0; j < m; j++ {
		f.delta[j] = softplus(float64(raw[3+j]))
	}
	return nil
}

// at returns θ(z) for finite z; z = ±Inf gives the ends of the range.
func (f *bernsteinMap) at(z float64) float64 {
	m := f.m
	if math.IsInf(z, -1) {
		return f.a2*f.th0 - f.b2
	}
	if math.IsInf(z, 1) {
		th := f.th0
		for _, d := range f.delta {
			th += d
		}
		return f.a2*th - f.b2
	}
	z1 := f.a1*z - f.b1
	// log t and log(1−t), stable in both tails (as train/bfvi).
	lt, l1t := -softplus(-z1), -softplus(z1)
	tail, z3 := 0.0, 0.0
	for i := m; i >= 1; i-- {
		tail += math.Exp(f.lb[i] + float64(i)*lt + float64(m-i)*l1t)
		z3 += f.delta[i-1] * tail
	}
	return f.a2*(z3+f.th0) - f.b2
}

// tabulate fills row (len(z) values) with the flow's quantiles at the base values z, in float32,
// made nondecreasing, and q with the same values in float64. It returns −1, or the index of the
// first quantile that is NaN or not a finite float32.
func (f *bernsteinMap) tabulate(z, q []float64, row []float32) int {
	for i, zi := range z {
		q[i] = f.at(zi)
		// Rounding can break monotonicity where the map is nearly flat; the sampler needs a
		// nondecreasing table.
		if i > 0 && q[i] < q[i-1] {
			q[i] = q[i-1]
		}
		row[i] = float32(q[i])
		if math.IsNaN(q[i]) || math.IsInf(float64(row[i]), 0) {
			return i
		}
	}
	return -1
}

// BernsteinFlow is one weight's Bernstein flow evaluated in float64 exactly as the runtime
// tabulates it, for host tools that check a model before it is written (convert's fp16 gate).
type BernsteinFlow struct {
	f     bernsteinMap
	delta []float64 // Δ_j = softplus(δ_j) of the last Set (aliases f.delta)
}

// NewBernsteinFlow returns a flow of the given degree M (1 … MaxBernsteinDegree); Set gives it
// its parameters.
func NewBernsteinFlow(degree int) (*BernsteinFlow, error) {
	if degree < 1 || degree > MaxBernsteinDegree {
		return nil, fmt.Errorf("runtime: bernstein degree %d out of range [1, %d]", degree, MaxBernsteinDegree)
	}
	d := make([]float64, degree)
	return &BernsteinFlow{f: bernsteinMap{m: degree, delta: d, lb: f64.LogBinomials(degree)}, delta: d}, nil
}

// Set loads the raw flow parameters λ = (a₁′, b₁, ϑ₀, δ₁ … δ_M, a₂′, b₂) (M + 5 values, the
// layout of <name>.bf_weight's last axis). It fails on a wrong length, a non-finite value, or
// scales a₁ = softplus(a₁′), a₂ = softplus(a₂′) that underflow to zero, as loading a model does.
func (b *BernsteinFlow) Set(raw []float32) error {
	if len(raw) != b.f.m+5 {
		return fmt.Errorf("runtime: bernstein flow of degree %d has %d raw parameters, not %d", b.f.m, len(raw), b.f.m+5)
	}
	return b.f.set(raw)
}

// StrictlyIncreasing reports whether the flow θ(z) is strictly increasing in float64: a₁, a₂ > 0
// (Set checks them) and every coefficient step Δ_j = softplus(δ_j) > 0. A Δ_j that underflows to
// zero leaves the map monotone but with coinciding coefficients.
func (b *BernsteinFlow) StrictlyIncreasing() bool {
	for _, d := range b.delta {
		if !(d > 0) {
			return false
		}
	}
	return true
}

// Quantile returns θ(Φ⁻¹(p)) for p in [0, 1]: the flow's quantile function, whose values at 0
// and 1 are the ends of its range.
func (b *BernsteinFlow) Quantile(p float64) float64 { return b.f.at(normalQuantile(p)) }

// Table fills table (G = len(table) ≥ 2 points) with the quantile table the runtime builds for
// this flow when a model with table size G loads: Q(i/(G−1)) in float32, made nondecreasing. It
// fails if a quantile is NaN or not a finite float32, as loading does.
func (b *BernsteinFlow) Table(table []float32) error {
	g := len(table)
	if g < 2 || g > MaxBernsteinTable {
		return fmt.Errorf("runtime: bernstein table size %d out of range [2, %d]", g, MaxBernsteinTable)
	}
	q := make([]float64, g)
	if i := b.f.tabulate(bernsteinGrid(g), q, table); i >= 0 {
		return fmt.Errorf("runtime: the flow's quantile %g at p = %g is not a finite float32", q[i], float64(i)/float64(g-1))
	}
	return nil
}

// normalQuantile returns Φ⁻¹(p) (−Inf at 0, +Inf at 1), accurate in both tails.
func normalQuantile(p float64) float64 {
	if p <= 0.5 {
		return -math.Sqrt2 * math.Erfcinv(2*p)
	}
	return math.Sqrt2 * math.Erfcinv(2*(1-p))
}

// bernsteinGrid returns the base values z_i = Φ⁻¹(i/(g−1)), i = 0 … g−1.
func bernsteinGrid(g int) []float64 {
	z := make([]float64, g)
	for i := range z {
		z[i] = normalQuantile(float64(i) / float64(g-1))
	}
	z[0], z[g-1] = math.Inf(-1), math.Inf(1)
	return z
}

// bernsteinTableBytes returns the bytes of a layer's quantile table, or false on overflow.
func bernsteinTableBytes(dOut, dIn, g int) (int64, bool) {
	n, ok := elements([]int{dOut, dIn, g})
	return 4 * int64(n), ok
}

// loadBernstein reads <name>.bf_weight (the weight's shape × (M+5)) and, with a bias,
// <name>.bf_bias (dOut × (M+5)), and tabulates every weight's quantile function.
func loadBernstein(b *builder, ls *LayerSpec, dOut, dIn int) (*bernstein, error) {
	p := ls.Posterior
	name := ls.Name
	m := p.Degree
	if m < 1 || m > MaxBernsteinDegree {
		return nil, fmt.Errorf("runtime: layer %q (bernstein): degree %d out of range [1, %d]", name, m, MaxBernsteinDegree)
	}
	g := p.TableSize
	if g == 0 {
		g = DefaultBernsteinTable
	}
	if g < 2 || g > MaxBernsteinTable {
		return nil, fmt.Errorf("runtime: layer %q (bernstein): table size %d out of range [2, %d]", name, g, MaxBernsteinTable)
	}
	f := &bernstein{dOut: dOut, dIn: dIn, k: dIn, hasBias: ls.Bias, g: g, step: float32(g - 1)}
	if ls.Bias {
		f.k--
	}
	bud := b.budget
	need, ok := bernsteinTableBytes(dOut, dIn, g)
	if limit := min(bud.machineMemory(), bud.maxBernsteinBytes-bud.bernsteinBytes); !ok || need > limit {
		what := "more than the tensor limit"
		if ok {
			what = sizeString(need)
		}
		return nil, fmt.Errorf("runtime: layer %q (bernstein): the quantile table of %d × %d weights × %d points needs %s; the limit is %s (%s for all the model's tables, MaxBernsteinTableBytes or the machine's memory, %s taken by earlier layers): %w",
			name, dOut, dIn, g, what, sizeString(limit), sizeString(bud.maxBernsteinBytes), sizeString(bud.bernsteinBytes), ErrMemory)
	}
	// need ≤ 1 GiB here, so weights·G fits an int64 and so does its product with M + 1 ≤ 1001.
	work := need / 4 * int64(m+1)
	if work > bud.maxBernsteinWork-bud.bernsteinWork {
		return nil, fmt.Errorf("runtime: layer %q (bernstein): tabulating %d × %d weights at %d points, degree %d, is %d flow-term evaluations; the model may take %d in all (MaxBernsteinWork), %d taken by earlier layers",
			name, dOut, dIn, g, m, work, bud.maxBernsteinWork, bud.bernsteinWork)
	}
	bud.bernsteinBytes += need
	bud.bernsteinWork += work
	t, err := b.layerTensors(name, LayerTensors(ls), 0)
	if err != nil {
		return nil, err
	}
	ws, bs := t["bf_weight"], t["bf_bias"]
	np := m + 5 // each flow's raw parameters
	f.table = make([]float32, dOut*dIn*g)
	f.mean = make([]float32, dOut*dIn)
	z := bernsteinGrid(g)
	fm := &bernsteinMap{m: m, delta: make([]float64, m), lb: f64.LogBinomials(m)}
	q := make([]float64, g)
	tab := func(raw []float32, w int, what string, idx int) error {
		if err := fm.set(raw); err != nil {
			return fmt.Errorf("runtime: layer %q (bernstein): tensor %q entry %d: %v", name, b.fullName(name, what), idx, err)
		}
		row := f.table[w*g : (w+1)*g]
		if i := fm.tabulate(z, q, row); i >= 0 {
			return fmt.Errorf("runtime: layer %q (bernstein): tensor %q entry %d: the flow's quantile %g at p = %g is not a finite float32",
				name, b.fullName(name, what), idx, q[i], float64(i)/float64(g-1))
		}
		mean := 0.0
		for i := 1; i < g; i++ {
			mean += (float64(row[i-1]) + float64(row[i])) / 2
		}
		f.mean[w] = float32(mean / float64(g-1))
		return nil
	}
	for o := 0; o < dOut; o++ {
		for j := 0; j < f.k; j++ {
			if err := tab(ws[(o*f.k+j)*np:(o*f.k+j+1)*np], o*dIn+j, "bf_weight", o*f.k+j); err != nil {
				return nil, err
			}
		}
		if ls.Bias {
			if err := tab(bs[o*np:(o+1)*np], o*dIn+f.k, "bf_bias", o); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// MaxBernsteinDegree is the largest PosteriorSpec.Degree accepted (train/bfvi's MaxDegree).
const MaxBernsteinDegree = 1000

// moments returns the exact mean and variance of the sampler's distribution of weight w:
// within a cell X is linear in U, so E X = Σ Δp (q_i + q_{i+1})/2 and
// E X² = Σ Δp (q_i² + q_i q_{i+1} + q_{i+1}²)/3.
func (f *bernstein) moments(w int) (mean, variance float64) {
	row := f.table[w*f.g : (w+1)*f.g]
	dp := 1 / float64(f.g-1)
	s, s2 := 0.0, 0.0
	for i := 1; i < len(row); i++ {
		a, c := float64(row[i-1]), float64(row[i])
		s += dp * (a + c) / 2
		s2 += dp * (a*a + a*c + c*c) / 3
	}
	return s, math.Max(s2-s*s, 0)
}

func (f *bernstein) weightScratch() int { return 0 }

// sampleWeight draws every weight by inverse-CDF sampling from its quantile table: one uniform,
// two table reads and one multiply-add per weight.
func (f *bernstein) sampleWeight(_ *fwdCtx, rng *kernels.Stream, w, _ []float32) {
	rng.Uniform(w)
	g, last := f.g, f.g-2
	for i, u := range w {
		x := u * f.step
		c := int(x)
		if c > last {
			c = last
		}
		row := f.table[i*g+c : i*g+c+2]
		w[i] = row[0] + (x-float32(c))*(row[1]-row[0])
	}
}

func (f *bernstein) meanWeight(w, _ []float32) { copy(w, f.mean) }

// Local (per-input) sampling needs Gaussian weights; a Bernstein layer always samples weights.
func (f *bernstein) weightOnly()                                                            {}
func (f *bernstein) prepSize(int) int64                                                     { return 0 }
func (f *bernstein) prepare([]float32, int, []float32)                                      {}
func (f *bernstein) applyScratch(int, int) int64                                            { return 0 }
func (f *bernstein) apply(*fwdCtx, uint32, []float32, bool, []float32, int, int, []float32) {}
func (f *bernstein) localCost(int) int64                                                    { return math.MaxInt32 }
func (f *bernstein) prepCost(int) int64                                                     { return 0 }

// weightCost counts a uniform draw (priced like a normal one) and the interpolation per weight.
func (f *bernstein) weightCost() int64 { return prod(3+normalCost, f.dOut, f.dIn) }

// weightOnlyPosterior is implemented by posteriors that cannot sample locally.
type weightOnlyPosterior interface{ weightOnly() }

// canLocal reports whether p supports local (per-input) sampling.
func canLocal(p posterior) bool {
	_, no := p.(weightOnlyPosterior)
	return p != nil && !no
}
