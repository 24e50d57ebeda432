package train

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// TestTrainingMemoryBoundsLiveHeap: checkTrainingMemory's estimate (trainingMemory:
// denseWeights × trainingFloats × 4 bytes and trainingOverhead) is at least the peak live heap of a short run, final checkpoint and
// model files included, for every posterior kind. With one factor of 8 float32 values per
// counted value, ffg_w on mlp:1-3000-3000-1 was estimated at 1.15 GB and held 2.1 GB live, and
// died under ulimit -v writing its final checkpoint. The heap is sampled every millisecond at
// GOGC 5, so that the heap's objects are the live heap within a few per cent.
func TestTrainingMemoryBoundsLiveHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("trains sixteen networks of 0.4 M weights and resumes two")
	}
	const ind = `{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 32, "inducing_cols": 32}}, "q_inducing": "diagonal", "whitened_u": true}`
	for _, tc := range []struct {
		name, posterior, inference string
		set                        func(*Config)
		resume                     bool // measured while resuming the run's checkpoint for one more epoch
	}{
		{"deterministic", "deterministic", "", nil, false},
		{"mc_dropout", "mc_dropout", "", func(c *Config) { c.Dropout = 0.1 }, false},
		{"ffg_w", "ffg_w", "", nil, false},
		{"ffg_w 4 samples", "ffg_w", "", func(c *Config) { c.TrainSamples = 4 }, false},
		{"ensemble_w 3", "ensemble_w", "", func(c *Config) { c.EnsembleSize = 3 }, false},
		{"inducing", "inducing", ind, nil, false},
		{"inducing 4 samples", "inducing", ind, func(c *Config) { c.TrainSamples = 4 }, false},
		{"vifa", "vifa", "", func(c *Config) { c.LatentDim = 4 }, false},
		{"vifa latent 8", "vifa", "", func(c *Config) { c.LatentDim = 8 }, false},
		{"vifa averaged", "vifa", "", func(c *Config) { c.LatentDim = 4; c.FAAverageEpochs = 1 }, false},
		{"fa_em", "fa_em", "", func(c *Config) { c.LatentDim = 4; c.FAStartEpoch = 0 }, false},
		{"fa_sga", "fa_sga", "", func(c *Config) { c.LatentDim = 4; c.FAStartEpoch = 0 }, false},
		{"vifa latent 8 resumed", "vifa", "", func(c *Config) { c.LatentDim = 8 }, true},
		{"fa_em latent 8 resumed", "fa_em", "", func(c *Config) { c.LatentDim = 8; c.FAStartEpoch = 0 }, true},
		{"swag", "swag", "", func(c *Config) { c.LatentDim = 4; c.FAStartEpoch = 0 }, false},
		{"laplace", "laplace", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, tc.posterior, tc.inference)
			c.Data, c.Arch, c.Epochs, c.BatchSize = "toy1d:1000", "mlp:1-600-600-1", 1, 100
			if tc.set != nil {
				tc.set(&c)
			}
			if tc.resume {
				tr, err := New(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Run(context.Background(), Hooks{}); err != nil {
					t.Fatal(err)
				}
				c.Epochs++
			}
			peak, est := runPeakHeap(t, c, tc.resume)
			t.Logf("estimate %.0f MB, peak live heap %.0f MB (%.2f)", float64(est)/1e6, float64(peak)/1e6, float64(est)/float64(peak))
			if peak > est {
				t.Errorf("the estimate %d bytes is below the peak live heap %d", est, peak)
			}
			if est > 3*peak {
				t.Errorf("the estimate %d bytes is more than 3× the peak live heap %d", est, peak)
			}
		})
	}
}

// runPeakHeap trains c (resume: resumes c.Out, the checkpoint of c's run, for c.Epochs) and
// returns the peak of the heap's objects above what they were before, at GOGC 5, and
// checkTrainingMemory's estimate for c.
func runPeakHeap(t *testing.T, c Config, resume bool) (peak, est int64) {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var (
		mu   sync.Mutex
		top  uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			mu.Lock()
			top = max(top, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var tr *Trainer
	var err error
	if resume {
		tr, err = Resume(c.Out, func(rc *Config) error { rc.Epochs = c.Epochs; return nil })
	} else {
		tr, err = New(c)
	}
	if err == nil {
		// The estimate the check made: before Run (laplace's run ends with an ffg_w network).
		k := 1
		if c.Posterior == "ensemble_w" {
			k = c.EnsembleSize
		}
		var ok bool
		if est, _, ok = trainingMemory(tr.spec, &c, k); !ok {
			t.Fatal("trainingMemory overflowed")
		}
		err = tr.Run(context.Background(), Hooks{})
	}
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return int64(top - min(top, base)), est
}
