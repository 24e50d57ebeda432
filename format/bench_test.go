package format

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// benchFile writes a 16 MiB model: one dense F32 tensor, one 90%-pruned
// tensor (auto sparse) and one F16 tensor.
func benchFile(b *testing.B) string {
	b.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	w := NewWriter()
	w.AddTensor("dense", []int{1024, 4096}, randTensor(rng, 1<<22, 1), AddOptions{})
	w.AddTensor("pruned", []int{1024, 1024}, randTensor(rng, 1<<20, 0.1), AddOptions{Sparse: true})
	w.AddTensor("half", []int{1024, 1024}, randTensor(rng, 1<<20, 1), AddOptions{F16: true})
	path := filepath.Join(b.TempDir(), "bench.ebnn")
	if err := w.WriteFile(path, WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return path
}

func benchOpen(b *testing.B, tensor string, noMmap bool) {
	path := benchFile(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := OpenWith(path, ReadOptions{NoMmap: noMmap})
		if err != nil {
			b.Fatal(err)
		}
		t, _ := f.Tensor(tensor)
		if _, err := t.Float32s(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// Dense F32, mmapped: zero-copy, cost is the lazy CRC pass over 16 MiB.
func BenchmarkOpenDenseMmap(b *testing.B)  { benchOpen(b, "dense", false) }
func BenchmarkOpenDenseRead(b *testing.B)  { benchOpen(b, "dense", true) }
func BenchmarkOpenPrunedMmap(b *testing.B) { benchOpen(b, "pruned", false) }
func BenchmarkOpenHalfMmap(b *testing.B)   { benchOpen(b, "half", false) }
