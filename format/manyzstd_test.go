package format

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// resnetLikeTensor is one tensor of resnetLike.
type resnetLikeTensor struct {
	name  string
	shape []int
	opt   AddOptions
}

// resnetLike lists the tensors of a ResNet-50 (bottleneck blocks 3, 4, 6, 3,
// every convolution with its BatchNorm, a final linear layer) with channel
// widths divided by div: the real section count (267) at a fraction of
// the size. Weights are F16, BatchNorm F32, every other downsample weight
// sparse; all are zstd-compressed.
func resnetLike(div int) []resnetLikeTensor {
	var out []resnetLikeTensor
	conv := func(name string, cout, cin, k int, opt AddOptions) {
		opt.Compress = true
		out = append(out, resnetLikeTensor{name + ".weight", []int{cout, cin, k, k}, opt})
	}
	bn := func(name string, c int) {
		for _, p := range []string{"weight", "bias", "running_mean", "running_var"} {
			out = append(out, resnetLikeTensor{name + "." + p, []int{c}, AddOptions{Compress: true}})
		}
	}
	f16 := AddOptions{F16: true}
	conv("conv1", 64/div, 3, 7, f16)
	bn("bn1", 64/div)
	in := 64 / div
	for li, l := range []struct{ planes, blocks int }{{64, 3}, {128, 4}, {256, 6}, {512, 3}} {
		p := l.planes / div
		for b := 0; b < l.blocks; b++ {
			pre := fmt.Sprintf("layer%d.%d.", li+1, b)
			conv(pre+"conv1", p, in, 1, f16)
			bn(pre+"bn1", p)
			conv(pre+"conv2", p, p, 3, f16)
			bn(pre+"bn2", p)
			conv(pre+"conv3", 4*p, p, 1, f16)
			bn(pre+"bn3", 4*p)
			if b == 0 {
				conv(pre+"downsample.0", 4*p, in, 1, AddOptions{F16: li%2 == 0, Sparse: true})
				bn(pre+"downsample.1", 4*p)
			}
			in = 4 * p
		}
	}
	out = append(out,
		resnetLikeTensor{"fc.weight", []int{1000, in}, AddOptions{F16: true, Compress: true}},
		resnetLikeTensor{"fc.bias", []int{1000}, AddOptions{Compress: true}})
	return out
}

// TestManyZstdSectionsDefaultBudget: a ResNet-50-shaped file with hundreds of
// zstd sections opens and decodes every tensor under the default budget. The
// file is built so that charging each section its own decoder state (as the
// reader once did) would exceed that budget, and the reader's real
// allocations while decoding stay within what it charges.
func TestManyZstdSectionsDefaultBudget(t *testing.T) {
	const div = 4 // a 2.6 MB file, fast enough under emulation too
	rng := rand.New(rand.NewPCG(50, 1))
	w := NewWriter()
	want := map[string][]float32{}
	specs := resnetLike(div)
	for _, s := range specs {
		n := 1
		for _, d := range s.shape {
			n *= d
		}
		// Multiples of 1/64 in [-2, 2): exact in float16, compressible.
		data := make([]float32, n)
		for i := range data {
			if !s.opt.Sparse || rng.IntN(4) == 0 {
				data[i] = float32(rng.IntN(256)-128) / 64
			}
		}
		if _, err := w.AddTensor(s.name, s.shape, data, s.opt); err != nil {
			t.Fatal(err)
		}
		want[s.name] = data
	}
	data := encode(t, w)
	f, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// The file really needs the shared decoder: hundreds of compressed
	// sections whose per-section decoder state alone exceeds the budget.
	var compressed int
	var perSection uint64
	for _, s := range f.Sections() {
		if s.Compression == Zstd {
			compressed++
			// The former charge: output, window, two blocks and 256 KiB.
			w := zstdWindowLimit(uint64(s.RawSize))
			perSection += uint64(s.RawSize) + w + 2*(min(w, 128<<10)+16) + 256<<10
		}
	}
	limit := DefaultAllocLimit(int64(len(data)))
	if compressed < 250 || compressed != len(specs) || perSection <= uint64(limit) {
		t.Fatalf("%d of %d sections compressed, per-section charges %d, budget %d: not the intended file", compressed, len(specs), perSection, limit)
	}

	before, _ := f.Allocated()
	got := allocDelta(func() {
		for _, s := range specs {
			tn, err := f.Tensor(s.name)
			if err != nil {
				t.Fatal(err)
			}
			x, err := tn.Float32s()
			if err != nil {
				t.Fatalf("tensor %q: %v", s.name, err)
			}
			ref := want[s.name]
			if len(x) != len(ref) {
				t.Fatalf("tensor %q: %d values, want %d", s.name, len(x), len(ref))
			}
			for i := range ref {
				if x[i] != ref[i] {
					t.Fatalf("tensor %q[%d] = %v, want %v", s.name, i, x[i], ref[i])
				}
			}
		}
	})
	used, lim := f.Allocated()
	if used > lim {
		t.Fatalf("used %d > limit %d", used, lim)
	}
	// Allocations of the test's own loop (Tensor handles, error-free
	// comparisons) are a few hundred bytes per tensor.
	slack := uint64(len(specs)) * 256
	if got > uint64(used-before)+slack {
		t.Errorf("decoding allocated %d bytes, charged %d (+%d slack)", got, used-before, slack)
	}
	if f.scratch != nil {
		t.Errorf("scratch buffer (%d bytes) kept after every tensor was decoded", cap(f.scratch))
	}
	t.Logf("%d-byte file, %d zstd sections: charged %d of %d (table %d, decoding %d); decoding allocated %d; per-section decoder state would need %d",
		len(data), compressed, used, lim, before, used-before, got, perSection)
}
