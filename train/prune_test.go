package train

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/prune"
)

const pruneInference = `{"inference": "inducing", "inducing_rows": 4, "inducing_cols": 4, "init_lamda": 0.01}`

// zEntry is one Z entry with its position (layer order, z_row before z_col, row-major).
type zEntry struct {
	param string
	idx   int
	abs   float64
}

// zSnapshot copies every z_row / z_col parameter.
func zSnapshot(tr *Trainer) map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range tr.Nets[0].Params() {
		if _, f, _ := cutLast(p.Name); f == "z_row" || f == "z_col" {
			out[p.Name] = append([]float32(nil), p.Value...)
		}
	}
	return out
}

// smallest returns the positions of the k smallest |z| of a snapshot, each tensor's largest
// entry excluded (prune never empties a tensor; no ties in random data).
func smallest(z map[string][]float32, k int) map[string]map[int]bool {
	var all []zEntry
	for name, v := range z {
		big := 0
		for i, x := range v {
			if math.Abs(float64(x)) > math.Abs(float64(v[big])) {
				big = i
			}
		}
		for i, x := range v {
			if i != big {
				all = append(all, zEntry{name, i, math.Abs(float64(x))})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].abs < all[j].abs })
	out := map[string]map[int]bool{}
	for _, e := range all[:k] {
		if out[e.param] == nil {
			out[e.param] = map[int]bool{}
		}
		out[e.param][e.idx] = true
	}
	return out
}

// TestPruneFinetune trains, prunes half of Z globally and fine-tunes: the pruned entries are the
// smallest at the end of training, stay exactly zero, the others keep training at the fine-tuning
// learning rate, and converting with the same fraction prunes nothing more.
func TestPruneFinetune(t *testing.T) {
	c := toyConfig(t, "inducing", pruneInference)
	c.Epochs, c.FinetuneEpochs, c.PruneZ = 3, 2, 0.5
	c.EvalEvery = 1
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var before map[string][]float32
	var lrs []float64
	err = tr.Run(context.Background(), Hooks{Epoch: func(m EpochMetrics) {
		lrs = append(lrs, m.LR)
		if m.Epoch == c.Epochs {
			before = zSnapshot(tr)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lrs) != 5 || lrs[2] != c.LR || lrs[3] != DefaultFinetuneLR || lrs[4] != DefaultFinetuneLR {
		t.Fatalf("learning rates per epoch %v: want %g for 3 epochs then %g", lrs, c.LR, DefaultFinetuneLR)
	}
	total := 0
	for _, v := range before {
		total += len(v)
	}
	k := int(math.Round(0.5 * float64(total)))
	want := smallest(before, k)
	after := zSnapshot(tr)
	zeros, moved := 0, 0
	for name, v := range after {
		for i, x := range v {
			switch {
			case want[name][i] && x != 0:
				t.Fatalf("%s[%d] = %g: pruned entries must stay zero", name, i, x)
			case !want[name][i] && x == 0:
				t.Fatalf("%s[%d] is zero but was not among the %d smallest", name, i, k)
			case x == 0:
				zeros++
			case x != before[name][i]:
				moved++
			}
		}
	}
	if zeros != k || tr.PruneReport == nil || tr.PruneReport.Pruned != k {
		t.Fatalf("%d zeros, report %+v; want %d", zeros, tr.PruneReport, k)
	}
	if moved < (total-k)/2 {
		t.Fatalf("only %d of %d kept Z entries changed during fine-tuning", moved, total-k)
	}
	if tr.History[len(tr.History)-1].Test == nil {
		t.Fatal("the fine-tuned model was not evaluated")
	}

	// Pruning the fine-tuned model again at the same fraction removes exactly the zeros.
	layers, _ := tr.zParams()
	rep, err := prune.Prune(layers, prune.Options{Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Layers) == 0 {
		t.Fatal("re-pruning reports no layers")
	}
	for _, l := range rep.Layers {
		if l.Threshold != 0 {
			t.Fatalf("layer %s: re-pruning removed |z| up to %g, want only the zeros", l.Layer, l.Threshold)
		}
	}
}

// TestPruneFinetuneResume interrupts the fine-tuning phase and resumes: the mask is recovered
// from the checkpoint and the result matches the uninterrupted run.
func TestPruneFinetuneResume(t *testing.T) {
	c := toyConfig(t, "inducing", pruneInference)
	c.Epochs, c.FinetuneEpochs, c.PruneZ, c.PrunePerLayer = 2, 2, 0.25, true
	full, _, res := runAndResume(t, c, func(c *Config) { c.FinetuneEpochs = 1 },
		func(cfg *Config) error { cfg.FinetuneEpochs = 2; return nil })
	if err := res.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	if res.mask == nil || res.mask.pruned() == 0 {
		t.Fatal("resumed fine-tuning has no mask")
	}
	requireSameParams(t, "uninterrupted", full, "resumed", res, 1e-5)
}

func TestPruneConfigErrors(t *testing.T) {
	cases := []struct {
		name      string
		posterior string
		edit      func(*Config)
		want      string
	}{
		{"fraction one", "inducing", func(c *Config) { c.PruneZ, c.FinetuneEpochs = 1, 1 }, "prune_z"},
		{"negative", "inducing", func(c *Config) { c.PruneZ, c.FinetuneEpochs = -0.1, 1 }, "prune_z"},
		{"NaN", "inducing", func(c *Config) { c.PruneZ, c.FinetuneEpochs = math.NaN(), 1 }, "prune_z"},
		{"no fine-tuning", "inducing", func(c *Config) { c.PruneZ = 0.5 }, "finetune_epochs"},
		{"bad lr", "inducing", func(c *Config) { c.PruneZ, c.FinetuneEpochs, c.FinetuneLR = 0.5, 1, math.Inf(1) }, "finetune_lr"},
		{"no inducing layers", "deterministic", func(c *Config) { c.PruneZ, c.FinetuneEpochs = 0.5, 1 }, "no inducing layers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := ""
			if tc.posterior == "inducing" {
				inf = pruneInference
			}
			c := toyConfig(t, tc.posterior, inf)
			tc.edit(&c)
			_, err := New(c)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestPruneSNRFinetune trains an FFG-W toy network, keeps 30 % of its weights by |μ|/σ and
// fine-tunes: the kept weights are those of largest |μ|/softplus(ρ) at the end of training
// (computed here independently), the others stay pinned at μ = 0, ρ = PrunedRho, the kept ones
// keep training.
func TestPruneSNRFinetune(t *testing.T) {
	c := toyConfig(t, "ffg_w", `{"inference": "ffg", "init_sd": 0.05}`)
	c.Epochs, c.FinetuneEpochs, c.PruneSNR = 2, 2, 0.3
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string][]float32 {
		out := map[string][]float32{}
		for _, p := range tr.Nets[0].Params() {
			if _, f, _ := cutLast(p.Name); f == "weight_mean" || f == "_weight_sd" {
				out[p.Name] = append([]float32(nil), p.Value...)
			}
		}
		return out
	}
	var before map[string][]float32
	err = tr.Run(context.Background(), Hooks{Epoch: func(m EpochMetrics) {
		if m.Epoch == c.Epochs {
			before = snapshot()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	after := snapshot()
	type w struct {
		layer string
		i     int
		snr   float64
	}
	var all []w
	for name, mu := range before {
		layer, f, _ := cutLast(name)
		if f != "weight_mean" {
			continue
		}
		rho := before[layer+"._weight_sd"]
		for i := range mu {
			all = append(all, w{layer, i, math.Abs(float64(mu[i])) / math.Log1p(math.Exp(float64(rho[i])))})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].snr > all[j].snr })
	k := int(math.Floor(0.3*float64(len(all)) + 0.5))
	if tr.PruneSNRReport == nil || tr.PruneSNRReport.Kept != k {
		t.Fatalf("report %+v, want %d kept", tr.PruneSNRReport, k)
	}
	moved := 0
	for r, e := range all {
		mu, rho := after[e.layer+".weight_mean"][e.i], after[e.layer+"._weight_sd"][e.i]
		if r >= k {
			if mu != 0 || rho != PrunedRho {
				t.Fatalf("pruned weight %s[%d] (SNR rank %d) is μ %g, ρ %g after fine-tuning", e.layer, e.i, r, mu, rho)
			}
		} else if mu != before[e.layer+".weight_mean"][e.i] {
			moved++
		}
	}
	if moved < k/2 {
		t.Errorf("only %d of %d kept weights changed while fine-tuning", moved, k)
	}
}

// TestPruneSNRConfig: prune_snr is refused without fine-tuning, on other posteriors, with
// prune_z, outside [0, 1], and for hmc.
func TestPruneSNRConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"no fine-tuning", func(c *Config) { c.PruneSNR = 0.1 }, "needs finetune_epochs"},
		{"inducing", func(c *Config) {
			c.Posterior, c.PruneSNR, c.FinetuneEpochs = "inducing", 0.1, 1
			_ = c.Inference.Set(pruneInference) // a valid inducing config: the error is prune_snr's
		}, "applies to posterior ffg_w"},
		{"with prune_z", func(c *Config) { c.PruneSNR, c.PruneZ, c.FinetuneEpochs = 0.1, 0.5, 1 }, "cannot be combined"},
		{"above 1", func(c *Config) { c.PruneSNR, c.FinetuneEpochs = 1.5, 1 }, "prune_snr"},
		{"negative", func(c *Config) { c.PruneSNR, c.FinetuneEpochs = -0.1, 1 }, "prune_snr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, "ffg_w", "")
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	c := toyConfig(t, "ffg_w", "")
	c.PruneSNR, c.FinetuneEpochs = 0.1, 1
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid prune_snr config: %v", err)
	}
	if c.TotalEpochs() != c.Epochs+1 {
		t.Errorf("TotalEpochs %d, want %d", c.TotalEpochs(), c.Epochs+1)
	}
}
