package autodiff

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// normAxis maps a possibly negative axis (−1 = last) into [0, rank).
func normAxis(axis, rank int) (int, bool) {
	if axis < 0 {
		axis += rank
	}
	return axis, axis >= 0 && axis < rank
}

// split returns the products of the dimensions before and after axis.
func split(shape []int, axis int) (outer, dim, inner int) {
	outer, inner = 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return outer, shape[axis], inner
}

// Sum returns the sum of all elements of a as a scalar (shape []), as torch.sum(a).
func (t *Tape[T]) Sum(a *Var[T]) *Var[T] { return t.sumAll("Sum", a, 1) }

// Mean returns the mean of all elements of a as a scalar (shape []), as torch.mean(a). The mean
// of an empty tensor is NaN.
func (t *Tape[T]) Mean(a *Var[T]) *Var[T] {
	if !t.check("Mean", a) {
		return t.placeholder()
	}
	return t.sumAll("Mean", a, 1/T(len(a.value)))
}

func (t *Tape[T]) sumAll(name string, a *Var[T], scale T) *Var[T] {
	if !t.check(name, a) {
		return t.placeholder()
	}
	out := t.newVar(nil, false)
	var s float64
	for _, x := range a.value {
		s += float64(x)
	}
	out.value[0] = T(s) * scale
	t.record(out, func() {
		ga := a.gradBuf()
		g := out.grad[0] * scale
		for i := range ga {
			ga[i] += g
		}
	}, a)
	return out
}

// SumAxis sums a along axis (negative counts from the end), as torch.sum(a, dim=axis,
// keepdim=keepDim): the axis is removed from the shape unless keepDim is true, when it becomes 1.
func (t *Tape[T]) SumAxis(a *Var[T], axis int, keepDim bool) *Var[T] {
	return t.sumAxis("SumAxis", a, axis, keepDim, false)
}

// MeanAxis averages a along axis, as torch.mean(a, dim=axis, keepdim=keepDim).
func (t *Tape[T]) MeanAxis(a *Var[T], axis int, keepDim bool) *Var[T] {
	return t.sumAxis("MeanAxis", a, axis, keepDim, true)
}

func (t *Tape[T]) sumAxis(name string, a *Var[T], axis int, keepDim, mean bool) *Var[T] {
	if !t.check(name, a) {
		return t.placeholder()
	}
	ax, ok := normAxis(axis, len(a.shape))
	if !ok {
		return t.failf("%s: axis %d out of range for shape %v", name, axis, a.shape)
	}
	outer, dim, inner := split(a.shape, ax)
	shape := make([]int, 0, len(a.shape))
	shape = append(shape, a.shape[:ax]...)
	if keepDim {
		shape = append(shape, 1)
	}
	shape = append(shape, a.shape[ax+1:]...)
	out := t.newVar(shape, true)
	scale := T(1)
	if mean {
		scale = 1 / T(dim)
	}
	av, ov := a.value, out.value
	for o := 0; o < outer; o++ {
		dst := ov[o*inner : (o+1)*inner]
		for d := 0; d < dim; d++ {
			src := av[(o*dim+d)*inner : (o*dim+d+1)*inner]
			for i, x := range src {
				dst[i] += x
			}
		}
		if mean {
			for i := range dst {
				dst[i] *= scale
			}
		}
	}
	t.record(out, func() {
		ga, g := a.gradBuf(), out.grad
		for o := 0; o < outer; o++ {
			src := g[o*inner : (o+1)*inner]
			for d := 0; d < dim; d++ {
				dst := ga[(o*dim+d)*inner : (o*dim+d+1)*inner]
				for i, x := range src {
					dst[i] += x * scale
				}
			}
		}
	}, a)
	return out
}

// Reshape returns a with a new shape of the same element count (torch.reshape); one dimension
// may be −1 and is then inferred. The result shares a's value buffer.
func (t *Tape[T]) Reshape(a *Var[T], shape ...int) *Var[T] {
	if !t.check("Reshape", a) {
		return t.placeholder()
	}
	ns := make([]int, len(shape))
	copy(ns, shape)
	infer, known := -1, 1
	for i, d := range ns {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return t.failf("Reshape: invalid shape %v", shape)
		default:
			known *= d
		}
	}
	if infer >= 0 {
		if known == 0 || len(a.value)%known != 0 {
			return t.failf("Reshape: cannot infer shape %v from %d elements", shape, len(a.value))
		}
		ns[infer] = len(a.value) / known
	}
	if n, err := numel(ns); err != nil || n != len(a.value) {
		return t.failf("Reshape: shape %v does not hold the %d elements of %v", shape, len(a.value), a.shape)
	}
	out := t.alloc()
	out.shape = append(out.shape, ns...)
	out.value = a.value
	t.record(out, func() {
		ga := a.gradBuf()
		for i, g := range out.grad {
			ga[i] += g
		}
	}, a)
	return out
}

// Transpose returns the transpose of the 2-D a (a.T / torch.t).
func (t *Tape[T]) Transpose(a *Var[T]) *Var[T] {
	if !t.check("Transpose", a) {
		return t.placeholder()
	}
	if len(a.shape) != 2 {
		return t.failf("Transpose: need a 2-D tensor, got shape %v", a.shape)
	}
	m, n := a.shape[0], a.shape[1]
	out := t.newVar([]int{n, m}, false)
	av, ov := a.value, out.value
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			ov[j*m+i] = av[i*n+j]
		}
	}
	t.record(out, func() {
		ga, g := a.gradBuf(), out.grad
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				ga[i*n+j] += g[j*m+i]
			}
		}
	}, a)
	return out
}

// Permute reorders a's dimensions (torch.permute): output dimension i is input dimension
// perm[i]; perm must be a permutation of 0..rank−1.
func (t *Tape[T]) Permute(a *Var[T], perm ...int) *Var[T] {
	if !t.check("Permute", a) {
		return t.placeholder()
	}
	r := len(a.shape)
	if len(perm) != r {
		return t.failf("Permute: permutation %v does not match rank %d of shape %v", perm, r, a.shape)
	}
	seen := make([]bool, r)
	for _, p := range perm {
		if p < 0 || p >= r || seen[p] {
			return t.failf("Permute: %v is not a permutation of the %d dimensions", perm, r)
		}
		seen[p] = true
	}
	inStride := make([]int, r)
	s := 1
	for i := r - 1; i >= 0; i-- {
		inStride[i] = s
		s *= a.shape[i]
	}
	shape := make([]int, r)
	st := make([]int, r)
	for i, p := range perm {
		shape[i] = a.shape[p]
		st[i] = inStride[p]
	}
	zero := make([]int, r)
	out := t.newVar(shape, false)
	av, ov := a.value, out.value
	forEachBcast(shape, st, zero, func(i, ia, _ int) { ov[i] = av[ia] })
	t.record(out, func() {
		ga, g := a.gradBuf(), out.grad
		forEachBcast(shape, st, zero, func(i, ia, _ int) { ga[ia] += g[i] })
	}, a)
	return out
}

// Slice returns the elements start ≤ k < end of a along axis (a.narrow(axis, start, end−start)
// / a[..., start:end, ...]); a copy, not a view.
func (t *Tape[T]) Slice(a *Var[T], axis, start, end int) *Var[T] {
	if !t.check("Slice", a) {
		return t.placeholder()
	}
	ax, ok := normAxis(axis, len(a.shape))
	if !ok {
		return t.failf("Slice: axis %d out of range for shape %v", axis, a.shape)
	}
	outer, dim, inner := split(a.shape, ax)
	if start < 0 || end > dim || start > end {
		return t.failf("Slice: range [%d, %d) out of bounds for axis %d of shape %v", start, end, ax, a.shape)
	}
	shape := append([]int(nil), a.shape...)
	w := end - start
	shape[ax] = w
	out := t.newVar(shape, false)
	av, ov := a.value, out.value
	for o := 0; o < outer; o++ {
		copy(ov[o*w*inner:(o+1)*w*inner], av[(o*dim+start)*inner:(o*dim+end)*inner])
	}
	t.record(out, func() {
		ga, g := a.gradBuf(), out.grad
		for o := 0; o < outer; o++ {
			dst := ga[(o*dim+start)*inner : (o*dim+end)*inner]
			for i, x := range g[o*w*inner : (o+1)*w*inner] {
				dst[i] += x
			}
		}
	}, a)
	return out
}

// Concat joins vs along axis (torch.cat(vs, dim=axis)); all other dimensions must agree.
func (t *Tape[T]) Concat(axis int, vs ...*Var[T]) *Var[T] {
	if !t.check("Concat", vs...) {
		return t.placeholder()
	}
	if len(vs) == 0 {
		return t.failf("Concat: no inputs")
	}
	r := len(vs[0].shape)
	ax, ok := normAxis(axis, r)
	if !ok {
		return t.failf("Concat: axis %d out of range for shape %v", axis, vs[0].shape)
	}
	shape := append([]int(nil), vs[0].shape...)
	shape[ax] = 0
	for i, v := range vs {
		if len(v.shape) != r {
			return t.failf("Concat: input %d has shape %v, input 0 has %v", i, v.shape, vs[0].shape)
		}
		for d := range v.shape {
			if d != ax && v.shape[d] != vs[0].shape[d] {
				return t.failf("Concat: input %d has shape %v, input 0 has %v (axis %d)", i, v.shape, vs[0].shape, ax)
			}
		}
		shape[ax] += v.shape[ax]
	}
	outer, total, inner := split(shape, ax)
	out := t.newVar(shape, false)
	off := 0
	for _, v := range vs {
		w := v.shape[ax]
		for o := 0; o < outer; o++ {
			copy(out.value[(o*total+off)*inner:(o*total+off+w)*inner], v.value[o*w*inner:(o+1)*w*inner])
		}
		off += w
	}
	ins := append([]*Var[T](nil), vs...)
	t.record(out, func() {
		off := 0
		for _, v := range ins {
			w := v.shape[ax]
			if gv := v.gradBuf(); gv != nil {
				for o := 0; o < outer; o++ {
					src := out.grad[(o*total+off)*inner : (o*total+off+w)*inner]
					dst := gv[o*w*inner : (o+1)*w*inner]
					for i, x := range src {
						dst[i] += x
					}
				}
			}
			off += w
		}
	}, ins...)
	return out
}

// Gather returns the tensor of the given shape whose flat element i is a's flat element
// idx[i] (torch.take(a, idx).reshape(shape)). Repeated indices are allowed; their gradients add.
func (t *Tape[T]) Gather(a *Var[T], idx []int, shape ...int) *Var[T] {
	if !t.check("Gather", a) {
		return t.placeholder()
	}
	n, err := numel(shape)
	if err != nil || n != len(idx) {
		return t.failf("Gather: shape %v does not hold the %d indices", shape, len(idx))
	}
	for i, k := range idx {
		if k < 0 || k >= len(a.value) {
			return t.failf("Gather: index %d (position %d) out of range for %d elements", k, i, len(a.value))
		}
	}
	out := t.newVar(shape, false)
	ix := t.getInts(len(idx))
	copy(ix, idx)
	out.ints = ix
	for i, k := range ix {
		out.value[i] = a.value[k]
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for i, k := range ix {
			ga[k] += out.grad[i]
		}
	}, a)
	return out
}

// Scatter returns a zero tensor of the given shape to whose flat element idx[i] a's flat element
// i is added (torch.zeros(shape).flatten().index_add_(0, idx, a.flatten())); len(idx) must equal
// a's element count. With the indices of a matrix's diagonal and strict lower triangle it builds
// a triangular matrix from a vector.
func (t *Tape[T]) Scatter(a *Var[T], idx []int, shape ...int) *Var[T] {
	if !t.check("Scatter", a) {
		return t.placeholder()
	}
	n, err := numel(shape)
	if err != nil {
		return t.fail(fmt.Errorf("autodiff: Scatter: %w", err))
	}
	if len(idx) != len(a.value) {
		return t.failf("Scatter: %d indices for %d values", len(idx), len(a.value))
	}
	for i, k := range idx {
		if k < 0 || k >= n {
			return t.failf("Scatter: index %d (position %d) out of range for shape %v", k, i, shape)
		}
	}
	out := t.newVar(shape, true)
	ix := t.getInts(len(idx))
	copy(ix, idx)
	out.ints = ix
	for i, k := range ix {
		out.value[k] += a.value[i]
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for i, k := range ix {
			ga[i] += out.grad[k]
		}
	}, a)
	return out
}

// TrilIndices returns the row-major flat indices into an n×n matrix of the entries (i, j) with
// j ≤ i + offset, in row-major order: offset 0 is the lower triangle with the diagonal, −1 the
// strict lower triangle (the order of torch.tril_indices(n, n, offset)).
func TrilIndices(n, offset int) []int {
	var idx []int
	for i := 0; i < n; i++ {
		for j := 0; j < n && j <= i+offset; j++ {
			idx = append(idx, i*n+j)
		}
	}
	return idx
}

// VecToChol maps a vector of length d(d+1)/2 to a d×d lower-triangular matrix with a positive
// diagonal, bayesianize's vec→chol rule: the first d entries pass through Softplus onto the
// diagonal, the remaining ones fill the strict lower triangle in row-major order
// (torch.tril_indices(d, d, -1)).
func (t *Tape[T]) VecToChol(v *Var[T]) *Var[T] {
	if !t.check("VecToChol", v) {
		return t.placeholder()
	}
	n := len(v.value)
	d := int((math.Sqrt(float64(8*n+1)) - 1) / 2)
	if len(v.shape) != 1 || d*(d+1)/2 != n {
		return t.failf("VecToChol: need a vector of length d(d+1)/2, got shape %v", v.shape)
	}
	out := t.newVar([]int{d, d}, true)
	vv, ov := v.value, out.value
	for i := 0; i < d; i++ {
		ov[i*d+i] = T(f64.Softplus(float64(vv[i])))
	}
	k := d
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			ov[i*d+j] = vv[k]
			k++
		}
	}
	t.record(out, func() {
		gv, g := v.gradBuf(), out.grad
		for i := 0; i < d; i++ {
			gv[i] += g[i*d+i] * T(f64.Sigmoid(float64(vv[i])))
		}
		k := d
		for i := 0; i < d; i++ {
			for j := 0; j < i; j++ {
				gv[k] += g[i*d+j]
				k++
			}
		}
	}, v)
	return out
}

// Diag returns the diagonals of the square matrices in the last two dimensions of a:
// shape (..., n, n) → (..., n) (torch.diagonal(a, dim1=-2, dim2=-1)).
func (t *Tape[T]) Diag(a *Var[T]) *Var[T] {
	if !t.check("Diag", a) {
		return t.placeholder()
	}
	r := len(a.shape)
	if r < 2 || a.shape[r-1] != a.shape[r-2] {
		return t.failf("Diag: need square matrices in the last two dimensions, got shape %v", a.shape)
	}
	n := a.shape[r-1]
	shape := append([]int(nil), a.shape[:r-1]...)
	out := t.newVar(shape, false)
	batch := len(out.value) / max(n, 1)
	for b := 0; b < batch; b++ {
		for i := 0; i < n; i++ {
			out.value[b*n+i] = a.value[b*n*n+i*n+i]
		}
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for b := 0; b < batch; b++ {
			for i := 0; i < n; i++ {
				ga[b*n*n+i*n+i] += out.grad[b*n+i]
			}
		}
	}, a)
	return out
}

// DiagEmbed returns square matrices with the last dimension of a on their diagonals and zeros
// elsewhere: shape (..., n) → (..., n, n) (torch.diag_embed).
func (t *Tape[T]) DiagEmbed(a *Var[T]) *Var[T] {
	if !t.check("DiagEmbed", a) {
		return t.placeholder()
	}
	r := len(a.shape)
	if r < 1 {
		return t.failf("DiagEmbed: need at least a vector, got a scalar")
	}
	n := a.shape[r-1]
	shape := append(append([]int(nil), a.shape...), n)
	out := t.newVar(shape, true)
	batch := len(a.value) / max(n, 1)
	for b := 0; b < batch; b++ {
		for i := 0; i < n; i++ {
			out.value[b*n*n+i*n+i] = a.value[b*n+i]
		}
	}
	t.record(out, func() {
		ga := a.gradBuf()
		for b := 0; b < batch; b++ {
			for i := 0; i < n; i++ {
				ga[b*n+i] += out.grad[b*n*n+i*n+i]
			}
		}
	}, a)
	return out
}
