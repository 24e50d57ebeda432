package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gradCase is one gradient check: random inputs of the given shapes (optionally transformed by
// prep to stay inside the op's domain) are fed to build, and the analytic vector-Jacobian
// product is compared with central finite differences in float64.
type gradCase struct {
	name   string
	shapes func(r *rand.Rand) [][]int
	prep   func(i int, shape []int, x []float64)
	build  func(t *Tape[float64], in []*Var[float64]) *Var[float64]
}

const (
	fdStep   = 1e-5
	fdMaxRel = 1e-4
)

func fixed(shapes ...[]int) func(*rand.Rand) [][]int {
	return func(*rand.Rand) [][]int { return shapes }
}

func dim(r *rand.Rand) int { return 1 + r.IntN(4) }

// awayFrom moves every value at least 0.1 away from the points in kinks (non-differentiable
// points), so the finite differences never straddle one.
func awayFrom(kinks ...float64) func(int, []int, []float64) {
	return func(_ int, _ []int, x []float64) {
		for i := range x {
			for _, k := range kinks {
				if d := x[i] - k; math.Abs(d) < 0.1 {
					x[i] = k + math.Copysign(0.1+math.Abs(d), d)
				}
			}
		}
	}
}

func positive(_ int, _ []int, x []float64) {
	for i := range x {
		x[i] = 0.3 + math.Abs(x[i])
	}
}

// prepDiag adds 3 to the diagonal of every square 2-D input (well-conditioned triangles).
func prepDiag(_ int, shape []int, x []float64) {
	if len(shape) == 2 && shape[0] == shape[1] {
		n := shape[0]
		for i := 0; i < n; i++ {
			x[i*n+i] = 3 + math.Abs(x[i*n+i])
		}
	}
}

// spd builds the symmetric positive-definite matrix X·Xᵀ + n·I from a square leaf X.
func spd(t *Tape[float64], x *Var[float64]) *Var[float64] {
	n := x.Shape()[0]
	eye := make([]float64, n*n)
	for i := 0; i < n; i++ {
		eye[i*n+i] = float64(n)
	}
	return t.Add(t.MatMulTrans(x, x, false, true), t.Const(eye, n, n))
}

func gradCases() []gradCase {
	var cs []gradCase
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		tr := tr
		cs = append(cs, gradCase{
			name: fmt.Sprintf("MatMul/transA=%v,transB=%v", tr[0], tr[1]),
			shapes: func(r *rand.Rand) [][]int {
				m, k, n := dim(r)+1, dim(r)+1, dim(r)+1
				a, b := []int{m, k}, []int{k, n}
				if tr[0] {
					a = []int{k, m}
				}
				if tr[1] {
					b = []int{n, k}
				}
				return [][]int{a, b}
			},
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.MatMulTrans(in[0], in[1], tr[0], tr[1])
			},
		})
	}
	cs = append(cs, gradCase{
		name: "Linear",
		shapes: func(r *rand.Rand) [][]int {
			n, i, o := dim(r), dim(r), dim(r)
			return [][]int{{n, i}, {o, i}, {o}}
		},
		build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Linear(in[0], in[1], in[2]) },
	})
	bcasts := []struct {
		name string
		sh   func(r *rand.Rand) [][]int
	}{
		{"same", func(r *rand.Rand) [][]int { m, n := dim(r), dim(r); return [][]int{{m, n}, {m, n}} }},
		{"scalar", func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r)}, {}} }},
		{"scalarLeft", func(r *rand.Rand) [][]int { return [][]int{{}, {dim(r), dim(r)}} }},
		{"row", func(r *rand.Rand) [][]int { m, n := dim(r)+1, dim(r)+1; return [][]int{{m, n}, {n}} }},
		{"column", func(r *rand.Rand) [][]int { m, n := dim(r)+1, dim(r)+1; return [][]int{{m, n}, {m, 1}} }},
		{"general", func(r *rand.Rand) [][]int {
			a, b, c := dim(r)+1, dim(r)+1, dim(r)+1
			return [][]int{{a, 1, c}, {b, 1}}
		}},
		{"outer", func(r *rand.Rand) [][]int { m, n := dim(r)+1, dim(r)+1; return [][]int{{m, 1}, {1, n}} }},
	}
	ops := []struct {
		name string
		f    func(t *Tape[float64], a, b *Var[float64]) *Var[float64]
	}{
		{"Add", (*Tape[float64]).Add}, {"Sub", (*Tape[float64]).Sub},
		{"Mul", (*Tape[float64]).Mul}, {"Div", (*Tape[float64]).Div},
	}
	for _, op := range ops {
		for _, bc := range bcasts {
			op := op
			cs = append(cs, gradCase{
				name:   op.name + "/" + bc.name,
				shapes: bc.sh,
				prep: func(i int, _ []int, x []float64) {
					if i == 1 && op.name == "Div" {
						awayFrom(0)(i, nil, x)
					}
				},
				build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return op.f(t, in[0], in[1]) },
			})
		}
	}
	unary := []struct {
		name string
		prep func(int, []int, []float64)
		f    func(t *Tape[float64], a *Var[float64]) *Var[float64]
	}{
		{"Neg", nil, (*Tape[float64]).Neg},
		{"Scale", nil, func(t *Tape[float64], a *Var[float64]) *Var[float64] { return t.Scale(a, -1.7) }},
		{"AddScalar", nil, func(t *Tape[float64], a *Var[float64]) *Var[float64] { return t.AddScalar(a, 0.3) }},
		{"Softplus", nil, (*Tape[float64]).Softplus},
		{"Exp", nil, (*Tape[float64]).Exp},
		{"Log", positive, (*Tape[float64]).Log},
		{"Sqrt", positive, (*Tape[float64]).Sqrt},
		{"Square", nil, (*Tape[float64]).Square},
		{"Pow", positive, func(t *Tape[float64], a *Var[float64]) *Var[float64] { return t.Pow(a, 2.5) }},
		{"PowNeg", positive, func(t *Tape[float64], a *Var[float64]) *Var[float64] { return t.Pow(a, -1.5) }},
		{"Abs", awayFrom(0), (*Tape[float64]).Abs},
		{"Tanh", nil, (*Tape[float64]).Tanh},
		{"ReLU", awayFrom(0), (*Tape[float64]).ReLU},
		{"Sigmoid", nil, (*Tape[float64]).Sigmoid},
		{"GELU", nil, (*Tape[float64]).GELU},
		{"Clamp", awayFrom(-0.5, 0.5), func(t *Tape[float64], a *Var[float64]) *Var[float64] { return t.Clamp(a, -0.5, 0.5) }},
		{"Softmax", nil, (*Tape[float64]).Softmax},
		{"LogSoftmax", nil, (*Tape[float64]).LogSoftmax},
		{"Sum", nil, (*Tape[float64]).Sum},
		{"Mean", nil, (*Tape[float64]).Mean},
	}
	for _, u := range unary {
		if u.f == nil {
			continue
		}
		u := u
		cs = append(cs, gradCase{
			name:   u.name,
			shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r), dim(r) + 1}} },
			prep:   u.prep,
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return u.f(t, in[0]) },
		})
	}
	for _, axis := range []int{0, 1, 2, -1} {
		for _, keep := range []bool{false, true} {
			axis, keep := axis, keep
			cs = append(cs, gradCase{
				name:   fmt.Sprintf("SumAxis/%d/keep=%v", axis, keep),
				shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r), dim(r)}} },
				build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
					return t.SumAxis(in[0], axis, keep)
				},
			}, gradCase{
				name:   fmt.Sprintf("MeanAxis/%d/keep=%v", axis, keep),
				shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r), dim(r)}} },
				build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
					return t.MeanAxis(in[0], axis, keep)
				},
			})
		}
	}
	cs = append(cs,
		gradCase{
			name:   "Reshape",
			shapes: fixed([]int{2, 3, 4}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Mul(t.Reshape(in[0], 4, -1), t.Reshape(in[0], 4, 6))
			},
		},
		gradCase{
			name:   "Transpose",
			shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r)}} },
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Transpose(in[0]) },
		},
		gradCase{
			name:   "Permute3",
			shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r) + 1, dim(r) + 1, dim(r) + 1}} },
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Permute(in[0], 2, 0, 1) },
		},
		gradCase{
			name:   "Permute4",
			shapes: fixed([]int{2, 3, 1, 4}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Permute(in[0], 1, 3, 0, 2) },
		},
		gradCase{
			name:   "Slice/biasColumn",
			shapes: func(r *rand.Rand) [][]int { return [][]int{{dim(r), dim(r) + 2}} },
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				n := in[0].Shape()[1]
				w := t.Slice(in[0], 1, 0, n-1)
				b := t.Slice(in[0], -1, n-1, n)
				return t.Mul(w, t.Square(b)) // column broadcast of the bias column
			},
		},
		gradCase{
			name:   "Slice/axis0",
			shapes: fixed([]int{5, 2, 3}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Slice(in[0], 0, 1, 4) },
		},
		gradCase{
			name:   "Concat/axis1",
			shapes: fixed([]int{2, 1, 3}, []int{2, 4, 3}, []int{2, 2, 3}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Concat(1, in[0], in[1], t.Square(in[2]))
			},
		},
		gradCase{
			name:   "Concat/axis0",
			shapes: fixed([]int{1, 3}, []int{2, 3}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Concat(0, in[0], in[1], in[0])
			},
		},
		gradCase{
			name:   "Gather",
			shapes: fixed([]int{3, 4}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Gather(in[0], []int{0, 5, 5, 11, 2, 7}, 2, 3)
			},
		},
		gradCase{
			name:   "Scatter/vecToChol",
			shapes: fixed([]int{4}, []int{6}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				diag := []int{0, 5, 10, 15}
				return t.Add(t.Scatter(t.Softplus(in[0]), diag, 4, 4), t.Scatter(in[1], TrilIndices(4, -1), 4, 4))
			},
		},
		gradCase{
			name:   "VecToChol",
			shapes: fixed([]int{10}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.VecToChol(in[0]) },
		},
		gradCase{
			name:   "Diag",
			shapes: fixed([]int{2, 3, 3}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Diag(in[0]) },
		},
		gradCase{
			name:   "DiagEmbed",
			shapes: fixed([]int{2, 3}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.DiagEmbed(in[0]) },
		},
		gradCase{
			name:   "NLLPerExample",
			shapes: fixed([]int{4, 5}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.NLLPerExample(t.Scale(in[0], 3), []int{0, 4, 2, 2})
			},
		},
		gradCase{
			name:   "CrossEntropy",
			shapes: fixed([]int{3, 4}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.CrossEntropy(in[0], []int{3, 0, 1})
			},
		},
		gradCase{
			name:   "GaussianNLL/fixed",
			shapes: fixed([]int{5}, []int{5}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.GaussianNLL(in[0], in[1], t.Scalar(2.5))
			},
		},
		gradCase{
			name:   "GaussianNLL/learnedScalar",
			shapes: fixed([]int{5, 2}, []int{5, 2}, []int{}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.GaussianNLL(in[0], in[1], t.Softplus(in[2]))
			},
		},
		gradCase{
			name:   "GaussianNLL/learnedPerOutput",
			shapes: fixed([]int{5, 2}, []int{5, 2}, []int{2}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.GaussianNLLPerElement(in[0], in[1], t.Exp(in[2]))
			},
		},
		gradCase{
			name:   "Dropout/train",
			shapes: fixed([]int{4, 6}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Dropout(in[0], 0.3, true, rand.New(rand.NewPCG(1, 2)))
			},
		},
		gradCase{
			name:   "Dropout/eval",
			shapes: fixed([]int{4, 6}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.Square(t.Dropout(in[0], 0.3, false, nil))
			},
		},
	)
	convs := []struct {
		name string
		x, w []int
		bias bool
		opt  Conv2DOptions
	}{
		{"plain", []int{2, 2, 5, 5}, []int{3, 2, 3, 3}, true, Conv2DOptions{}},
		{"stride2pad1", []int{2, 3, 6, 5}, []int{2, 3, 3, 3}, true, Conv2DOptions{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"dilation", []int{1, 2, 7, 7}, []int{2, 2, 3, 2}, false, Conv2DOptions{DilH: 2, DilW: 3, PadH: 2, PadW: 1}},
		{"asymmetric", []int{1, 1, 6, 8}, []int{2, 1, 2, 3}, true, Conv2DOptions{StrideH: 1, StrideW: 3, PadW: 2}},
		{"1x1", []int{3, 4, 2, 2}, []int{5, 4, 1, 1}, true, Conv2DOptions{}},
	}
	for _, c := range convs {
		c := c
		sh := [][]int{c.x, c.w}
		if c.bias {
			sh = append(sh, []int{c.w[0]})
		}
		cs = append(cs, gradCase{
			name:   "Conv2D/" + c.name,
			shapes: fixed(sh...),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				var b *Var[float64]
				if c.bias {
					b = in[2]
				}
				return t.Conv2D(in[0], in[1], b, c.opt)
			},
		})
	}
	pools := []Pool2DOptions{
		{KH: 2, KW: 2},
		{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1},
	}
	for i, p := range pools {
		p := p
		cs = append(cs, gradCase{
			name:   fmt.Sprintf("MaxPool2D/%d", i),
			shapes: fixed([]int{2, 2, 5, 6}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.MaxPool2D(in[0], p) },
		}, gradCase{
			name:   fmt.Sprintf("AvgPool2D/%d", i),
			shapes: fixed([]int{2, 2, 5, 6}),
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.AvgPool2D(in[0], p) },
		})
	}
	cs = append(cs, gradCase{
		name:   "GlobalAvgPool2D",
		shapes: fixed([]int{2, 3, 4, 5}),
		build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.GlobalAvgPool2D(in[0]) },
	})
	for _, bn := range []struct {
		name  string
		x     []int
		train bool
	}{
		{"1d/train", []int{6, 3}, true},
		{"1dL/train", []int{3, 2, 4}, true},
		{"2d/train", []int{2, 3, 3, 2}, true},
		{"2d/eval", []int{2, 3, 3, 2}, false},
	} {
		bn := bn
		cs = append(cs, gradCase{
			name:   "BatchNorm/" + bn.name,
			shapes: fixed(bn.x, []int{bn.x[1]}, []int{bn.x[1]}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				st := NewBatchNormState[float64](bn.x[1])
				for i := range st.RunningMean {
					st.RunningMean[i] = 0.1 * float64(i)
					st.RunningVar[i] = 0.5 + float64(i)
				}
				return t.BatchNorm(in[0], in[1], in[2], st, bn.train)
			},
		})
	}
	cs = append(cs, gradCase{
		name:   "BatchNorm/noAffine",
		shapes: fixed([]int{5, 2, 3}),
		build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
			return t.BatchNorm(in[0], nil, nil, NewBatchNormState[float64](2), true)
		},
	})
	cs = append(cs,
		gradCase{
			name:   "Cholesky",
			shapes: func(r *rand.Rand) [][]int { n := dim(r) + 1; return [][]int{{n, n}} },
			build:  func(t *Tape[float64], in []*Var[float64]) *Var[float64] { return t.Cholesky(spd(t, in[0])) },
		},
		gradCase{
			name:   "LogDetChol",
			shapes: fixed([]int{4, 4}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.LogDetChol(t.Cholesky(spd(t, in[0])))
			},
		},
		gradCase{
			name:   "CholeskySolve",
			shapes: fixed([]int{3, 3}, []int{3, 2}),
			build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
				return t.CholeskySolve(t.Cholesky(spd(t, in[0])), in[1])
			},
		},
	)
	for _, left := range []bool{true, false} {
		for _, lower := range []bool{true, false} {
			for _, trans := range []bool{false, true} {
				left, lower, trans := left, lower, trans
				cs = append(cs, gradCase{
					name: fmt.Sprintf("SolveTriangular/left=%v,lower=%v,trans=%v", left, lower, trans),
					shapes: func(r *rand.Rand) [][]int {
						k, o := dim(r)+1, dim(r)
						if left {
							return [][]int{{k, k}, {k, o}}
						}
						return [][]int{{k, k}, {o, k}}
					},
					prep: prepDiag,
					build: func(t *Tape[float64], in []*Var[float64]) *Var[float64] {
						return t.SolveTriangular(in[0], in[1], left, lower, trans)
					},
				})
			}
		}
	}
	return cs
}

// checkGrad runs one gradient check and returns the largest relative error found.
func checkGrad(tb testing.TB, c gradCase, r *rand.Rand) float64 {
	tb.Helper()
	shapes := c.shapes(r)
	data := make([][]float64, len(shapes))
	for i, sh := range shapes {
		n := 1
		for _, d := range sh {
			n *= d
		}
		data[i] = make([]float64, n)
		for j := range data[i] {
			data[i][j] = r.NormFloat64()
		}
		if c.prep != nil {
			c.prep(i, sh, data[i])
		}
	}
	tape := NewTape[float64]()
	run := func() *Var[float64] {
		tape.Reset()
		in := make([]*Var[float64], len(shapes))
		for i := range shapes {
			in[i] = tape.Leaf(data[i], shapes[i]...)
		}
		out := c.build(tape, in)
		if err := tape.Err(); err != nil {
			tb.Fatalf("%s: shapes %v: %v", c.name, shapes, err)
		}
		return out
	}
	out := run()
	seed := make([]float64, out.Len())
	for i := range seed {
		seed[i] = r.NormFloat64()
	}
	in := make([]*Var[float64], len(shapes))
	copy(in, tape.nodes[:len(shapes)])
	if err := tape.BackwardFrom(out, seed); err != nil {
		tb.Fatalf("%s: Backward: %v", c.name, err)
	}
	analytic := make([][]float64, len(shapes))
	for i, v := range in {
		analytic[i] = make([]float64, len(data[i]))
		if g := v.Grad(); g != nil {
			copy(analytic[i], g)
		}
	}
	loss := func() float64 {
		o := run().Value()
		var s float64
		for i, v := range o {
			s += v * seed[i]
		}
		return s
	}
	worst := 0.0
	for i := range data {
		for j := range data[i] {
			x := data[i][j]
			data[i][j] = x + fdStep
			fp := loss()
			data[i][j] = x - fdStep
			fm := loss()
			data[i][j] = x
			num := (fp - fm) / (2 * fdStep)
			a := analytic[i][j]
			rel := math.Abs(a-num) / math.Max(math.Max(math.Abs(a), math.Abs(num)), 1e-3)
			if rel > worst {
				worst = rel
			}
			if !(rel < fdMaxRel) {
				tb.Errorf("%s: shapes %v: input %d element %d: analytic %.10g, numeric %.10g (rel %.3g)",
					c.name, shapes, i, j, a, num, rel)
				return worst
			}
		}
	}
	return worst
}

func TestGradients(t *testing.T) {
	trials := 3
	if testing.Short() {
		trials = 1
	}
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(42, uint64(len(c.name))))
			for k := 0; k < trials; k++ {
				checkGrad(t, c, r)
			}
		})
	}
}
