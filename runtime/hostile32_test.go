package runtime_test

import (
	"bytes"
	"errors"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// Hostile model files whose sizes overflow a 32-bit int (GOARCH=arm), or whose inducing layers
// ask for unbounded work at load: each must be refused with an error naming the layer (or the
// limit), on every platform — never a panic, nor memory or time out of proportion to the file.
// Run on 32-bit ARM as well:
//
//	GOARCH=arm GOARM=7 go test -c -o rt.arm ./runtime &&
//	(cd runtime && qemu-arm-static -cpu cortex-a7 rt.arm -test.run Hostile32 -test.short)

// hostileFile writes spec and tensors into an in-memory model file, compressed (so that the
// constant tensors take a few bytes whatever their size).
func hostileFile(t testing.TB, spec *runtime.Spec, ts runtime.Tensors) []byte {
	t.Helper()
	w := format.NewWriter()
	for name, v := range ts {
		if _, err := w.AddTensor(name, v.Shape, v.Data, format.AddOptions{Compress: true}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.AddSpec(t, w, spec)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func constant(n int, x float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// inducingSpec is a one-layer model: an inducing Linear layer in → out with mo × mi inducing
// weights and q(U) q (whitened), and its tensors (constant, for a small file), the q(U) tensors
// for the full family with trilLen values.
func inducingSpec(in, out, mo, mi int, q string, trilLen int) (*runtime.Spec, runtime.Tensors) {
	spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{in},
		Layers: []runtime.LayerSpec{{Name: "l", Op: runtime.OpLinear, In: in, Out: out,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: mi,
				PriorSD: 1, QInducing: q, WhitenedU: true}}}}
	ts := runtime.Tensors{
		"l.z_row":  {Shape: []int{mo, out}, Data: constant(mo*out, 1)},
		"l.z_col":  {Shape: []int{mi, in}, Data: constant(mi*in, 1e-3)},
		"l._d_row": {Shape: []int{mo}, Data: constant(mo, 0)},
		"l._d_col": {Shape: []int{mi}, Data: constant(mi, 0)},
		"l._lamda": {Shape: []int{}, Data: []float32{0}},
	}
	if q == runtime.QFull {
		ts["l.inducing_mean"] = runtime.Tensor{Shape: []int{mo * mi}, Data: constant(mo*mi, 0)}
		ts["l._inducing_scale_tril"] = runtime.Tensor{Shape: []int{trilLen}, Data: constant(trilLen, 0)}
	} else {
		ts["l.inducing_mean"] = runtime.Tensor{Shape: []int{mo, mi}, Data: constant(mo*mi, 0)}
		ts["l._inducing_sd"] = runtime.Tensor{Shape: []int{mo, mi}, Data: constant(mo*mi, -3)}
	}
	return spec, ts
}

// TestHostile32Load: files that NewPredictor or the load itself turned into a panic on 32-bit ARM
// (sizes wrapping around in int), or into unbounded work, are refused at load.
func TestHostile32Load(t *testing.T) {
	type tc struct {
		name  string
		file  func(t testing.TB) []byte
		want  []string // in the error
		isMem bool     // errors.Is ErrMemory
	}
	cases := []tc{
		{
			// A deterministic Conv2d 1 → 1 with a 1 × 65536 kernel over 1 × 131071: an im2col
			// matrix of 65536 × 65536 = 2^32 values (0 in 32-bit int: the warm-up panicked).
			name: "conv-im2col-2^32",
			file: func(t testing.TB) []byte {
				const K = 1 << 16
				spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{1, 1, 2*K - 1},
					Layers: []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 1, Out: 1, Kernel: [2]int{1, K}}, {Name: "f", Op: runtime.OpFlatten}}}
				return hostileFile(t, spec, runtime.Tensors{"c.weight": {Shape: []int{1, 1, 1, K}, Data: constant(K, 1e-3)}})
			},
			want: []string{`layer "c"`, "im2col", "4294967296"}, isMem: true,
		},
		{
			// A dilated kernel that does not fit the input: d·(k−1) = 65536·65535 wraps around
			// to −65536 in 32-bit int, which made the output seem 65537 rows high.
			name: "conv-dilation-2^32",
			file: func(t testing.TB) []byte {
				const K = 1 << 16
				spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{1, 1, 1},
					Layers: []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 1, Out: 1, Kernel: [2]int{K, 1}, Dilation: [2]int{K, 1}}, {Name: "f", Op: runtime.OpFlatten}}}
				return hostileFile(t, spec, runtime.Tensors{"c.weight": {Shape: []int{1, 1, K, 1}, Data: constant(K, 1e-3)}})
			},
			want: []string{`layer "c"`, "dilation", "empty"},
		},
		{
			name: "maxpool-dilation-2^32",
			file: func(t testing.TB) []byte {
				const K = 1 << 16
				spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{1, 1, 1},
					Layers: []runtime.LayerSpec{{Name: "p", Op: runtime.OpMaxPool2d, Kernel: [2]int{K, 1}, Stride: [2]int{1, 1}, Dilation: [2]int{K, 1}}, {Name: "f", Op: runtime.OpFlatten}}}
				return hostileFile(t, spec, runtime.Tensors{})
			},
			want: []string{`layer "p"`, "empty"},
		},
		{
			// An inducing Linear 2^23 → 1 with M_r = 256: its weight sampler's M_r × d_in is
			// 2^31 values (negative in 32-bit int: sampleCore panicked under Strategy Weight).
			name: "inducing-weight-scratch-2^31",
			file: func(t testing.TB) []byte {
				spec, ts := inducingSpec(1<<23, 1, 256, 1, runtime.QDiagonal, 0)
				return hostileFile(t, spec, ts)
			},
			want: []string{`layer "l"`, "256 inducing rows × 8388608 inputs", "2147483648"}, isMem: true,
		},
		{
			// q(U) full with M_r = M_c = 256: d = 65536 and the packed factor d(d+1)/2 =
			// 2 147 516 416 values, 32768 in 32-bit int — which a 32768-value tensor matched
			// (vecToChol then panicked).
			name: "inducing-full-tril-2^31",
			file: func(t testing.TB) []byte {
				spec, ts := inducingSpec(256, 256, 256, 256, runtime.QFull, 32768)
				return hostileFile(t, spec, ts)
			},
			want: []string{`layer "l"`, "full q(U)", "4294967296"}, isMem: true,
		},
		{
			// A 1 → 1 layer with M_c = 4096: four 4096 × 4096 Cholesky factorisations (25 s
			// and 640 MiB) from a 3 KB file.
			name: "inducing-load-work",
			file: func(t testing.TB) []byte {
				spec, ts := inducingSpec(1, 1, 1, 4096, runtime.QDiagonal, 0)
				return hostileFile(t, spec, ts)
			},
			want: []string{`layer "l"`, "MaxInducingWork"},
		},
		{
			// A global inducing posterior over 16 layers of 4096 × 4096 inducing weights: its
			// mean E[U_{1:L}] (1 GiB) was allocated before any layer's tensor was read.
			name: "global-u-mean-1GiB",
			file: func(t testing.TB) []byte {
				const layers, mo, mi = 16, 4096, 4096
				g := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 1, InducingCols: 1, PriorSD: 1,
					QInducing: runtime.QDiagonal, WhitenedU: true}
				spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{1}, GlobalU: g}
				for i := 0; i < layers; i++ {
					spec.Layers = append(spec.Layers, runtime.LayerSpec{Name: "l" + strconv.Itoa(i), Op: runtime.OpLinear, In: 1, Out: 1,
						Posterior: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: mi, PriorSD: 1,
							QInducing: runtime.QGlobal, WhitenedU: true}})
				}
				const rows = layers * mo
				p := runtime.GlobalUName + "."
				return hostileFile(t, spec, runtime.Tensors{
					p + "z_row":         {Shape: []int{1, rows}, Data: constant(rows, 1)},
					p + "z_col":         {Shape: []int{1, mi}, Data: constant(mi, 1)},
					p + "_d_row":        {Shape: []int{1}, Data: []float32{0}},
					p + "_d_col":        {Shape: []int{1}, Data: []float32{0}},
					p + "_lamda":        {Shape: []int{}, Data: []float32{0}},
					p + "inducing_mean": {Shape: []int{1, 1}, Data: []float32{1}},
					p + "_inducing_sd":  {Shape: []int{1, 1}, Data: []float32{-3}},
				})
			},
			want: []string{runtime.GlobalUName, "MaxInducingBytes"}, isMem: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.file(t)
			goruntime.GC()
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			m, err := loadNoPanic(t, data)
			goruntime.ReadMemStats(&after)
			if err == nil {
				// Before the fix some of these loaded; their predictor must not panic either.
				_, perr := newPredictorNoPanic(t, m, runtime.Options{Strategy: runtime.Weight, Samples: 1, MaxMemory: 1 << 30})
				t.Fatalf("%d-byte file loaded (int has %d bits; NewPredictor: %v); want an error", len(data), strconv.IntSize, perr)
			}
			testutil.ErrorContains(t, err, c.want...)
			if c.isMem && !errors.Is(err, runtime.ErrMemory) {
				t.Errorf("error %q is not ErrMemory", err)
			}
			// Refused before the work and the allocations it would size: well below the
			// tensors' own decoding budget (4 × file + 64 MiB).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<20 {
				t.Errorf("refusing the %d-byte file allocated %d MiB", len(data), alloc>>20)
			}
		})
	}
}

func loadNoPanic(t *testing.T, data []byte) (m *runtime.Model, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("LoadBytes panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return runtime.LoadBytes(data)
}

func newPredictorNoPanic(t *testing.T, m *runtime.Model, o runtime.Options) (p *runtime.Predictor, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("NewPredictor(%+v) panicked: %v\n%s", o, r, debug.Stack())
		}
	}()
	return m.NewPredictor(o)
}

// TestHostile32Predictor: predictor sizes that wrap around in 32-bit int are refused with
// ErrMemory (or a clear error) by NewPredictor instead of allocating short buffers.
func TestHostile32Predictor(t *testing.T) {
	t.Run("keep-samples-2^32", func(t *testing.T) {
		// 2^20 samples × 4096 outputs kept per prediction: 2^32 values, 0 in 32-bit int.
		const out = 4096
		spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{1},
			Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 1, Out: out,
				Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1}}}}
		m, err := runtime.New(spec, runtime.Tensors{
			"fc.weight_mean": {Shape: []int{out, 1}, Data: constant(out, 0)},
			"fc._weight_sd":  {Shape: []int{out, 1}, Data: constant(out, -3)},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = newPredictorNoPanic(t, m, runtime.Options{Samples: 1 << 20, KeepSamples: true})
		if err == nil || !strings.Contains(err.Error(), "KeepSamples") {
			t.Fatalf("NewPredictor: %v; want an error naming KeepSamples", err)
		}
	})
	t.Run("no-limit-beyond-address-space", func(t *testing.T) {
		if strconv.IntSize == 64 {
			t.Skip("the predictor (48 GiB) fits a 64-bit address space: nothing to refuse without a limit")
		}
		// Inputs of 2^26 features in batches of 64: activation buffers of 2^32 values (0 in
		// 32-bit int), with no memory limit (MaxMemory < 0).
		const in = 1 << 26
		spec := &runtime.Spec{Version: 1, Task: runtime.Classification, InputShape: []int{in},
			Layers: []runtime.LayerSpec{{Name: "relu", Op: runtime.OpReLU}}}
		m, err := runtime.New(spec, runtime.Tensors{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = newPredictorNoPanic(t, m, runtime.Options{MaxBatch: 64, MaxMemory: -1})
		if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), "address space") {
			t.Fatalf("NewPredictor: %v; want ErrMemory naming the address space", err)
		}
	})
}

// TestHostile32DeployTrailing: anything but white space after a preprocess or policy JSON object
// is an error, a stray ']' or '}' included (json.Decoder.More reported no more values there).
func TestHostile32DeployTrailing(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{`{"version":1}`, true}, {"{\"version\":1} \n\t", true},
		{`{"version":1}]`, false}, {`{"version":1}}}}`, false}, {`{"version":1} x`, false}, {`{"version":1} {}`, false}, {`{"version":1}"`, false},
	} {
		_, perr := runtime.ParsePolicy([]byte(c.s), runtime.Classification)
		_, qerr := runtime.ParsePreprocess([]byte(c.s), []int{4}, runtime.Classification, 2)
		for _, err := range []error{perr, qerr} {
			switch {
			case c.ok && err != nil:
				t.Errorf("%q: %v", c.s, err)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), "data after the JSON object")):
				t.Errorf("%q: %v; want an error about data after the object", c.s, err)
			}
		}
	}
}
