package train

import (
	"fmt"
	"strings"

	"github.com/edgebnn/edgebnn/prune"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// DefaultFinetuneLR is the learning rate of the fine-tuning phase after pruning when
// finetune_lr is not set: Adam with 1e-4, as paper 003 (appendix K) fine-tunes its pruned models.
const DefaultFinetuneLR = 1e-4

// zMask pins pruned entries during fine-tuning: for each parameter, the indices of its pruned
// entries and the value they are pinned at (0 for Z entries and FFG means, PrunedRho for FFG
// standard deviations).
type zMask struct {
	params []*autodiff.Param[float32]
	zeros  [][]int
	pin    []float32
}

// zeroGrads clears the pinned entries' gradients (so the optimizer's moments stay zero there).
func (m *zMask) zeroGrads() {
	for i, p := range m.params {
		for _, j := range m.zeros[i] {
			p.Grad[j] = 0
		}
	}
}

// zeroValues puts the pinned entries back to zero after an optimizer step (weight decay or
// momentum could move them).
func (m *zMask) zeroValues() {
	for i, p := range m.params {
		v := float32(0)
		if m.pin != nil {
			v = m.pin[i]
		}
		for _, j := range m.zeros[i] {
			p.Value[j] = v
		}
	}
}

// pruned reports the number of pinned entries.
func (m *zMask) pruned() int {
	n := 0
	for _, z := range m.zeros {
		n += len(z)
	}
	return n
}

// finetuning reports whether epoch e (0-based) belongs to the fine-tuning phase that follows the
// pruning of Z (epochs Epochs … Epochs+FinetuneEpochs−1).
func (c *Config) finetuning(e int) bool {
	return (c.PruneZ > 0 || c.PruneSNR > 0 || c.FinetuneEpochs > 0) && e >= c.Epochs
}

// TotalEpochs is the number of epochs a run trains: Epochs, plus FinetuneEpochs when Z is
// pruned or fine-tuning is requested; 1 for posterior hmc, whose sampling run counts as one
// epoch.
func (c *Config) TotalEpochs() int {
	if c.Posterior == "hmc" {
		return 1 // one pass: the sampler's iterations (StepsPerEpoch)
	}
	if c.PruneZ > 0 || c.PruneSNR > 0 || c.FinetuneEpochs > 0 {
		return c.Epochs + c.FinetuneEpochs
	}
	return c.Epochs
}

// zParams groups the inducing layers' z_row and z_col parameters of every network by layer, in
// network order (the order prune ranks ties in).
func (t *Trainer) zParams() (layers []prune.Layer, params [][2]*autodiff.Param[float32]) {
	names, params := t.layerPairs("z_row", "z_col")
	for i, name := range names {
		layers = append(layers, prune.Layer{Name: name, ZRow: value(params[i][0]), ZCol: value(params[i][1])})
	}
	return layers, params
}

// layerPairs returns, network by network and layer by layer in parameter order, the layers that
// have a parameter named layer.first or layer.second, and those two parameters (nil if absent).
func (t *Trainer) layerPairs(first, second string) (names []string, pairs [][2]*autodiff.Param[float32]) {
	for _, n := range t.Nets {
		cur := -1
		for _, p := range n.Params() {
			layer, field, ok := cutLast(p.Name)
			if !ok || (field != first && field != second) {
				continue
			}
			if cur < 0 || names[cur] != layer {
				names, pairs = append(names, layer), append(pairs, [2]*autodiff.Param[float32]{})
				cur = len(names) - 1
			}
			if field == first {
				pairs[cur][0] = p.Param
			} else {
				pairs[cur][1] = p.Param
			}
		}
	}
	return names, pairs
}

// value is p's values, nil for no parameter.
func value(p *autodiff.Param[float32]) []float32 {
	if p == nil {
		return nil
	}
	return p.Value
}

// cutLast splits "layer.name.field" at its last dot.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// PruneZ sets the smallest-magnitude fraction of the inducing layers' Z entries to zero (globally
// or per layer, exactly as `edgebnn convert --prune` ranks them) and pins them at zero for the
// rest of training. It returns the pruning report.
func (t *Trainer) PruneZ(fraction float64, perLayer bool) (*prune.Report, error) {
	layers, params := t.zParams()
	if len(layers) == 0 {
		return nil, fmt.Errorf("train: prune_z %g: the network has no inducing layers (no Z matrices to prune)", fraction)
	}
	rep, err := prune.Prune(layers, prune.Options{Fraction: fraction, PerLayer: perLayer})
	if err != nil {
		return nil, fmt.Errorf("train: prune_z: %w", err)
	}
	t.mask = maskZeros(params)
	return rep, nil
}

// maskZeros pins every Z entry that is exactly zero (after PruneZ, or in a checkpoint written
// during fine-tuning).
func maskZeros(params [][2]*autodiff.Param[float32]) *zMask {
	m := &zMask{}
	for _, pair := range params {
		for _, p := range pair {
			if p == nil {
				continue
			}
			var z []int
			for j, v := range p.Value {
				if v == 0 {
					z = append(z, j)
				}
			}
			m.params = append(m.params, p)
			m.zeros = append(m.zeros, z)
		}
	}
	return m
}

// finetuneLR is the fine-tuning phase's learning rate.
func (c *Config) finetuneLR() float64 {
	if c.FinetuneLR > 0 {
		return c.FinetuneLR
	}
	return DefaultFinetuneLR
}

// startFinetune begins the fine-tuning phase. Entering it after the last training epoch, it
// prunes Z (prune_z) and replaces the optimizer by a fresh one (runEpoch sets the fine-tuning
// learning rate); resuming inside it (resumed), it recovers the mask from the zero Z entries and
// keeps the optimizer state the checkpoint restored.
func (t *Trainer) startFinetune(resumed bool) error {
	c := &t.Config
	if c.PruneSNR > 0 {
		if resumed {
			t.mask = maskPinnedFFG(t.ffgParams())
		} else {
			rep, err := t.PruneSNR(c.PruneSNR)
			if err != nil {
				return err
			}
			t.PruneSNRReport = rep
		}
	}
	if c.PruneZ > 0 {
		if resumed {
			_, params := t.zParams()
			t.mask = maskZeros(params)
		} else {
			rep, err := t.PruneZ(c.PruneZ, c.PrunePerLayer)
			if err != nil {
				return err
			}
			t.PruneReport = rep
		}
	}
	if resumed {
		return nil
	}
	if err := t.buildOptimizer(); err != nil {
		return fmt.Errorf("train: fine-tuning optimizer: %w", err)
	}
	return nil
}

// PrunedRho is the raw standard deviation ρ at which SNR-pruned FFG weights are pinned while
// fine-tuning: σ = softplus(−30) ≈ 9.4e−14, so that W = 0 + σ ε is zero to float32 precision
// next to the kept weights (the exact zero is the model file's, edgebnn convert --snr-keep).
const PrunedRho = -30

// ffgParams returns the FFG layers' weight_mean and _weight_sd parameters of every network, by
// layer in network order, with each layer's max_sd (0: none).
func (t *Trainer) ffgParams() (layers []prune.FFGLayer, params [][2]*autodiff.Param[float32]) {
	maxSD := map[string]float64{}
	runtime.WalkLayers(t.spec.Layers, func(l *runtime.LayerSpec) {
		if p := l.Posterior; p != nil && p.Kind == runtime.KindFFG && p.MaxSD != nil {
			maxSD[l.Name] = *p.MaxSD
		}
	})
	names, params := t.layerPairs("weight_mean", "_weight_sd")
	for i, name := range names {
		layers = append(layers, prune.FFGLayer{Name: name, MaxSD: maxSD[name], Mean: value(params[i][0]), RawSD: value(params[i][1])})
	}
	return layers, params
}

// PruneSNR keeps the fraction keep of the FFG weights with the largest |μ|/σ (prune.SNR, exactly
// as edgebnn convert --snr-keep ranks them), pins the others at μ = 0, ρ = PrunedRho for the rest
// of training, and returns the report.
func (t *Trainer) PruneSNR(keep float64) (*prune.SNRReport, error) {
	layers, params := t.ffgParams()
	if len(layers) == 0 {
		return nil, fmt.Errorf("train: prune_snr %g: the network has no FFG layers", keep)
	}
	rep, err := prune.SNR(layers, keep)
	if err != nil {
		return nil, fmt.Errorf("train: prune_snr: %w", err)
	}
	m := &zMask{}
	for i, pair := range params {
		if pair[0] == nil || pair[1] == nil {
			return nil, fmt.Errorf("train: prune_snr: layer %q lacks weight_mean or _weight_sd", layers[i].Name)
		}
		kept := rep.Layers[i].Keep
		var pruned []int
		for j, k := 0, 0; j < len(pair[0].Value); j++ {
			if k < len(kept) && int(kept[k]) == j {
				k++
				continue
			}
			pruned = append(pruned, j)
		}
		m.params = append(m.params, pair[0], pair[1])
		m.zeros = append(m.zeros, pruned, pruned)
		m.pin = append(m.pin, 0, PrunedRho)
	}
	m.zeroValues()
	t.mask = m
	return rep, nil
}

// maskPinnedFFG recovers the SNR-pruning mask of a checkpoint written while fine-tuning: the
// weights pinned at μ = 0, ρ = PrunedRho.
func maskPinnedFFG(_ []prune.FFGLayer, params [][2]*autodiff.Param[float32]) *zMask {
	m := &zMask{}
	for _, pair := range params {
		if pair[0] == nil || pair[1] == nil {
			continue
		}
		var pruned []int
		for j, v := range pair[0].Value {
			if v == 0 && pair[1].Value[j] == PrunedRho {
				pruned = append(pruned, j)
			}
		}
		m.params = append(m.params, pair[0], pair[1])
		m.zeros = append(m.zeros, pruned, pruned)
		m.pin = append(m.pin, 0, PrunedRho)
	}
	return m
}
