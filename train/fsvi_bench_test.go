package train

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFSVIStep times one optimizer step of objective fsvi and of the ELBO (MFVI) with the
// same network, q and minibatch (Two Moons, mlp:2-32-32-2, batch 100, 32 context points) and
// reports their ratio as fsvi/mfvi (ns/op is the FSVI step), for each way of computing the KL:
// tape (the reference: the KL on the autodiff tape, in float64), direct (the default: fsvi's
// closed-form path, float64, J fixed) and jgrad (direct with fsvi_jacobian_grad q), joint and
// per_output. The FSVI and MFVI steps alternate in blocks of 10 so that both see the same
// load on a shared machine.
func BenchmarkFSVIStep(b *testing.B) {
	build := func(objective, cov string) *Trainer {
		c := DefaultConfig()
		c.Arch, c.Data, c.Posterior, c.Objective = "mlp:2-32-32-2", "moons", "ffg_w", objective
		c.Context, c.ContextSize, c.BatchSize = "uniform", DefaultContextSize, 100
		c.FSVICovariance = cov
		c.Out = filepath.Join(b.TempDir(), "m.ebnn")
		tr, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	for _, cov := range []string{"joint", "per_output"} {
		for _, path := range []string{"tape", "direct", "jgrad"} {
			b.Run(cov+"/"+path, func(b *testing.B) {
				mf, fs := build("elbo", "joint"), build("fsvi", cov)
				fs.fs.opts.Tape = path == "tape"
				fs.Config.FSVIJacobianGrad = "none"
				if path == "jgrad" {
					fs.Config.FSVIJacobianGrad = "q"
				}
				alternateSteps(b, fs, mf, 3, 10)
			})
		}
	}
}

// alternateSteps times b.N steps of fs (the benchmark's time) on the first 100 training examples,
// alternating blocks of at most block steps with as many steps of mf, after warm steps of each,
// and reports mf's time per step (mfvi-ns/step) and the ratio of the two (fsvi/mfvi): both see the
// same load on a shared machine.
func alternateSteps(b *testing.B, fs, mf *Trainer, warm, block int) {
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
	timeSteps(mf, warm)
	timeSteps(fs, warm)
	b.ResetTimer()
	var dfs, dmf time.Duration
	for done := 0; done < b.N; {
		k := min(block, b.N-done)
		dfs += timeSteps(fs, k)
		b.StopTimer()
		dmf += timeSteps(mf, k)
		b.StartTimer()
		done += k
	}
	b.ReportMetric(float64(dmf.Nanoseconds())/float64(b.N), "mfvi-ns/step")
	b.ReportMetric(float64(dfs)/float64(dmf), "fsvi/mfvi")
}

// BenchmarkFSVIStepFMNIST is the step cost on paper 004's Fashion-MNIST network (mlp:784-256-256-10,
// 538 644 parameters of q, batch 100, 32 random-monochrome context points: the defaults) for
// each covariance and gradient mode and for fsvi_kl last_layer, as the ratio to an MFVI step timed
// alternately (fsvi/mfvi).
// Needs the Fashion-MNIST files (Debian's dataset-fashion-mnist).
func BenchmarkFSVIStepFMNIST(b *testing.B) {
	build := func(objective, cov, jgrad string) *Trainer {
		c := DefaultConfig()
		c.Arch, c.Data, c.Posterior, c.Objective = "mlp:784-256-256-10", "fmnist", "ffg_w", objective
		c.Context, c.BatchSize, c.TrainLimit, c.TestLimit = "random-monochrome", 100, 200, 10
		c.FSVICovariance, c.FSVIJacobianGrad = cov, jgrad
		if cov == "last_layer" {
			c.FSVICovariance, c.FSVIKL = "joint", "last_layer"
		}
		c.Out = filepath.Join(b.TempDir(), "m.ebnn")
		tr, err := New(c)
		if err != nil {
			b.Skipf("Fashion-MNIST: %v", err)
		}
		return tr
	}
	for _, cov := range []string{"joint", "per_output"} {
		for _, jgrad := range []string{"none", "q"} {
			b.Run(cov+"/"+jgrad, func(b *testing.B) {
				mf, fs := build("elbo", "joint", "none"), build("fsvi", cov, jgrad)
				alternateSteps(b, fs, mf, 1, 3)
			})
		}
	}
	// fsvi_kl last_layer (the reference code's KL): no Jacobian, the gradient through the
	// features on the step's own tape.
	b.Run("last_layer", func(b *testing.B) {
		mf, fs := build("elbo", "joint", "none"), build("fsvi", "last_layer", "none")
		alternateSteps(b, fs, mf, 1, 3)
	})
}
