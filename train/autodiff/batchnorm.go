package autodiff

import (
	"fmt"
	"math"
)

// BatchNormState holds a batch-norm layer's running statistics and hyper-parameters
// (the buffers of torch.nn.BatchNorm1d/2d).
type BatchNormState[T Float] struct {
	// RunningMean and RunningVar have one entry per channel.
	RunningMean, RunningVar []T
	// Momentum is the running-statistics update weight (PyTorch default 0.1).
	Momentum float64
	// Eps is added to the variance before the square root (PyTorch default 1e-5).
	Eps float64
	// NumBatchesTracked counts the training-mode forward passes.
	NumBatchesTracked int64
}

// NewBatchNormState returns the PyTorch initial state for c channels: running mean 0, running
// variance 1, momentum 0.1, eps 1e-5.
func NewBatchNormState[T Float](c int) *BatchNormState[T] {
	s := &BatchNormState[T]{RunningMean: make([]T, c), RunningVar: make([]T, c), Momentum: 0.1, Eps: 1e-5}
	for i := range s.RunningVar {
		s.RunningVar[i] = 1
	}
	return s
}

// BatchNorm normalises x per channel, with channels on axis 1: x is (N, C) or (N, C, L)
// (BatchNorm1d) or (N, C, H, W) (BatchNorm2d). gamma and beta (C) are the optional affine
// weight and bias (nil for affine=False).
//
// In training mode it uses the batch mean and biased batch variance over all axes but 1, and
// updates st as PyTorch does: running = (1−momentum)·running + momentum·batch, with the unbiased
// (M/(M−1)) batch variance for the running variance, M = N·(spatial size); M must exceed 1. In
// eval mode it uses st's running statistics, which are constants for differentiation.
func (t *Tape[T]) BatchNorm(x, gamma, beta *Var[T], st *BatchNormState[T], training bool) *Var[T] {
	ins := []*Var[T]{x}
	if gamma != nil {
		ins = append(ins, gamma)
	}
	if beta != nil {
		ins = append(ins, beta)
	}
	if !t.check("BatchNorm", ins...) {
		return t.placeholder()
	}
	if st == nil {
		return t.failf("BatchNorm: nil state")
	}
	if len(x.shape) < 2 {
		return t.failf("BatchNorm: need an (N, C, ...) input, got shape %v", x.shape)
	}
	nb, c := x.shape[0], x.shape[1]
	inner := 1
	for _, d := range x.shape[2:] {
		inner *= d
	}
	if len(st.RunningMean) != c || len(st.RunningVar) != c {
		return t.failf("BatchNorm: state has %d/%d running statistics for %d channels", len(st.RunningMean), len(st.RunningVar), c)
	}
	for i, p := range []*Var[T]{gamma, beta} {
		if p != nil && (len(p.shape) != 1 || p.shape[0] != c) {
			return t.failf("BatchNorm: %s shape %v, want (%d)", [...]string{"gamma", "beta"}[i], p.shape, c)
		}
	}
	m := nb * inner
	if training && m <= 1 {
		return t.fail(fmt.Errorf("autodiff: BatchNorm: training needs more than 1 value per channel, input shape %v", x.shape))
	}
	out := t.newVar(x.shape, false)
	stats := t.get(2*c, false) // mean, invstd per channel
	out.aux = stats
	mean, invstd := stats[:c], stats[c:]
	xv := x.value
	// each visits the M values of channel ch.
	each := func(ch int, fn func(i int)) {
		for n := 0; n < nb; n++ {
			base := (n*c + ch) * inner
			for i := base; i < base+inner; i++ {
				fn(i)
			}
		}
	}
	for ch := 0; ch < c; ch++ {
		if training {
			var s float64
			each(ch, func(i int) { s += float64(xv[i]) })
			mu := s / float64(m)
			var ss float64
			each(ch, func(i int) { d := float64(xv[i]) - mu; ss += d * d })
			v := ss / float64(m)
			mean[ch] = T(mu)
			invstd[ch] = T(1 / math.Sqrt(v+st.Eps))
			mom := st.Momentum
			st.RunningMean[ch] = T((1-mom)*float64(st.RunningMean[ch]) + mom*mu)
			st.RunningVar[ch] = T((1-mom)*float64(st.RunningVar[ch]) + mom*ss/float64(m-1))
		} else {
			mean[ch] = st.RunningMean[ch]
			invstd[ch] = T(1 / math.Sqrt(float64(st.RunningVar[ch])+st.Eps))
		}
		gm, bt := T(1), T(0)
		if gamma != nil {
			gm = gamma.value[ch]
		}
		if beta != nil {
			bt = beta.value[ch]
		}
		mu, is := mean[ch], invstd[ch]
		each(ch, func(i int) { out.value[i] = (xv[i]-mu)*is*gm + bt })
	}
	if training {
		st.NumBatchesTracked++
	}
	t.record(out, func() {
		g := out.grad
		gx := x.gradBuf()
		var gg, gbeta []T
		if gamma != nil {
			gg = gamma.gradBuf()
		}
		if beta != nil {
			gbeta = beta.gradBuf()
		}
		for ch := 0; ch < c; ch++ {
			mu, is := mean[ch], invstd[ch]
			gm := T(1)
			if gamma != nil {
				gm = gamma.value[ch]
			}
			var sg, sgx T // Σ g, Σ g·x̂
			each(ch, func(i int) {
				sg += g[i]
				sgx += g[i] * (xv[i] - mu) * is
			})
			if gg != nil {
				gg[ch] += sgx
			}
			if gbeta != nil {
				gbeta[ch] += sg
			}
			if gx == nil {
				continue
			}
			if !training {
				each(ch, func(i int) { gx[i] += g[i] * gm * is })
				continue
			}
			fm := T(m)
			each(ch, func(i int) {
				xh := (xv[i] - mu) * is
				gx[i] += gm * is / fm * (fm*g[i] - sg - xh*sgx)
			})
		}
	}, ins...)
	return out
}
