package train

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkFAStep times one training update of the factor-analysis posteriors on
// mlp:1-500-500-1 (252 k parameters, toy1d:1000, batch 32, latent_dim 8): for vifa one VIFA
// update (the likelihood gradient by backpropagation, the KL's gradient, Adam on c, F, log ψ,
// then the KL, as runVIFAEpoch does it); for fa_em and fa_sga a step of the network and the
// online fit's observation of its parameters (fa_every 1).
func BenchmarkFAStep(b *testing.B) {
	for _, post := range []string{"vifa", "fa_em", "fa_sga"} {
		b.Run(post, func(b *testing.B) {
			c := DefaultConfig()
			c.Data, c.Task, c.Arch, c.NoisePrecision = "toy1d:1000", "regression", "mlp:1-500-500-1", 100
			c.Posterior, c.LatentDim, c.BatchSize, c.LR, c.FAStartEpoch = post, 8, 32, 1e-3, 0
			c.Out = filepath.Join(b.TempDir(), "m.ebnn")
			tr, err := New(c)
			if err != nil {
				b.Fatal(err)
			}
			nb := c.BatchSize
			idx := make([]int, nb)
			next := 0
			batch := func() []int {
				for j := range idx {
					idx[j] = (next*nb + j) % tr.Train.N
				}
				next++
				return idx
			}
			update := func() error {
				if r := tr.fa; r.vifa != nil {
					if _, err := r.vifa.Step(func(theta, grad []float64) (float64, error) {
						return tr.vifaNLL(batch(), theta, grad)
					}); err != nil {
						return err
					}
					_, err := r.vifa.KL()
					return err
				}
				if _, _, _, err := tr.step(batch(), 1); err != nil {
					return err
				}
				return tr.fa.observe()
			}
			if err := update(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := update(); err != nil {
					b.Fatal(fmt.Errorf("%s: %w", post, err))
				}
			}
		})
	}
}

// BenchmarkFACheckpoint times SaveCheckpoint of vifa and fa_em on mlp:1-500-500-1 (252 k
// parameters) at latent_dim 4: the model's tensors and the learner's state (vifa's 12 + 6·4
// float64 values per parameter), generated into the file.
func BenchmarkFACheckpoint(b *testing.B) {
	for _, post := range []string{"vifa", "fa_em"} {
		b.Run(post, func(b *testing.B) {
			c := DefaultConfig()
			c.Data, c.Task, c.Arch, c.NoisePrecision = "toy1d:100", "regression", "mlp:1-500-500-1", 100
			c.Posterior, c.LatentDim, c.BatchSize, c.FAStartEpoch = post, 4, 50, 0
			dir := b.TempDir()
			c.Out = filepath.Join(dir, "m.ebnn")
			tr, err := New(c)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, "c.ebnn")
			b.ReportAllocs()
			for b.Loop() {
				if err := tr.SaveCheckpoint(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
