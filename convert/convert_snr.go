package convert

import (
	"fmt"
	"github.com/edgebnn/edgebnn/internal/schema"
	"strings"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/prune"
	"github.com/edgebnn/edgebnn/runtime"
)

// snrPruning is the outcome of --snr-keep: which weights of which FFG layers are kept.
type snrPruning struct {
	report *prune.SNRReport
	layers map[string]*prune.SNRLayer
	// shapes are the pruned layers' weight matrices, dOut × k (k = in·kh·kw for a Conv2d).
	shapes map[string][2]int
}

// pruneSNR ranks the FFG layers' weights of data by |μ|/σ and keeps the fraction keep of them
// (nil when keep is 0).
func (m *model) pruneSNR(keep float64, data map[string][]float32) (*snrPruning, error) {
	if keep == 0 {
		return nil, nil
	}
	if m.spec.Members > 1 {
		return nil, fmt.Errorf("convert: --snr-keep prunes a single network, not a model of %d members", m.spec.Members)
	}
	var layers []prune.FFGLayer
	shapes := map[string][2]int{}
	runtime.WalkLayers(m.spec.Layers, func(l *runtime.LayerSpec) {
		if p := l.Posterior; p != nil && p.Kind == runtime.KindFFG {
			k := l.In
			if l.Op == runtime.OpConv2d {
				k *= l.Kernel[0] * l.Kernel[1]
			}
			shapes[l.Name] = [2]int{l.Out, k}
			fl := prune.FFGLayer{Name: l.Name, Mean: data[l.Name+".weight_mean"], RawSD: data[l.Name+"._weight_sd"]}
			if p.MaxSD != nil {
				fl.MaxSD = *p.MaxSD
			}
			layers = append(layers, fl)
		}
	})
	if len(layers) == 0 {
		return nil, fmt.Errorf("convert: --snr-keep %g: the model has no FFG (mean-field Gaussian) layers", keep)
	}
	rep, err := prune.SNR(layers, keep)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if rep.Kept == 0 {
		// Without weights the model ignores its input and predicts one distribution for
		// everything. (One layer left without weights is a legitimate, if ruinous, outcome of
		// global pruning — paper 003's 0.1 % rows — and stays allowed.)
		return nil, fmt.Errorf("convert: --snr-keep %g keeps none of the %d FFG weights (the smallest fraction that keeps one is %.3g)",
			keep, rep.Weights, prune.MinKeepFraction(rep.Weights))
	}
	s := &snrPruning{report: rep, layers: map[string]*prune.SNRLayer{}, shapes: shapes}
	for i := range rep.Layers {
		s.layers[rep.Layers[i].Layer] = &rep.Layers[i]
	}
	return s, nil
}

// count returns the parameter count of a pruned layer's weight mean or sd tensor: the kept
// weights (ok false for other tensors).
func (s *snrPruning) count(t schema.Tensor) (int64, bool) {
	if s == nil {
		return 0, false
	}
	l, ok := s.layers[t.Layer]
	if !ok || (t.Name != t.Layer+".weight_mean" && t.Name != t.Layer+"._weight_sd") {
		return 0, false
	}
	return int64(l.Kept), true
}

// replace maps a tensor of a pruned layer to what the file stores: the kept values of the weight
// mean and sd (…_kept, in row-major order), nothing for the prior buffers (skip), the tensor
// itself otherwise.
func (s *snrPruning) replace(e schema.Tensor, v []float32) (schema.Tensor, []float32, bool) {
	l, ok := s.layers[e.Layer]
	if !ok {
		return e, v, false
	}
	field := strings.TrimPrefix(e.Name, e.Layer+".")
	switch field {
	case "weight_mean", "_weight_sd":
		kept := make([]float32, len(l.Keep))
		for i, j := range l.Keep {
			kept[i] = v[j]
		}
		e.Name, e.Shape = e.Name+"_kept", []int{len(kept)}
		return e, kept, false
	case "prior_weight_mean", "prior_weight_sd", "prior_bias_mean", "prior_bias_sd":
		return e, nil, true
	}
	return e, v, false
}

// addIndex writes layer's kept-weight index blob (runtime.EncodeKeptIndex) and returns its stored
// bytes.
func (s *snrPruning) addIndex(w *format.Writer, layer string, zstd bool) (int64, error) {
	l := s.layers[layer]
	rows, cols, err := s.matrix(layer)
	if err != nil {
		return 0, err
	}
	b, err := runtime.EncodeKeptIndex(rows, cols, l.Keep)
	if err != nil {
		return 0, fmt.Errorf("convert: layer %s: %w", clip.Q(layer), err)
	}
	name := layer + ".weight_keep"
	if err := w.AddBlob(name, b, zstd && len(b) > 0); err != nil {
		return 0, fmt.Errorf("convert: blob %s: %w", clip.Q(name), err)
	}
	return int64(len(b)), nil
}

// matrix returns the dOut × k shape of the pruned layer's weight.
func (s *snrPruning) matrix(layer string) (rows, cols int, err error) {
	l := s.layers[layer]
	if l == nil {
		return 0, 0, fmt.Errorf("convert: layer %s was not pruned", clip.Q(layer))
	}
	return s.shapes[layer][0], s.shapes[layer][1], nil
}

// markPruned returns a copy of ls in which the pruned layers' posteriors say Pruned.
func (s *snrPruning) markPruned(ls []runtime.LayerSpec) []runtime.LayerSpec {
	if ls == nil {
		return nil
	}
	out := make([]runtime.LayerSpec, len(ls))
	for i, l := range ls {
		l.Body = s.markPruned(l.Body)
		l.Shortcut = s.markPruned(l.Shortcut)
		if _, ok := s.layers[l.Name]; ok && l.Posterior != nil {
			p := *l.Posterior
			p.Pruned = true
			l.Posterior = &p
		}
		out[i] = l
	}
	return out
}
