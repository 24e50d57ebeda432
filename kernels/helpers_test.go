package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// newRand returns a deterministic source of test data.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randSlice returns n values uniform in [-1, 1).
func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
	return x
}

// randSlice64 returns n values uniform in [-1, 1).
func randSlice64(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*r.Float64() - 1
	}
	return x
}

// fill returns n copies of v.
func fill(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// eps32 is the float32 unit roundoff.
const eps32 = 1.0 / (1 << 24)

// closeTo reports whether got is within tol of want (NaN never matches).
func closeTo(got, want, tol float64) bool {
	return got == want || math.Abs(got-want) <= tol
}

// shortOr returns short under -short and long otherwise.
func shortOr[T any](t testing.TB, short, long T) T {
	if testing.Short() {
		return short
	}
	return long
}

// opShape returns the stored shape of a Gemm operand whose op is rows×cols: cols×rows if trans.
func opShape(rows, cols int, trans bool) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

// gemmDispatchCase returns a function that runs Gemm on a 37×300 by 300×53 product of random
// values from seed (it crosses the tile, the medium-driver and the kc thresholds) and returns C,
// and k, for comparing the assembly and generic paths.
func gemmDispatchCase(seed uint64) (run func() []float32, k int) {
	r := newRand(seed)
	const m, n = 37, 53
	k = 300
	a, b := randSlice(r, m*k), randSlice(r, k*n)
	return func() []float32 {
		c := make([]float32, m*n)
		Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		return c
	}, k
}

// checkGemmPaths fails t unless the C of the assembly path (asm, named name) and of the generic
// path agree to float32 rounding.
func checkGemmPaths(t *testing.T, name string, k int, asm, gen []float32) {
	t.Helper()
	if len(asm) == 0 || len(asm) != len(gen) {
		t.Fatalf("Gemm: %s gives %d values, generic %d", name, len(asm), len(gen))
	}
	for i := range asm {
		if !closeTo(float64(asm[i]), float64(gen[i]), 1e-5*float64(k)) {
			t.Fatalf("Gemm c[%d]: %s %g, generic %g", i, name, asm[i], gen[i])
		}
	}
}

// firstBitDiff returns the first index where got and want differ in their bits, or -1; slices of
// different lengths differ at the shorter one's length.
func firstBitDiff(got, want []float32) int {
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// randomWords returns, for each of twinSizes, that many random words (ziggurat input).
func randomWords(r *rand.Rand) [][]uint32 {
	var cases [][]uint32
	for _, n := range twinSizes {
		w := make([]uint32, n)
		for i := range w {
			w[i] = r.Uint32()
		}
		cases = append(cases, w)
	}
	return cases
}

// checkZigFast fails t unless fast, a twin of the ziggurat's fast path, stops at the same word as
// zigFastGeneric on each of cases and writes the same bits before it and nothing from there on.
func checkZigFast(t *testing.T, fast func(words []uint32, out []float32) int, cases [][]uint32) {
	t.Helper()
	for ci, words := range cases {
		got, want := fill(len(words), 7), fill(len(words), 7)
		gi, wi := fast(words, got), zigFastGeneric(words, want)
		if gi != wi {
			t.Fatalf("case %d (%d words): stops at %d, generic %d", ci, len(words), gi, wi)
		}
		if i := firstBitDiff(got, want); i >= 0 {
			t.Fatalf("case %d: out[%d] = %g (word %#x), generic %g", ci, i, got[i], words[i], want[i])
		}
	}
}
