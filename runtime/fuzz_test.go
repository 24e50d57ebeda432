package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// fuzzSource serves base's tensors; names it lacks are missing or, with fallback, small random
// tensors whose shape depends on the name.
type fuzzSource struct {
	base     runtime.Tensors
	fallback bool
	seed     uint64
}

func (s fuzzSource) Tensor(name string) ([]float32, []int, error) {
	if t, ok := s.base[name]; ok {
		return t.Data, t.Shape, nil
	}
	if !s.fallback {
		return nil, nil, fmt.Errorf("%q: %w", name, runtime.ErrNoTensor)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewPCG(h.Sum64(), s.seed))
	shape := make([]int, r.IntN(4))
	n := 1
	for i := range shape {
		shape[i] = 1 + r.IntN(6)
		n *= shape[i]
	}
	return randn(r, n, 1), shape, nil
}

// smallSpec reports whether every size in s is small enough for randomTensors and a prediction.
func smallSpec(s *runtime.Spec) bool {
	n := 1
	for _, d := range s.InputShape {
		if d < 0 || d > 64 {
			return false
		}
		n *= d
	}
	if n > 4096 || (s.FA != nil && (s.FA.Rank < 0 || s.FA.Rank > 8)) {
		return false
	}
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	ok := true
	var walk func(ls []runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for _, l := range ls {
			ok = ok && in(l.In, 0, 128) && in(l.Out, 0, 128)
			for i := 0; i < 2; i++ {
				ok = ok && in(l.Kernel[i], 0, 7) && in(l.Stride[i], 0, 8) && in(l.Padding[i], -2, 8) &&
					in(l.Dilation[i], 0, 4) && in(l.OutputSize[i], 0, 64)
			}
			if p := l.Posterior; p != nil {
				ok = ok && in(p.InducingRows, 0, 12) && in(p.InducingCols, 0, 12) && in(p.EnsembleSize, 0, 6)
			}
			walk(l.Body)
			walk(l.Shortcut)
		}
	}
	walk(s.Layers)
	return ok
}

// FuzzSpec feeds ParseSpec and New with arbitrary model descriptions and small random (and
// damaged) tensors: New must return a Model or an error, never panic, and a Model it returns
// must predict without panicking.
func FuzzSpec(f *testing.F) {
	for _, tm := range testModels {
		spec := tm.spec()
		randomTensors(spec, 1)
		data, err := json.Marshal(spec)
		if err != nil {
			f.Fatal(err)
		}
		for mode := 0; mode < 256; mode += 37 {
			f.Add(data, uint64(mode), uint8(mode))
		}
	}
	f.Add([]byte(`{"version":1,"task":"regression","noise_var":1,"input_shape":[1,4,4],"layers":[`+
		`{"name":"p","op":"maxpool2d","kernel":[3,3],"padding":[1,1],"ceil_mode":true,"stride":[2,2]},`+
		`{"name":"a","op":"adaptiveavgpool2d","output_size":[1,1]},{"name":"f","op":"flatten"}]}`), uint64(1), uint8(0))
	f.Add([]byte(`{"version":1,"task":"classification","input_shape":[3],"fa":{"dim":5,"rank":1},"layers":[`+
		`{"name":"l","op":"linear","in":3,"out":1,"bias":true,"posterior":{"kind":"fa"}}]}`), uint64(2), uint8(16))
	f.Add([]byte(`{"version":1,"task":"classification","input_shape":[2],"layers":[{"name":"r","op":"residual",`+
		`"body":[{"name":"l","op":"linear","in":2,"out":2}],"shortcut":[]}]}`), uint64(3), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, mode uint8) {
		spec, err := runtime.ParseSpec(data)
		if err != nil {
			return
		}
		small := smallSpec(spec)
		ts := runtime.Tensors{}
		if small {
			dim := 0
			if spec.FA != nil {
				dim = spec.FA.Dim
			}
			ts = randomTensors(spec, seed)
			if spec.FA != nil && mode&1 != 0 {
				spec.FA.Dim = dim
			}
			damage(ts, seed, mode>>1&7)
		}
		m, err := runtime.New(spec, fuzzSource{base: ts, fallback: mode&16 != 0, seed: seed})
		if err != nil || !small {
			return
		}
		for _, li := range m.Layers() {
			if _, _, _, err := m.MeanWeight(li.Name); err != nil {
				t.Errorf("MeanWeight(%q): %v", li.Name, err)
			}
		}
		p, err := m.NewPredictor(runtime.Options{Samples: 2, MaxBatch: 2, Seed: seed, Strategy: runtime.Strategy(mode % 3)})
		if err != nil {
			t.Fatalf("NewPredictor: %v", err)
		}
		out := make([]runtime.Prediction, 3)
		// A damaged or random model may overflow float32: that must be the typed error naming the
		// input, never a panic or a prediction computed from NaN.
		if err := p.PredictBatch(randomInputs(m, 3, seed), out); err != nil && !errors.Is(err, runtime.ErrNonFinite) {
			t.Fatalf("PredictBatch: %v", err)
		} else if err == nil {
			for i, o := range out {
				for _, v := range append(append([]float32(nil), o.Probs...), o.Mean...) {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("input %d: a non-finite prediction without an error: %v", i, v)
					}
				}
			}
		}
	})
}

// damage spoils one tensor of ts (chosen by seed) in the way kind selects.
func damage(ts runtime.Tensors, seed uint64, kind uint8) {
	if kind == 0 || len(ts) == 0 {
		return
	}
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	// Map iteration order is random: sort for reproducible fuzzing.
	sort.Strings(names)
	name := names[seed%uint64(len(names))]
	t := ts[name]
	switch kind {
	case 1:
		delete(ts, name)
	case 2:
		ts[name] = runtime.Tensor{Shape: append(append([]int(nil), t.Shape...), 1, 2), Data: t.Data}
	case 3:
		fill(t.Data, float32(math.NaN()))
	case 4:
		fill(t.Data, float32(math.Inf(1)))
	case 5:
		fill(t.Data, 0)
	case 6:
		fill(t.Data, -1e30)
	case 7:
		ts[name] = runtime.Tensor{Shape: []int{1 << 30, 1 << 30, 1 << 30, 16}}
	}
}

func fill(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}
