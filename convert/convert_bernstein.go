package convert

import (
	"fmt"
	"github.com/edgebnn/edgebnn/internal/schema"
	"math"
	goruntime "runtime"
	"sort"
	"sync"

	"github.com/edgebnn/edgebnn/quant"
	"github.com/edgebnn/edgebnn/runtime"
)

// BernsteinGateRefine is how many points of the exact flow's quantile function the fp16 gate
// evaluates per cell of the runtime's table: the finer grid has R·(G−1)+1 points.
const BernsteinGateRefine = 8

// BernsteinGate is the fp16 gate's verdict on one Bernstein-flow tensor (declared in
// internal/schema, where inspect reads it from a model's info).
type BernsteinGate = schema.BernsteinGate

// bernsteinFlowCheck holds one goroutine's scratch for checking flows.
type bernsteinFlowCheck struct {
	m, g     int
	f32, f16 *runtime.BernsteinFlow
	raw16    []float32
	table    []float32 // the runtime's table of the fp16 flow
	fine     []float64 // the exact float32 flow's quantiles at k/(R(G−1))
}

func newBernsteinFlowCheck(m, g int) (*bernsteinFlowCheck, error) {
	f32, err := runtime.NewBernsteinFlow(m)
	if err != nil {
		return nil, err
	}
	f16, _ := runtime.NewBernsteinFlow(m)
	return &bernsteinFlowCheck{m: m, g: g, f32: f32, f16: f16, raw16: make([]float32, m+5),
		table: make([]float32, g), fine: make([]float64, BernsteinGateRefine*(g-1)+1)}, nil
}

// cdf returns the right-continuous CDF of the runtime's sampler with quantile table t (G points
// at p_i = i/(G−1), linear interpolation in between) at x.
func samplerCDF(t []float32, x float64) float64 {
	// i: the last node with t[i] ≤ x.
	i := sort.Search(len(t), func(j int) bool { return float64(t[j]) > x }) - 1
	g := len(t)
	switch {
	case i < 0:
		return 0
	case i >= g-1:
		return 1
	}
	a, b := float64(t[i]), float64(t[i+1]) // a ≤ x < b
	return (float64(i) + (x-a)/(b-a)) / float64(g-1)
}

// check returns an upper bound of the Kolmogorov distance between the runtime's samples from
// raw rounded to fp16 and the exact flow of raw, or an error saying why the rounded flow is not
// acceptable at all (outside fp16's range, not strictly increasing, a quantile that does not
// fit float32). monotone is false when rounding broke strict monotonicity.
func (c *bernsteinFlowCheck) check(raw []float32) (ks float64, monotone bool, err error) {
	for i, v := range raw {
		if !quant.InF16Range(v) {
			return 0, true, fmt.Errorf("raw parameter %d = %g is outside the fp16 range", i, v)
		}
		c.raw16[i] = quant.Round(v)
	}
	if err := c.f32.Set(raw); err != nil {
		return 0, true, err
	}
	if err := c.f16.Set(c.raw16); err != nil {
		return 0, false, fmt.Errorf("after rounding to fp16: %v", err)
	}
	if c.f32.StrictlyIncreasing() && !c.f16.StrictlyIncreasing() {
		return 0, false, fmt.Errorf("after rounding to fp16 a coefficient step ϑ_i − ϑ_{i−1} is zero")
	}
	if err := c.f16.Table(c.table); err != nil {
		return 0, true, fmt.Errorf("after rounding to fp16: %v", err)
	}
	g, r := c.g, BernsteinGateRefine
	n := len(c.fine) - 1
	// Quick necessary test at the table's own probabilities, then the full bound.
	for i := 0; i < g; i++ {
		p := float64(i*r) / float64(n)
		c.fine[i*r] = c.f32.Quantile(p)
		ks = max(ks, math.Abs(samplerCDF(c.table, c.fine[i*r])-p))
	}
	if ks > 1/float64(g-1) {
		return ks, true, nil
	}
	for k := 0; k <= n; k++ {
		if k%r != 0 {
			c.fine[k] = c.f32.Quantile(float64(k) / float64(n))
		}
	}
	// The exact CDF F is continuous and increasing with F(fine[k]) = k/n; the sampler's CDF F̃ is
	// nondecreasing. On [fine[k], fine[k+1]] both are therefore bracketed, so
	// |F̃ − F| ≤ max(F̃(fine[k+1]) − k/n, (k+1)/n − F̃(fine[k])); below fine[0] F = 0 ≤ F̃ ≤
	// F̃(fine[0]), above fine[n] F = 1 ≥ F̃ ≥ F̃(fine[n]).
	prev := samplerCDF(c.table, c.fine[0])
	ks = max(ks, prev)
	for k := 0; k < n; k++ {
		next := samplerCDF(c.table, c.fine[k+1])
		ks = max(ks, next-float64(k)/float64(n), float64(k+1)/float64(n)-prev)
		prev = next
	}
	ks = max(ks, 1-prev)
	return ks, true, nil
}

// bernsteinGate runs the fp16 gate on data, the flow parameters (M + 5 per flow) of a layer whose
// runtime table has tableSize points (0: the default).
func bernsteinGate(name string, data []float32, degree, tableSize int) (BernsteinGate, error) {
	g := tableSize
	if g == 0 {
		g = runtime.DefaultBernsteinTable
	}
	np := degree + 5
	gate := BernsteinGate{Name: name, Flows: len(data) / np, Bound: runtime.BernsteinKSBound(g), Monotone: true}
	if len(data)%np != 0 {
		return gate, fmt.Errorf("convert: tensor %s: %d values are not whole flows of %d parameters", name, len(data), np)
	}
	workers := min(goruntime.GOMAXPROCS(0), max(gate.Flows, 1))
	var (
		mu     sync.Mutex
		next   int
		failed bool
		wg     sync.WaitGroup
	)
	fail := func(i int, monotone bool, reason string) {
		if !failed || (!monotone && gate.Monotone) {
			gate.Monotone = gate.Monotone && monotone
			gate.Reason = fmt.Sprintf("flow %d: %s", i, reason)
		}
		failed = true
	}
	var setupErr error
	for w := 0; w < workers; w++ {
		c, err := newBernsteinFlowCheck(degree, g)
		if err != nil {
			setupErr = err
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := failed || i >= gate.Flows
				mu.Unlock()
				if stop {
					return
				}
				ks, monotone, err := c.check(data[i*np : (i+1)*np])
				mu.Lock()
				gate.KS = max(gate.KS, ks)
				switch {
				case err != nil:
					fail(i, monotone, err.Error())
				case ks > gate.Bound:
					fail(i, true, fmt.Sprintf("the runtime's samples from fp16 parameters may be %.3g from the float32 flow in Kolmogorov distance, above the bound 1/(G−1) = %.3g", ks, gate.Bound))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if setupErr != nil {
		return gate, fmt.Errorf("convert: tensor %s: %w", name, setupErr)
	}
	gate.F16 = !failed
	if failed {
		gate.Reason = "Bernstein fp16 gate: " + gate.Reason
	}
	return gate, nil
}
