package autodiff

// AdaptiveAvgPool2D averages x (N, C, H, W) over the windows of torch.nn.AdaptiveAvgPool2d with
// output size (OH, OW): output row i covers input rows ⌊i·H/OH⌋ … ⌈(i+1)·H/OH⌉ − 1, likewise for
// columns, so the windows may overlap when H is not a multiple of OH. The result has shape
// (N, C, OH, OW); 1 ≤ OH ≤ H and 1 ≤ OW ≤ W.
func (t *Tape[T]) AdaptiveAvgPool2D(x *Var[T], oh, ow int) *Var[T] {
	if !t.check("AdaptiveAvgPool2D", x) {
		return t.placeholder()
	}
	if len(x.shape) != 4 {
		return t.failf("AdaptiveAvgPool2D: need an (N,C,H,W) input, got shape %v", x.shape)
	}
	h, w := x.shape[2], x.shape[3]
	if oh < 1 || ow < 1 || oh > h || ow > w {
		return t.failf("AdaptiveAvgPool2D: output size (%d, %d) does not fit the input %v", oh, ow, x.shape)
	}
	nc := x.shape[0] * x.shape[1]
	out := t.newVar([]int{x.shape[0], x.shape[1], oh, ow}, false)
	// window returns the input range [a, b) of output index i (of o) along an axis of size n.
	window := func(i, o, n int) (int, int) { return i * n / o, ((i+1)*n + o - 1) / o }
	for c := 0; c < nc; c++ {
		img := x.value[c*h*w : (c+1)*h*w]
		for y := 0; y < oh; y++ {
			y0, y1 := window(y, oh, h)
			for z := 0; z < ow; z++ {
				x0, x1 := window(z, ow, w)
				var s T
				for iy := y0; iy < y1; iy++ {
					for _, v := range img[iy*w+x0 : iy*w+x1] {
						s += v
					}
				}
				out.value[(c*oh+y)*ow+z] = s / T((y1-y0)*(x1-x0))
			}
		}
	}
	t.record(out, func() {
		gx := x.gradBuf()
		for c := 0; c < nc; c++ {
			img := gx[c*h*w : (c+1)*h*w]
			for y := 0; y < oh; y++ {
				y0, y1 := window(y, oh, h)
				for z := 0; z < ow; z++ {
					x0, x1 := window(z, ow, w)
					g := out.grad[(c*oh+y)*ow+z] / T((y1-y0)*(x1-x0))
					for iy := y0; iy < y1; iy++ {
						row := img[iy*w+x0 : iy*w+x1]
						for i := range row {
							row[i] += g
						}
					}
				}
			}
		}
	}, x)
	return out
}
