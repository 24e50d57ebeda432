package autodiff

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// naiveAdaptiveAvg is PyTorch's adaptive_avg_pool2d written out from its definition (start
// index floor(i·H/OH), end index ceil((i+1)·H/OH)) in float64.
func naiveAdaptiveAvg(x []float64, n, c, h, w, oh, ow int) []float64 {
	out := make([]float64, n*c*oh*ow)
	for img := 0; img < n*c; img++ {
		for i := 0; i < oh; i++ {
			ys := i * h / oh
			ye := (i + 1) * h / oh
			if (i+1)*h%oh != 0 {
				ye++
			}
			for j := 0; j < ow; j++ {
				xs := j * w / ow
				xe := (j + 1) * w / ow
				if (j+1)*w%ow != 0 {
					xe++
				}
				s, cnt := 0.0, 0
				for y := ys; y < ye; y++ {
					for xx := xs; xx < xe; xx++ {
						s += x[img*h*w+y*w+xx]
						cnt++
					}
				}
				out[(img*oh+i)*ow+j] = s / float64(cnt)
			}
		}
	}
	return out
}

func TestAdaptiveAvgPool2D(t *testing.T) {
	cases := []struct{ n, c, h, w, oh, ow int }{
		{2, 3, 4, 4, 1, 1},
		{1, 2, 5, 7, 3, 2}, // overlapping windows
		{2, 1, 6, 6, 3, 3}, // = AvgPool2d(2)
		{1, 1, 3, 3, 3, 3}, // identity
		{1, 2, 7, 5, 2, 4},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%dx%d_to_%dx%d", tc.h, tc.w, tc.oh, tc.ow), func(t *testing.T) {
			x := make([]float64, tc.n*tc.c*tc.h*tc.w)
			for i := range x {
				x[i] = r.NormFloat64()
			}
			tp := NewTape[float64]()
			y := tp.AdaptiveAvgPool2D(tp.Const(x, tc.n, tc.c, tc.h, tc.w), tc.oh, tc.ow)
			if err := tp.Err(); err != nil {
				t.Fatal(err)
			}
			if got, want := y.Shape(), []int{tc.n, tc.c, tc.oh, tc.ow}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("shape %v, want %v", got, want)
			}
			assertClose(t, "AdaptiveAvgPool2D", y.Value(), naiveAdaptiveAvg(x, tc.n, tc.c, tc.h, tc.w, tc.oh, tc.ow), 1e-12)
			c := gradCase{
				name:   "AdaptiveAvgPool2D",
				shapes: fixed([]int{tc.n, tc.c, tc.h, tc.w}),
				build: func(tp *Tape[float64], in []*Var[float64]) *Var[float64] {
					return tp.AdaptiveAvgPool2D(in[0], tc.oh, tc.ow)
				},
			}
			checkGrad(t, c, r)
		})
	}
}

func TestAdaptiveAvgPool2DErrors(t *testing.T) {
	cases := []struct {
		name   string
		shape  []int
		oh, ow int
	}{
		{"rank3", []int{1, 2, 3}, 1, 1},
		{"zeroOut", []int{1, 1, 3, 3}, 0, 1},
		{"tooLarge", []int{1, 1, 3, 3}, 4, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			tp := NewTape[float64]()
			tp.AdaptiveAvgPool2D(tp.Const(make([]float64, n), tc.shape...), tc.oh, tc.ow)
			if tp.Err() == nil {
				t.Fatal("no error")
			}
		})
	}
}
