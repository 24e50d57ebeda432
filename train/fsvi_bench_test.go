package train

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFSVIStep times one optimizer step of objective fsvi and of the ELBO (MFVI) with the
// same network, q and minibatch (Two Moons, mlp:2-32-32-2, batch 100, 32 context points) and
// reports their ratio as fsvi/mfvi (ns/op is the FSVI step).
func BenchmarkFSVIStep(b *testing.B) {
	build := func(objective string) *Trainer {
		c := DefaultConfig()
		c.Arch, c.Data, c.Posterior, c.Objective = "mlp:2-32-32-2", "moons", "ffg_w", objective
		c.Context, c.ContextSize, c.BatchSize = "uniform", DefaultContextSize, 100
		c.Out = filepath.Join(b.TempDir(), "m.ebnn")
		tr, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	idx := make([]int, 100)
	for i := range idx {
		idx[i] = i
	}
	timeSteps := func(tr *Trainer, n int) time.Duration {
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, _, _, err := tr.step(idx, 1); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	mf, fs := build("elbo"), build("fsvi")
	timeSteps(mf, 3)
	timeSteps(fs, 3)
	b.ResetTimer()
	dfs := timeSteps(fs, b.N)
	b.StopTimer()
	dmf := timeSteps(mf, b.N)
	b.ReportMetric(float64(dmf.Nanoseconds())/float64(b.N), "mfvi-ns/step")
	b.ReportMetric(float64(dfs)/float64(dmf), "fsvi/mfvi")
}
