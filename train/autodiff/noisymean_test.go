package autodiff

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNoisyMeanMatchesChain checks NoisyMean against the four ops it fuses, for float32 and
// float64: the same values and the same gradients of mean and variance, bit for bit, under a
// random upstream gradient (BackwardFrom), with variances down to 0 (where only δ keeps √ finite).
func TestNoisyMeanMatchesChain(t *testing.T) {
	t.Run("float32", noisyMeanMatches[float32])
	t.Run("float64", noisyMeanMatches[float64])
}

func noisyMeanMatches[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 64, 1000} {
		m, v, eps, seed := make([]T, n), make([]T, n), make([]T, n), make([]T, n)
		for i := range m {
			m[i], eps[i], seed[i] = T(r.NormFloat64()), T(r.NormFloat64()), T(r.NormFloat64())
			v[i] = T(r.ExpFloat64() * 1e-3)
			if i%5 == 0 {
				v[i] = 0
			}
		}
		const delta = 1e-6
		run := func(fused bool) (out, gm, gv []T) {
			tp := NewTape[T]()
			mv, vv := tp.Leaf(slices.Clone(m), n), tp.Leaf(slices.Clone(v), n)
			var o *Var[T]
			if fused {
				o = tp.NoisyMean(mv, vv, delta, eps)
			} else {
				o = tp.Add(mv, tp.Mul(tp.Sqrt(tp.AddScalar(vv, delta)), tp.Const(eps, n)))
			}
			if err := tp.BackwardFrom(o, seed); err != nil {
				t.Fatal(err)
			}
			return slices.Clone(o.Value()), slices.Clone(mv.Grad()), slices.Clone(vv.Grad())
		}
		o1, gm1, gv1 := run(true)
		o2, gm2, gv2 := run(false)
		for _, c := range []struct {
			name      string
			got, want []T
		}{{"value", o1, o2}, {"mean gradient", gm1, gm2}, {"variance gradient", gv1, gv2}} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("n=%d: %s: NoisyMean %v, chain %v", n, c.name, c.got[:min(n, 4)], c.want[:min(n, 4)])
			}
		}
	}
	tp := NewTape[T]()
	tp.NoisyMean(tp.Const(make([]T, 3), 3), tp.Const(make([]T, 3), 3), 1e-6, make([]T, 2))
	if tp.Err() == nil {
		t.Error("NoisyMean with 2 noise values for 3 means did not fail")
	}
}
