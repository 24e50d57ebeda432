package prune

import (
	"fmt"
	"math"
	"slices"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// FFGLayer is the weight posterior of one mean-field Gaussian (FFG-W) layer: N(μ, σ²) per weight,
// σ = min(softplus(ρ), MaxSD) from bayesianize's stored ρ (_weight_sd). Biases are never pruned.
type FFGLayer struct {
	// Name is the layer's name, e.g. "0".
	Name string
	// Mean and RawSD are <name>.weight_mean and <name>._weight_sd (ρ), of equal length.
	Mean, RawSD []float32
	// MaxSD caps σ (0: no cap), as the posterior's max_sd does.
	MaxSD float64
}

// SNRLayer is the outcome of SNR pruning for one layer.
type SNRLayer struct {
	Layer string `json:"layer"`
	// Weights is the layer's weight count, Kept how many were kept.
	Weights int `json:"weights"`
	Kept    int `json:"kept"`
	// Threshold is the largest |μ|/σ pruned in this layer (0 if none).
	Threshold float64 `json:"threshold"`
	// Keep are the row-major indices of the kept weights, increasing.
	Keep []uint32 `json:"-"`
}

// SNRReport summarises SNR pruning.
type SNRReport struct {
	// KeepFraction is the requested fraction of weights kept.
	KeepFraction float64    `json:"keep_fraction"`
	Weights      int        `json:"weights"`
	Kept         int        `json:"kept"`
	Layers       []SNRLayer `json:"layers"`
}

// SNR keeps the fraction keep of the FFG weights of all layers together with the largest
// signal-to-noise ratio |μ|/σ (Graves 2011; paper 003 appendix K) and reports the kept indices
// per layer; the others are to be set to exactly zero (mean and variance). The number kept is
// keep × weights rounded to the nearest integer (halves up). Ties are broken by position (layers
// in the order given, row-major within a layer): the earlier weight is kept. NaN or infinite
// means, NaN standard deviations, mismatched lengths and keep outside (0, 1] are errors.
func SNR(layers []FFGLayer, keep float64) (*SNRReport, error) {
	if !(keep > 0 && keep <= 1) {
		return nil, fmt.Errorf("prune: SNR keep fraction %v is not in (0, 1]", keep)
	}
	total := 0
	seen := map[string]bool{}
	for _, l := range layers {
		if seen[l.Name] {
			return nil, fmt.Errorf("prune: layer %q given twice", l.Name)
		}
		seen[l.Name] = true
		if len(l.Mean) != len(l.RawSD) {
			return nil, fmt.Errorf("prune: layer %q: %d weight means but %d standard deviations", l.Name, len(l.Mean), len(l.RawSD))
		}
		total += len(l.Mean)
	}
	if uint64(total) >= 1<<32 {
		return nil, fmt.Errorf("prune: %d weights are too many", total)
	}
	type entry struct {
		snr   float64
		pos   uint32
		layer int
	}
	entries := make([]entry, 0, total)
	pos := uint32(0)
	for li, l := range layers {
		for i, m := range l.Mean {
			mu := float64(m)
			s := f64.Softplus(float64(l.RawSD[i]))
			if l.MaxSD > 0 {
				s = math.Min(s, l.MaxSD)
			}
			if math.IsNaN(mu) || math.IsInf(mu, 0) || math.IsNaN(s) || !(s > 0) {
				return nil, fmt.Errorf("prune: layer %q: weight %d has mean %g and standard deviation %g", l.Name, i, mu, s)
			}
			entries = append(entries, entry{math.Abs(mu) / s, pos, li})
			pos++
		}
	}
	// Largest SNR first, then earlier position.
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.snr > b.snr:
			return -1
		case a.snr < b.snr:
			return 1
		case a.pos < b.pos:
			return -1
		case a.pos > b.pos:
			return 1
		}
		return 0
	})
	k := count(keep, total)
	rep := &SNRReport{KeepFraction: keep, Weights: total, Kept: k, Layers: make([]SNRLayer, len(layers))}
	starts := make([]uint32, len(layers))
	pos = 0
	for li, l := range layers {
		rep.Layers[li] = SNRLayer{Layer: l.Name, Weights: len(l.Mean)}
		starts[li] = pos
		pos += uint32(len(l.Mean))
	}
	for _, e := range entries[:k] {
		r := &rep.Layers[e.layer]
		r.Keep = append(r.Keep, e.pos-starts[e.layer])
	}
	for _, e := range entries[k:] {
		r := &rep.Layers[e.layer]
		r.Threshold = max(r.Threshold, e.snr)
	}
	for i := range rep.Layers {
		r := &rep.Layers[i]
		slices.Sort(r.Keep)
		r.Kept = len(r.Keep)
	}
	return rep, nil
}
