package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxPool2x2MatchesWindows checks the unrolled 2×2 stride-2 path against the general
// window scan on inputs full of ties, NaNs and −∞ (drawn from seven values, ±0 among them), odd and even sizes:
// the same maxima and the same source indices, bit for bit.
func TestMaxPool2x2MatchesWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, 2, float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1))}
	for _, sz := range [][3]int{{1, 2, 2}, {3, 4, 4}, {2, 5, 7}, {4, 6, 3}, {1, 26, 26}, {2, 11, 11}} {
		nc, h, w := sz[0], sz[1], sz[2]
		t.Run(fmt.Sprintf("%dx%dx%d", nc, h, w), func(t *testing.T) {
			for trial := 0; trial < 50; trial++ {
				x := make([]float32, nc*h*w)
				for i := range x {
					x[i] = vals[r.IntN(len(vals))]
				}
				oh, ow := h/2, w/2
				got, want := make([]float32, nc*oh*ow), make([]float32, nc*oh*ow)
				gotArg, wantArg := make([]int, len(got)), make([]int, len(got))
				maxPool2x2(x, got, gotArg, nc, h, w, oh, ow)
				maxPoolWindows(x, want, wantArg, nc, h, w, oh, ow, 2, 2, Pool2DOptions{KH: 2, KW: 2})
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotArg[i] != wantArg[i] {
						t.Fatalf("output %d: 2x2 path %v from %d, window scan %v from %d (input %v)", i, got[i], gotArg[i], want[i], wantArg[i], x)
					}
				}
			}
		})
	}
}

// BenchmarkMaxPool2D compares the 2×2 stride-2 path with the general window scan on the first
// pooling of a 3×3-conv CNN on Fashion-MNIST (batch 160, 32 channels of 26×26), in one run:
// the ratio of the two ns/op is the gain.
func BenchmarkMaxPool2D(b *testing.B) {
	const nc, h, w = 160 * 32, 26, 26
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, nc*h*w)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	oh, ow := h/2, w/2
	out, arg := make([]float32, nc*oh*ow), make([]int, nc*oh*ow)
	b.Run("2x2", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			maxPool2x2(x, out, arg, nc, h, w, oh, ow)
		}
	})
	b.Run("windows", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			maxPoolWindows(x, out, arg, nc, h, w, oh, ow, 2, 2, Pool2DOptions{KH: 2, KW: 2})
		}
	})
}
