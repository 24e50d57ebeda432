// Package prune removes the smallest-magnitude entries of the inducing projections Z_r and Z_c
// of a network's inducing-weight layers (the pruning experiment of Ritter et al., "Sparse
// uncertainty representation in deep learning with inducing weights", sec. 4.3).
//
// Pruning sets entries to zero; the model file then stores Z sparsely. The pruned model stays a
// valid posterior: the prior covariances Ψ = Z Zᵀ + D² remain positive definite because D > 0,
// and the runtime recomputes Ψ and its factors when it loads the model.
//
// Entries are ranked by |z|; ties are broken by position (layers in the order given, z_row
// before z_col, row-major within a tensor), so the result is deterministic. The largest entry of
// each non-empty z_row and z_col is never pruned: a Z of zeros would leave Z Zᵀ = 0, whose
// (jittered) Cholesky factor the Matheron sampler needs (bayesianize fails on it too). So a
// fraction close to 1 may prune slightly fewer entries than asked; the report says how many.
package prune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Layer is the pair of inducing projections of one layer. Prune zeroes entries in place.
type Layer struct {
	// Name is the layer's name, e.g. "layer1.0.conv1".
	Name string
	// ZRow and ZCol are the values of <name>.z_row and <name>.z_col.
	ZRow, ZCol []float32
}

// Options select how much to prune.
type Options struct {
	// Fraction in [0, 1] is the share of Z entries to remove: of all Z entries of the network
	// together (global magnitude pruning), or of each layer's own entries when PerLayer is set.
	// The number removed is Fraction × entries rounded to the nearest integer (halves up).
	Fraction float64
	// PerLayer prunes each layer separately to the same fraction.
	PerLayer bool
	// Layers overrides Fraction for the named layers (implies per-layer pruning).
	Layers map[string]float64
}

// LayerReport is the outcome for one layer.
type LayerReport struct {
	Layer string `json:"layer"`
	// Entries is the number of Z_r and Z_c entries; Pruned how many were set to zero.
	Entries int `json:"entries"`
	Pruned  int `json:"pruned"`
	// Fraction is Pruned / Entries.
	Fraction float64 `json:"fraction"`
	// Threshold is the largest |z| removed in this layer (0 if none).
	Threshold float32 `json:"threshold"`
}

// Report summarises a pruning run.
type Report struct {
	// Mode is "global" or "per-layer".
	Mode string `json:"mode"`
	// Fraction is the requested fraction.
	Fraction float64       `json:"fraction"`
	Entries  int           `json:"entries"`
	Pruned   int           `json:"pruned"`
	Layers   []LayerReport `json:"layers"`
}

func checkFraction(f float64, what string) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("prune: %s fraction %v is not in [0, 1]", what, f)
	}
	return nil
}

// count returns round(f × n), halves up.
func count(f float64, n int) int {
	k := int(math.Floor(f*float64(n) + 0.5))
	return min(max(k, 0), n)
}

// MinKeepFraction returns the smallest fraction of n > 0 weights that keeps at least one of them
// (SNR's keep, rounded as SNR rounds: 0.5/n), rounded up to three significant digits, so that
// the number printed in a message (%.3g) keeps one when typed back.
func MinKeepFraction(n int) float64 {
	if n <= 0 {
		return 1
	}
	// Step through three-digit decimals from the one nearest 0.5/n: 0.5/n times a power of ten
	// is not exact in binary (0.5/50000 = 1e-05 became 100.00000000000001 units, rounded up to
	// 1.01e-05), so the decimals themselves are tried, as a user would type them.
	up := decimal3(0.5/float64(n), 0)
	for count(up, n) < 1 {
		up = decimal3(up, 1)
	}
	for down := decimal3(up, -1); count(down, n) >= 1; down = decimal3(up, -1) {
		up = down
	}
	return min(up, 1)
}

// decimal3 returns the decimal with three significant digits nearest f > 0 (step 0), or the
// one step units of the last digit away from that.
func decimal3(f float64, step int) float64 {
	s := strconv.FormatFloat(f, 'e', 2, 64) // d.dde±x
	mant, _ := strconv.Atoi(s[:1] + s[2:4])
	exp, _ := strconv.Atoi(s[5:])
	mant += step
	switch {
	case mant >= 1000:
		mant, exp = mant/10, exp+1
	case mant < 100:
		mant, exp = mant*10+9, exp-1
	}
	v, _ := strconv.ParseFloat(strconv.Itoa(mant)+"e"+strconv.Itoa(exp-2), 64)
	return v
}

// Prune zeroes the smallest-magnitude Z entries of layers as opt asks and reports what it did.
// NaN or infinite entries are errors (nothing is modified then).
func Prune(layers []Layer, opt Options) (*Report, error) {
	if err := checkFraction(opt.Fraction, "the"); err != nil {
		return nil, err
	}
	for name, f := range opt.Layers {
		if err := checkFraction(f, fmt.Sprintf("layer %q", name)); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	total := 0
	for _, l := range layers {
		if seen[l.Name] {
			return nil, fmt.Errorf("prune: layer %q given twice", l.Name)
		}
		seen[l.Name] = true
		for _, z := range [][]float32{l.ZRow, l.ZCol} {
			for i, v := range z {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("prune: layer %q: Z entry %d is %g", l.Name, i, v)
				}
			}
		}
		total += len(l.ZRow) + len(l.ZCol)
	}
	for name := range opt.Layers {
		if !seen[name] {
			return nil, fmt.Errorf("prune: no inducing layer named %q", name)
		}
	}
	if uint64(total) >= 1<<32 {
		return nil, fmt.Errorf("prune: %d Z entries are too many", total)
	}
	rep := &Report{Mode: "global", Fraction: opt.Fraction, Entries: total}
	perLayer := opt.PerLayer || len(opt.Layers) > 0
	if perLayer {
		rep.Mode = "per-layer"
	}
	rep.Layers = make([]LayerReport, len(layers))
	for i, l := range layers {
		rep.Layers[i] = LayerReport{Layer: l.Name, Entries: len(l.ZRow) + len(l.ZCol)}
	}
	if perLayer {
		for i := range layers {
			f := opt.Fraction
			if lf, ok := opt.Layers[layers[i].Name]; ok {
				f = lf
			}
			pruneSet(layers[i:i+1], rep.Layers[i:i+1], count(f, rep.Layers[i].Entries))
		}
	} else {
		pruneSet(layers, rep.Layers, count(opt.Fraction, total))
	}
	for i := range rep.Layers {
		lr := &rep.Layers[i]
		rep.Pruned += lr.Pruned
		if lr.Entries > 0 {
			lr.Fraction = float64(lr.Pruned) / float64(lr.Entries)
		}
	}
	return rep, nil
}

// pruneSet zeroes the k smallest-magnitude entries among layers (ties by position).
func pruneSet(layers []Layer, reps []LayerReport, k int) {
	if k == 0 {
		return
	}
	// Key: |z|'s float32 bits (ordered like the magnitudes for non-negative floats) above the
	// entry's position, so sorting the keys sorts by magnitude, then by position.
	n := 0
	for _, l := range layers {
		n += len(l.ZRow) + len(l.ZCol)
	}
	keys := make([]uint64, 0, n)
	pos := uint64(0)
	for _, l := range layers {
		for _, z := range [][]float32{l.ZRow, l.ZCol} {
			// Each tensor keeps its largest entry (the last in the order of keys): an all-zero
			// Z would make Z Zᵀ zero, and its Cholesky factor — which sampling needs — undefined.
			keep, best := -1, uint64(0)
			for i, v := range z {
				key := uint64(math.Float32bits(v)&0x7fffffff)<<32 | (pos + uint64(i))
				if keep < 0 || key > best {
					keep, best = i, key
				}
			}
			for i, v := range z {
				if i != keep {
					keys = append(keys, uint64(math.Float32bits(v)&0x7fffffff)<<32|(pos+uint64(i)))
				}
			}
			pos += uint64(len(z))
		}
	}
	slices.Sort(keys)
	k = min(k, len(keys))
	// Map positions back to (layer, tensor, index).
	type span struct {
		start uint64
		layer int
		z     []float32
	}
	var spans []span
	pos = 0
	for li, l := range layers {
		for _, z := range [][]float32{l.ZRow, l.ZCol} {
			spans = append(spans, span{pos, li, z})
			pos += uint64(len(z))
		}
	}
	for _, key := range keys[:k] {
		p := key & 0xffffffff
		j, found := slices.BinarySearchFunc(spans, p, func(s span, p uint64) int {
			switch {
			case s.start < p:
				return -1
			case s.start > p:
				return 1
			}
			return 0
		})
		if !found {
			j--
		}
		// Empty tensors share a start with the next span: skip to the one that holds p.
		for p-spans[j].start >= uint64(len(spans[j].z)) {
			j++
		}
		s := spans[j]
		mag := float32(math.Abs(float64(s.z[p-s.start])))
		s.z[p-s.start] = 0
		r := &reps[s.layer]
		r.Pruned++
		r.Threshold = max(r.Threshold, mag)
	}
}
