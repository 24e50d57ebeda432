package autodiff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// convPoolGraph is a small CNN on a batch large enough for every op to split among the workers
// (above minParallelFlops and minParallelElems): conv → ReLU+2×2 pool → conv (no bias) → 3×3
// pool at stride 2 (overlapping windows) → linear (its three products split by columns,
// kernels.GemmColBlock) → sum of squares. It returns the loss and the
// tensors whose values and gradients must not depend on the worker count.
func convPoolGraph(t *Tape[float32], in [][]float32, nan bool) (*Var[float32], []*Var[float32]) {
	x := t.Leaf(in[0], 16, 4, 16, 16)
	w1, b1 := t.Leaf(in[1], 8, 4, 3, 3), t.Leaf(in[2], 8)
	w2 := t.Leaf(in[3], 32, 8, 3, 3)
	h1 := t.Conv2D(x, w1, b1, Conv2DOptions{PadH: 1, PadW: 1})
	p1 := t.ReLUMaxPool2D(h1, Pool2DOptions{KH: 2, KW: 2})
	if nan {
		p1.Value()[5*8*8+17] = float32(math.NaN()) // image 5: a NaN the 3×3 pool must carry
	}
	h2 := t.Conv2D(p1, w2, nil, Conv2DOptions{PadH: 1, PadW: 1})
	p2 := t.MaxPool2D(h2, Pool2DOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	w3, b3 := t.Leaf(in[4], 200, 512), t.Leaf(in[5], 200)
	y := t.Linear(t.Reshape(p2, 16, 512), w3, b3)
	return t.Sum(t.Square(y)), []*Var[float32]{x, w1, b1, w2, h1, p1, h2, p2, w3, b3, y}
}

// TestWorkersSameBits checks that SetWorkers changes nothing in the values and gradients of a
// CNN, to the bit: the convolutions' forward and backward passes (the weight gradient one chain
// beside the input gradients), both pools (2×2 with ReLU; 3×3 windows that overlap, whose
// gradients add up in one element) and the linear layer's products split among 2, 3 and 7
// workers as they run on one.
func TestWorkersSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{16 * 4 * 16 * 16, 8 * 4 * 9, 8, 32 * 8 * 9, 200 * 512, 200}
	in := make([][]float32, len(sizes))
	for i, n := range sizes {
		in[i] = make([]float32, n)
		for j := range in[i] {
			in[i][j] = float32(rng.NormFloat64())
		}
	}
	for _, nan := range []bool{false, true} {
		run := func(workers int) (float32, [][]float32) {
			tp := NewTape[float32]()
			tp.SetWorkers(workers)
			loss, vs := convPoolGraph(tp, in, nan)
			if err := tp.Backward(loss); err != nil {
				t.Fatal(err)
			}
			var out [][]float32
			for _, v := range vs {
				out = append(out, append([]float32(nil), v.Value()...), append([]float32(nil), v.Grad()...))
			}
			return loss.Item(), out
		}
		want, wantBits := run(1)
		if nan != math.IsNaN(float64(want)) {
			t.Fatalf("nan %v: loss %v", nan, want)
		}
		for _, workers := range []int{2, 3, 7} {
			got, gotBits := run(workers)
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("nan %v, %d workers: loss %v, one worker %v", nan, workers, got, want)
			}
			for i := range wantBits {
				if len(gotBits[i]) != len(wantBits[i]) {
					t.Fatalf("nan %v, %d workers: tensor %d has %d values, want %d", nan, workers, i, len(gotBits[i]), len(wantBits[i]))
				}
				for j := range wantBits[i] {
					if math.Float32bits(gotBits[i][j]) != math.Float32bits(wantBits[i][j]) {
						t.Errorf("nan %v, %d workers: tensor %d (%s) element %d: %v, one worker %v", nan, workers, i/2,
							[]string{"value", "gradient"}[i%2], j, gotBits[i][j], wantBits[i][j])
						break
					}
				}
			}
		}
	}
}

func TestSetWorkers(t *testing.T) {
	tp := NewTape[float32]()
	for _, c := range []struct{ set, want int }{{0, 1}, {-3, 1}, {1, 1}, {4, 4}} {
		tp.SetWorkers(c.set)
		if got := tp.Workers(); got != c.want {
			t.Errorf("SetWorkers(%d): Workers() = %d, want %d", c.set, got, c.want)
		}
	}
	if got := NewTape[float64]().Workers(); got != 1 {
		t.Errorf("a new tape has %d workers, want 1", got)
	}
	tp.SetWorkers(4)
	for _, c := range []struct {
		n, want int
		cost    int64
	}{{100, 4, 1 << 20}, {3, 3, 1 << 20}, {100, 1, 1<<20 - 1}, {0, 1, 1 << 30}} {
		if got := tp.parts(c.n, c.cost, 1<<20); got != c.want {
			t.Errorf("parts(%d, %d) = %d, want %d", c.n, c.cost, got, c.want)
		}
	}
}

func TestSpanCovers(t *testing.T) {
	for n := 0; n < 20; n++ {
		for parts := 1; parts <= 7; parts++ {
			next := 0
			for p := range parts {
				lo, hi := span(n, parts, p)
				if lo != next || hi < lo || hi-lo > n/parts+1 {
					t.Fatalf("span(%d, %d, %d) = [%d, %d), want to start at %d", n, parts, p, lo, hi, next)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("span(%d, %d, ·) ends at %d", n, parts, next)
			}
		}
	}
}

// TestRunPartsPanic checks that a part's panic reaches the caller, after every part has ended.
func TestRunPartsPanic(t *testing.T) {
	done := make([]bool, 4)
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "part 2") {
			t.Fatalf("recovered %v, want part 2's panic", r)
		}
		for p, d := range done {
			if !d && p != 2 {
				t.Errorf("part %d had not ended when the panic reached the caller", p)
			}
		}
	}()
	runParts(4, func(p int) {
		if p == 2 {
			panic("part 2")
		}
		done[p] = true
	})
}
