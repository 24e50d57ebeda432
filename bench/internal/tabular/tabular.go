// Package tabular splits and standardises small data sets the way the bench programs' protocols
// do (paper 000's UCI experiments, its §4.3 selective-prediction protocol): a seeded random
// partition per split, inputs (and regression targets) standardised with the training part's
// mean and population standard deviation, and a training run on the parts so made.
package tabular

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/data"
)

// Partition shuffles d's examples with PCG(seed, s) and cuts the permutation into consecutive
// parts of the given sizes, in order; the sizes must be positive and add up to d.N.
func Partition(d *data.Dataset, sizes []int, seed, s uint64) ([]*data.Dataset, error) {
	total := 0
	for _, n := range sizes {
		if n < 1 {
			return nil, fmt.Errorf("data %s: partition sizes %v: every part needs at least one example", d.Name, sizes)
		}
		total += n
	}
	if total != d.N {
		return nil, fmt.Errorf("data %s: partition sizes %v add up to %d, not its %d examples", d.Name, sizes, total, d.N)
	}
	perm := rand.New(rand.NewPCG(seed, s)).Perm(d.N)
	parts := make([]*data.Dataset, len(sizes))
	for i, n := range sizes {
		var err error
		if parts[i], err = d.Subset(perm[:n]); err != nil {
			return nil, err
		}
		perm = perm[n:]
	}
	return parts, nil
}

// Sizes returns the sizes of parts holding the given fractions of n examples (each rounded to
// the nearest integer), the remainder last; an error when a part would be empty.
func Sizes(n int, fractions ...float64) ([]int, error) {
	sizes := make([]int, 0, len(fractions)+1)
	rest := n
	for _, f := range fractions {
		m := int(math.Round(f * float64(n)))
		if m < 1 || m >= rest {
			return nil, fmt.Errorf("fractions %v of %d examples: a part of %d leaves %d of the %d still unassigned", fractions, n, m, rest-m, rest)
		}
		sizes = append(sizes, m)
		rest -= m
	}
	return append(sizes, rest), nil
}

// Scaler standardises inputs, and regression targets, with a training set's statistics.
type Scaler struct {
	// XMean and XSD are the per-feature mean and population standard deviation.
	XMean, XSD []float64
	// YMean and YSD are the regression target's (0 and 1 for classification data).
	YMean, YSD float64
}

// Fit returns d's per-feature means and population standard deviations (ddof 0), and its
// target's for regression data; a constant column gets standard deviation 1.
func Fit(d *data.Dataset) Scaler {
	st := Scaler{XMean: make([]float64, d.Dim), XSD: make([]float64, d.Dim), YSD: 1}
	col := make([]float64, d.N)
	for j := 0; j < d.Dim; j++ {
		for i := range col {
			col[i] = float64(d.X[i*d.Dim+j])
		}
		st.XMean[j], st.XSD[j] = moments(col)
	}
	if d.Regression() {
		y := make([]float64, len(d.Targets))
		for i, v := range d.Targets {
			y[i] = float64(v)
		}
		st.YMean, st.YSD = moments(y)
	}
	return st
}

// moments returns the mean and population standard deviation of v (1 when it is 0).
func moments(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	sd = math.Sqrt(sd / float64(len(v)))
	if sd == 0 {
		sd = 1
	}
	return mean, sd
}

// Apply returns a standardised copy of d (labels shared, not copied).
func (st Scaler) Apply(d *data.Dataset) *data.Dataset {
	out := *d
	out.X = make([]float32, len(d.X))
	for i, v := range d.X {
		j := i % d.Dim
		out.X[i] = float32((float64(v) - st.XMean[j]) / st.XSD[j])
	}
	if d.Targets != nil {
		out.Targets = make([]float32, len(d.Targets))
		for i, v := range d.Targets {
			out.Targets[i] = float32((float64(v) - st.YMean) / st.YSD)
		}
	}
	return &out
}

// Train runs the trainer with configuration c on the given training and test sets
// (train.NewWithData), evaluating and checkpointing only at the end of the run, and returns it.
func Train(c train.Config, tr, te *data.Dataset) (*train.Trainer, error) {
	c.EvalEvery, c.CheckpointEvery = train.MaxEpochs, train.MaxEpochs
	c.EvalMinSteps, c.CheckpointMinSteps = 0, 0
	t, err := train.NewWithData(c, tr, te)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Posterior, err)
	}
	if err := t.Run(context.Background(), train.Hooks{}); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Posterior, err)
	}
	return t, nil
}

// WorkDir returns the directory for a protocol's checkpoints: dir when given, else a new
// temporary directory named after prefix. The returned function removes a temporary directory
// (a given one stays); call it when the runs are done.
func WorkDir(dir, prefix string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}
