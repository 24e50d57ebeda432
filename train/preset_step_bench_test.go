package train

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"testing"
)

// presetTrainer builds the preset name's trainer on the first limit training examples (the
// Fashion-MNIST files are needed: skips without them).
func presetTrainer(tb testing.TB, name string, limit int) *Trainer {
	c := DefaultConfig()
	if err := c.ApplyPreset(name); err != nil {
		tb.Fatal(err)
	}
	c.TrainLimit, c.TestLimit, c.Seed = limit, 100, 1
	c.Out = filepath.Join(tb.TempDir(), "m.ebnn")
	tr, err := New(c)
	if err != nil {
		tb.Skipf("%s: %v", name, err)
	}
	return tr
}

// BenchmarkPresetStepFSVI times trainer.step of the preset paper004-fmnist-fsvi (the CNN, batch
// 128, 32 corrupted context points, fsvi_kl last_layer) on the first 1280 training examples,
// with its tapes' convolutions and pools on one goroutine (workers=1, the baseline) and on
// GOMAXPROCS (the trainer's default; the same bits, TestPresetStepHash).
func BenchmarkPresetStepFSVI(b *testing.B) {
	for _, workers := range []int{1, goruntime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			tr := presetTrainer(b, "paper004-fmnist-fsvi", 1280)
			tr.tape.SetWorkers(workers)
			tr.fs.ptape.SetWorkers(workers)
			nb := tr.Config.BatchSize
			idx := make([]int, nb)
			run := func(i int) {
				for j := range idx {
					idx[j] = (i*nb + j) % tr.Train.N
				}
				if _, _, _, err := tr.step(idx, 1); err != nil {
					b.Fatal(err)
				}
			}
			run(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(i + 1)
			}
		})
	}
}

// TestPresetStepHash runs EDGEBNN_HASH_STEPS steps (unset: skipped) of the preset
// paper004-fmnist-fsvi and logs a SHA-256 of every parameter's value and gradient, the losses and
// the checkpoint's bytes: equal hashes across commits mean the same bits.
func TestPresetStepHash(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("EDGEBNN_HASH_STEPS"))
	if n <= 0 {
		t.Skip("EDGEBNN_HASH_STEPS unset")
	}
	tr := presetTrainer(t, "paper004-fmnist-fsvi", 2560)
	nb := tr.Config.BatchSize
	idx := make([]int, nb)
	h := sha256.New()
	for i := 0; i < n; i++ {
		for j := range idx {
			idx[j] = (i*nb + j*7) % tr.Train.N
		}
		loss, nll, kl, err := tr.step(idx, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{loss, nll, kl} {
			binary.Write(h, binary.LittleEndian, math.Float64bits(v))
		}
		if i == 0 || i == n-1 {
			t.Logf("step %d loss %.9g nll %.9g kl %.9g", i, loss, nll, kl)
		}
	}
	for _, p := range tr.params {
		h.Write([]byte(p.Name))
		for _, v := range p.Value {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		for _, v := range p.Grad {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
	}
	t.Logf("params+grads+losses sha256 %x", h.Sum(nil))
	path := filepath.Join(t.TempDir(), "c.ebnn")
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("checkpoint sha256 %x (%d bytes)\n", sha256.Sum256(data), len(data))
}
