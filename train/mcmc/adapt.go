package mcmc

import "math"

// Dual-averaging constants (Hoffman and Gelman 2014, section 3.2; Stan's defaults).
const (
	daGamma = 0.05
	daT0    = 10
	daKappa = 0.75
)

// dualAveraging adapts the log step size towards a target mean acceptance statistic.
type dualAveraging struct {
	mu, delta  float64
	counter    float64
	sBar, xBar float64
}

// restart starts a new adaptation round around log(10·eps).
func (d *dualAveraging) restart(eps, delta float64) {
	*d = dualAveraging{mu: math.Log(10 * eps), delta: delta}
}

// learn takes one iteration's acceptance statistic and returns the next step size.
func (d *dualAveraging) learn(accept float64) float64 {
	d.counter++
	accept = math.Min(accept, 1)
	if math.IsNaN(accept) {
		accept = 0
	}
	eta := 1 / (d.counter + daT0)
	d.sBar = (1-eta)*d.sBar + eta*(d.delta-accept)
	x := d.mu - d.sBar*math.Sqrt(d.counter)/daGamma
	xEta := math.Pow(d.counter, -daKappa)
	d.xBar = (1-xEta)*d.xBar + xEta*x
	return math.Exp(x)
}

// final returns the averaged step size exp(x̄) used after warm-up.
func (d *dualAveraging) final() float64 { return math.Exp(d.xBar) }

// windows is Stan's windowed warm-up schedule (windowed_adaptation): the metric is estimated
// from the draws of slow windows between an initial and a terminal fast buffer, each window
// twice as long as the previous one, the last stretched to the terminal buffer.
type windows struct {
	warmup, initBuf, termBuf int
	counter, size, next      int
}

func newWindows(warmup, initBuf, termBuf, base int) windows {
	if initBuf+termBuf+base > warmup {
		initBuf = int(0.15 * float64(warmup))
		termBuf = int(0.1 * float64(warmup))
		base = warmup - (initBuf + termBuf)
	}
	return windows{warmup: warmup, initBuf: initBuf, termBuf: termBuf, size: base, next: initBuf + base - 1}
}

func (w *windows) inWindow() bool {
	return w.counter >= w.initBuf && w.counter < w.warmup-w.termBuf && w.counter != w.warmup
}

func (w *windows) endOfWindow() bool {
	return w.counter == w.next && w.counter != w.warmup
}

func (w *windows) computeNext() {
	last := w.warmup - w.termBuf - 1
	if w.next == last {
		return
	}
	w.size *= 2
	w.next = w.counter + w.size
	if w.next != last && w.next+2*w.size >= w.warmup-w.termBuf {
		w.next = last
	}
}

// learn adds the warm-up draw q to est when inside a slow window and reports whether a window
// ended at this iteration (est then holds that window's draws).
func (w *windows) learn(est *welford, q []float64) bool {
	if w.inWindow() {
		est.add(q)
	}
	end := w.endOfWindow()
	if end {
		w.computeNext()
	}
	w.counter++
	return end
}

// welford accumulates per-coordinate means and variances.
type welford struct {
	n        float64
	mean, m2 []float64
}

func newWelford(dim int) welford {
	return welford{mean: make([]float64, dim), m2: make([]float64, dim)}
}

func (e *welford) reset() {
	e.n = 0
	zero(e.mean)
	zero(e.m2)
}

func (e *welford) add(x []float64) {
	e.n++
	for i, v := range x {
		d := v - e.mean[i]
		e.mean[i] += d / e.n
		e.m2[i] += d * (v - e.mean[i])
	}
}

// regularisedVariance writes Stan's shrunk sample variance n/(n+5)·s² + 10⁻³·5/(n+5) into dst.
func (e *welford) regularisedVariance(dst []float64) {
	if e.n < 2 {
		return
	}
	for i := range dst {
		v := e.m2[i] / (e.n - 1)
		dst[i] = e.n/(e.n+5)*v + 1e-3*5/(e.n+5)
	}
}
