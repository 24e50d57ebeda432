package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloat32MatchesFloat64 runs one graph on a float32 tape (kernels.Gemm, Im2Col, Col2Im) and
// on a float64 tape (generic loops) and compares values and gradients.
func TestFloat32MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	shapes := [][]int{{2, 3, 6, 6}, {4, 3, 3, 3}, {4}, {5, 16}, {5}, {3, 3}, {2, 3}, {3, 2}}
	data := make([][]float64, len(shapes))
	for i, sh := range shapes {
		n := 1
		for _, d := range sh {
			n *= d
		}
		data[i] = randSlice(r, n)
	}
	labels := []int{1, 4}
	build := func(t64 *Tape[float64], t32 *Tape[float32]) (out64 []float64, grads64 [][]float64, out32 []float32, grads32 [][]float32) {
		in64 := make([]*Var[float64], len(shapes))
		for i := range shapes {
			in64[i] = t64.Leaf(data[i], shapes[i]...)
		}
		in32 := make([]*Var[float32], len(shapes))
		for i := range shapes {
			d := make([]float32, len(data[i]))
			for j, v := range data[i] {
				d[j] = float32(v)
			}
			in32[i] = t32.Leaf(d, shapes[i]...)
		}
		o64 := graph(t64, in64, labels)
		o32 := graph(t32, in32, labels)
		if err := t64.Backward(o64); err != nil {
			t.Fatal(err)
		}
		if err := t32.Backward(o32); err != nil {
			t.Fatal(err)
		}
		for i := range shapes {
			grads64 = append(grads64, in64[i].Grad())
			grads32 = append(grads32, in32[i].Grad())
		}
		return o64.Value(), grads64, o32.Value(), grads32
	}
	v64, g64, v32, g32 := build(NewTape[float64](), NewTape[float32]())
	if d := math.Abs(float64(v32[0]) - v64[0]); !(d <= 1e-4*math.Max(1, math.Abs(v64[0]))) {
		t.Fatalf("loss: float32 %v, float64 %v", v32[0], v64[0])
	}
	for i := range g64 {
		scale := 0.0
		for _, v := range g64[i] {
			scale = math.Max(scale, math.Abs(v))
		}
		for j := range g64[i] {
			if d := math.Abs(float64(g32[i][j]) - g64[i][j]); !(d <= 1e-4*math.Max(scale, 1e-3)) {
				t.Fatalf("input %d grad %d: float32 %v, float64 %v", i, j, g32[i][j], g64[i][j])
			}
		}
	}
}

// graph: conv → relu → maxpool → flatten → linear → cross-entropy, plus a Cholesky / triangular
// solve term and the four MatMul transpose variants.
func graph[T Float](t *Tape[T], in []*Var[T], labels []int) *Var[T] {
	h := t.ReLU(t.Conv2D(in[0], in[1], in[2], Conv2DOptions{PadH: 1, PadW: 1, StrideH: 2, StrideW: 2}))
	h = t.MaxPool2D(h, Pool2DOptions{KH: 2, KW: 2, StrideH: 1, StrideW: 1})
	h = t.Reshape(h, 2, -1) // (2, 4·2·2)
	logits := t.Linear(h, in[3], in[4])
	loss := t.CrossEntropy(logits, labels)
	a := t.Add(t.MatMulTrans(in[5], in[5], false, true), t.Full(3, 3, 3))
	l := t.Cholesky(a)
	x := t.SolveTriangular(l, in[7], true, true, true)
	loss = t.Add(loss, t.Scale(t.Sum(t.Square(x)), 0.1))
	loss = t.Add(loss, t.LogDetChol(l))
	m := t.Add(t.MatMulTrans(in[6], in[7], true, true), t.MatMulTrans(in[7], in[6], false, false))
	loss = t.Add(loss, t.Mean(t.Square(t.Add(m, t.MatMulTrans(in[7], in[6], false, false)))))
	return loss
}
