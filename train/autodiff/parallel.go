package autodiff

import (
	"sync"

	"github.com/edgebnn/edgebnn/kernels"
)

// Work below this many multiply-adds (convolutions) or elements (pooling) stays on the calling
// goroutine: starting goroutines and growing their stacks to the GEMM drivers' panels costs
// tens of microseconds.
const (
	minParallelFlops = 1 << 20
	minParallelElems = 1 << 15
)

// SetWorkers sets how many goroutines the tape's matrix products, convolutions and pools may
// run on at once, the caller's among them; n < 1 is 1, the default (everything on the caller's
// goroutine). The values and gradients are bit for bit the same for every n: an op is split
// only into parts that write disjoint memory, each doing the arithmetic of the serial loop in
// its order (the images of a batch; a convolution's weight gradient, a sum over the images,
// stays one chain beside the input gradients; a float32 product's blocks of columns,
// kernels.GemmColBlock). The tape itself stays single-threaded: ops are recorded and
// differentiated one at a time, by one goroutine.
func (t *Tape[T]) SetWorkers(n int) { t.workers = max(n, 1) }

// Workers returns the count SetWorkers set (1 by default).
func (t *Tape[T]) Workers() int { return max(t.workers, 1) }

// parts returns how many parts to split n independent items of work (the whole costing cost, in
// the units of threshold) into: at most Workers and n, and 1 when the whole is under threshold.
func (t *Tape[T]) parts(n int, cost, threshold int64) int {
	if cost < threshold {
		return 1
	}
	return max(1, min(t.Workers(), n))
}

// span returns part p of the parts contiguous ranges [lo, hi) that [0, n) splits into, their
// sizes differing by at most one.
func span(n, parts, p int) (lo, hi int) {
	return n * p / parts, n * (p + 1) / parts
}

// runParts runs f(0), …, f(parts−1) at once, f(0) on the calling goroutine, and returns when all
// have. A panic in any part is raised again on the calling goroutine, after every part has ended
// (as when the parts run in one loop, a panic reaches the caller).
func runParts(parts int, f func(p int)) {
	if parts <= 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	panics := make([]any, parts)
	call := func(p int) {
		defer func() {
			if r := recover(); r != nil {
				panics[p] = r
			}
		}()
		f(p)
	}
	wg.Add(parts - 1)
	for p := 1; p < parts; p++ {
		go func() {
			defer wg.Done()
			call(p)
		}()
	}
	call(0)
	wg.Wait()
	for _, r := range panics {
		if r != nil {
			panic(r)
		}
	}
}

// getCols returns parts pooled scratch buffers of length n each.
func (t *Tape[T]) getCols(parts, n int) [][]T {
	cols := make([][]T, parts)
	for i := range cols {
		cols[i] = t.get(n, false)
	}
	return cols
}

// putCols returns getCols' buffers to the pool.
func (t *Tape[T]) putCols(cols [][]T) {
	for _, c := range cols {
		t.put(c)
	}
}

// gemm is the package's gemm with C's columns split among the workers where that gives the same
// bits (float32 products the kernels' GemmColBlock blocks).
func (t *Tape[T]) gemm(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if _, ok := any(a).([]float32); ok && t.Workers() > 1 && int64(m)*int64(n)*int64(k) >= minParallelFlops {
		if bw := kernels.GemmColBlock(transA, transB, m, n, k); bw > 0 {
			blocks := n / bw
			parts := min(t.Workers(), blocks)
			runParts(parts, func(p int) {
				lo, hi := span(blocks, parts, p)
				j0, j1 := lo*bw, hi*bw
				if hi == blocks {
					j1 = n // the last block takes the columns left over
				}
				bo := j0 // op(B)'s column j0: B's column, or its row when transposed
				if transB {
					bo = j0 * ldb
				}
				gemm(transA, transB, m, j1-j0, k, alpha, a, lda, b[bo:], ldb, beta, c[j0:], ldc)
			})
			return
		}
	}
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
