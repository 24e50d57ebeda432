package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestInputErrors: a wrong input length, NaN or infinite values are errors naming the input and
// the value, for Predict and PredictBatch.
func TestInputErrors(t *testing.T) {
	m := buildModel(t, mlpSpec(), 1)
	p, err := m.NewPredictor(runtime.Options{Samples: 2, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	in := m.InputSize()
	bad := func(i int, v float32) []float32 {
		x := make([]float32, 3*in)
		x[i] = v
		return x
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name string
		x    []float32
		n    int
		want []string
	}{
		{"short", make([]float32, in-1), 1, []string{strconv.Itoa(in - 1), strconv.Itoa(in)}},
		{"long", make([]float32, in+1), 1, []string{strconv.Itoa(in + 1), strconv.Itoa(in)}},
		{"empty", nil, 1, []string{"0", strconv.Itoa(in)}},
		{"batch short", make([]float32, 3*in-2), 3, []string{strconv.Itoa(3*in - 2), strconv.Itoa(3 * in)}},
		{"NaN", bad(3, nan), 3, []string{"input 0", "value 3", "NaN"}},
		{"NaN in third input", bad(2*in+5, nan), 3, []string{"input 2", "value 5", "NaN"}},
		{"+Inf", bad(in, inf), 3, []string{"input 1", "value 0", "infinite"}},
		{"-Inf", bad(in+7, -inf), 3, []string{"input 1", "value 7", "infinite"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := make([]runtime.Prediction, c.n)
			var err error
			if c.n == 1 {
				err = p.Predict(c.x, &out[0])
			} else {
				err = p.PredictBatch(c.x, out)
			}
			testutil.ErrorContains(t, err, c.want...)
		})
	}
	// The predictor still works afterwards.
	var pr runtime.Prediction
	if err := p.Predict(make([]float32, in), &pr); err != nil || len(pr.Probs) != m.OutputSize() {
		t.Fatalf("after errors: %v, %d probabilities", err, len(pr.Probs))
	}
}

// TestOptionErrors: out-of-range options are errors.
func TestOptionErrors(t *testing.T) {
	m := buildModel(t, mlpSpec(), 1)
	for _, c := range []struct {
		name string
		o    runtime.Options
		want string
	}{
		{"negative samples", runtime.Options{Samples: -1}, "samples"},
		{"too many samples", runtime.Options{Samples: 1<<20 + 1}, "samples"},
		{"negative batch", runtime.Options{MaxBatch: -3}, "batch"},
		{"huge batch", runtime.Options{MaxBatch: 1<<16 + 1}, "batch"},
		{"unknown strategy", runtime.Options{Strategy: 7}, "strategy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.NewPredictor(c.o)
			testutil.ErrorContains(t, err, c.want)
		})
	}
	if _, _, _, err := m.MeanWeight("nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("MeanWeight of a missing layer: %v", err)
	}
	if _, err := runtime.ParseStrategy("fast"); err == nil {
		t.Error("ParseStrategy accepted \"fast\"")
	}
	for _, s := range []runtime.Strategy{runtime.Auto, runtime.Weight, runtime.Local} {
		if got, err := runtime.ParseStrategy(s.String()); err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s.String(), got, err)
		}
	}
}

// TestModelErrors: malformed specs and tensors are errors naming the layer and the tensor at
// fault, never panics.
func TestModelErrors(t *testing.T) {
	type edit func(s *runtime.Spec, ts runtime.Tensors)
	reshape := func(name string, shape ...int) edit {
		return func(_ *runtime.Spec, ts runtime.Tensors) {
			n := 1
			for _, d := range shape {
				n *= d
			}
			ts[name] = tensor(make([]float32, n), shape...)
		}
	}
	drop := func(name string) edit { return func(_ *runtime.Spec, ts runtime.Tensors) { delete(ts, name) } }
	layer := func(i int, f func(l *runtime.LayerSpec)) edit {
		return func(s *runtime.Spec, _ runtime.Tensors) { f(&s.Layers[i]) }
	}
	// Element counts that overflow int (2^IntSize wraps to 0) must not pass the shape check.
	hugeOut := 1 << (strconv.IntSize - 24)
	cases := []struct {
		name  string
		model func() *runtime.Spec
		edit  edit
		want  []string
	}{
		{"missing z_row", mlpSpec, drop("0.z_row"), []string{`"0"`, "0.z_row"}},
		{"z_col shape", mlpSpec, reshape("0.z_col", 5, 8), []string{`"0"`, "0.z_col", "shape"}},
		{"z_row values", mlpSpec, func(_ *runtime.Spec, ts runtime.Tensors) {
			ts["0.z_row"] = runtime.Tensor{Shape: []int{4, 16}, Data: make([]float32, 63)}
		}, []string{`"0"`, "0.z_row"}},
		{"z_row pruned", mlpSpec, reshape("0.z_row", 4, 16), []string{`"0"`, "z_row"}},
		{"inducing_mean shape", mlpSpec, reshape("0.inducing_mean", 5, 4), []string{`"0"`, "0.inducing_mean"}},
		{"inducing_sd missing", mlpSpec, drop("0._inducing_sd"), []string{`"0"`, "0._inducing_sd"}},
		{"lamda shape", mlpSpec, reshape("0._lamda", 2), []string{`"0"`, "0._lamda"}},
		{"full tril shape", mlpSpec, reshape("4._inducing_scale_tril", 20), []string{`"4"`, "4._inducing_scale_tril"}},
		{"ffg sd shape", mlpSpec, reshape("2._weight_sd", 16, 12), []string{`"2"`, "2._weight_sd"}},
		{"ffg bias missing", mlpSpec, drop("2.bias_mean"), []string{`"2"`, "2.bias_mean"}},
		{"ffg prior shape", mlpSpec, reshape("2.prior_weight_sd", 3), []string{`"2"`, "2.prior_weight_sd"}},
		{"deterministic weight shape", faSpec, reshape("2.weight", 8, 7), []string{`"2"`, "2.weight"}},
		{"deterministic bias missing", faSpec, drop("2.bias"), []string{`"2"`, "2.bias"}},
		{"fa psi negative", faSpec, func(_ *runtime.Spec, ts runtime.Tensors) { ts["fa.psi"].Data[4] = -1 }, []string{"fa.psi", "4"}},
		{"fa psi NaN", faSpec, func(_ *runtime.Spec, ts runtime.Tensors) { ts["fa.psi"].Data[0] = float32(math.NaN()) }, []string{"fa.psi"}},
		{"fa factors shape", faSpec, func(s *runtime.Spec, ts runtime.Tensors) {
			ts["fa.factors"] = tensor(make([]float32, s.FA.Dim*2), s.FA.Dim, 2)
		}, []string{"fa.factors"}},
		{"fa dim too small", faSpec, func(s *runtime.Spec, ts runtime.Tensors) {
			s.FA.Dim -= 3
			for _, n := range []string{"fa.mean", "fa.psi"} {
				ts[n] = tensor(ts[n].Data[:s.FA.Dim], s.FA.Dim)
			}
			ts["fa.factors"] = tensor(ts["fa.factors"].Data[:s.FA.Dim*s.FA.Rank], s.FA.Dim, s.FA.Rank)
		}, []string{`"4"`, "fa"}},
		{"fa dim too large", faSpec, func(s *runtime.Spec, ts runtime.Tensors) {
			s.FA.Dim++
			ts["fa.mean"] = tensor(append(ts["fa.mean"].Data, 0), s.FA.Dim)
			ts["fa.psi"] = tensor(append(ts["fa.psi"].Data, 0), s.FA.Dim)
			ts["fa.factors"] = tensor(append(ts["fa.factors"].Data, 0, 0, 0), s.FA.Dim, s.FA.Rank)
		}, []string{"fa", "dim"}},
		{"fa without section", faSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.FA = nil }, []string{`"0"`, "fa"}},
		{"linear in_features", mlpSpec, layer(2, func(l *runtime.LayerSpec) { l.In = 15 }), []string{`"2"`, "15"}},
		{"linear out_features", mlpSpec, layer(2, func(l *runtime.LayerSpec) { l.Out = 0 }), []string{`"2"`}},
		{"unknown op", mlpSpec, layer(1, func(l *runtime.LayerSpec) { l.Op = "softsign" }), []string{`"1"`, "op"}},
		{"unknown kind", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Posterior.Kind = "laplace" }), []string{`"0"`, "laplace"}},
		{"unknown q", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Posterior.QInducing = "banded" }), []string{`"0"`, "banded"}},
		{"inducing rows", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Posterior.InducingRows = 0 }), []string{`"0"`, "inducing_rows"}},
		{"prior sd NaN", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Posterior.PriorSD = math.NaN() }), []string{`"0"`, "prior_sd"}},
		{"prior sd zero", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Posterior.PriorSD = 0 }), []string{`"0"`, "prior_sd"}},
		{"ensemble size", cnnSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[3].Body[0].Posterior.EnsembleSize = 0 }, []string{`"r1a"`, "ensemble_size"}},
		{"ensemble mean shape", cnnSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[3].Body[0].Posterior.EnsembleSize = 2 }, []string{`"r1a"`, "r1a.inducing_mean"}},
		{"posterior on relu", mlpSpec, layer(1, func(l *runtime.LayerSpec) { l.Posterior = ffgPost() }), []string{`"1"`, "posterior"}},
		{"conv on flat input", mlpSpec, layer(0, func(l *runtime.LayerSpec) { l.Op = runtime.OpConv2d }), []string{`"0"`, "conv2d"}},
		{"linear on image", cnnSpec, layer(0, func(l *runtime.LayerSpec) { l.Op = runtime.OpLinear }), []string{`"c1"`, "flatten"}},
		{"conv in_channels", cnnSpec, layer(0, func(l *runtime.LayerSpec) { l.In = 3 }), []string{`"c1"`, "3"}},
		{"conv kernel too big", cnnSpec, layer(0, func(l *runtime.LayerSpec) { l.Kernel = [2]int{20, 3}; l.Padding = [2]int{0, 0} }), []string{`"c1"`}},
		{"conv negative padding", cnnSpec, layer(0, func(l *runtime.LayerSpec) { l.Padding = [2]int{-1, 1} }), []string{`"c1"`}},
		{"conv zero stride", cnnSpec, layer(0, func(l *runtime.LayerSpec) { l.Stride = [2]int{0, 1} }), []string{`"c1"`}},
		{"conv weight shape", cnnSpec, reshape("r1b.weight", 4, 4, 3, 2), []string{`"r1b"`, "r1b.weight"}},
		{"batchnorm features", cnnSpec, layer(1, func(l *runtime.LayerSpec) { l.In = 5 }), []string{`"bn1"`, "5"}},
		{"batchnorm var negative", cnnSpec, func(_ *runtime.Spec, ts runtime.Tensors) { ts["bn1.running_var"].Data[2] = -0.5 }, []string{`"bn1"`, "running_var"}},
		{"batchnorm weight missing", cnnSpec, drop("bn1.weight"), []string{`"bn1"`, "bn1.weight"}},
		{"pool padding", cnnSpec, layer(4, func(l *runtime.LayerSpec) { l.Padding = [2]int{2, 0} }), []string{`"pool1"`, "padding"}},
		{"pool kernel", cnnSpec, layer(4, func(l *runtime.LayerSpec) { l.Kernel = [2]int{0, 2} }), []string{`"pool1"`}},
		{"pool too big", cnnSpec, layer(4, func(l *runtime.LayerSpec) { l.Kernel = [2]int{12, 12} }), []string{`"pool1"`}},
		{"avgpool dilation", cnnSpec, layer(6, func(l *runtime.LayerSpec) { l.Dilation = [2]int{2, 2} }), []string{`"pool2"`, "dilation"}},
		{"adaptive too big", cnnSpec, layer(7, func(l *runtime.LayerSpec) { l.OutputSize = [2]int{4, 4} }), []string{`"gap"`}},
		{"adaptive zero", cnnSpec, layer(7, func(l *runtime.LayerSpec) { l.OutputSize = [2]int{0, 1} }), []string{`"gap"`}},
		{"pool on flat", mlpSpec, layer(1, func(l *runtime.LayerSpec) { l.Op = runtime.OpMaxPool2d; l.Kernel = [2]int{1, 1} }), []string{`"1"`}},
		{"residual shapes", cnnSpec, func(s *runtime.Spec, ts runtime.Tensors) {
			s.Layers[5].Shortcut = nil
		}, []string{`"res2"`}},
		{"residual empty body", cnnSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[3].Body = nil }, []string{`"res1"`, "body"}},
		{"no flatten", cnnSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Layers = s.Layers[:4] }, []string{"flatten"}},
		{"nested too deep", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) {
			l := runtime.LayerSpec{Name: "id", Op: runtime.OpIdentity}
			for i := 0; i < 20; i++ {
				l = runtime.LayerSpec{Name: "r" + strconv.Itoa(i), Op: runtime.OpResidual, Body: []runtime.LayerSpec{l}}
			}
			s.Layers = append(s.Layers, l)
		}, []string{"nested"}},
		{"version", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Version = 9 }, []string{"version"}},
		{"task", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Task = "ranking" }, []string{"ranking"}},
		{"noise var", faSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.NoiseVar = 0 }, []string{"noise_var"}},
		{"noise var inf", faSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.NoiseVar = math.Inf(1) }, []string{"noise_var"}},
		{"noise var subnormal float32", faSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.NoiseVar = 1e-320 }, []string{"noise_var", "normal float32", "1e-320"}},
		{"noise var beyond float32", faSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.NoiseVar = 1e300 }, []string{"noise_var", "1e+300"}},
		{"input shape rank", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.InputShape = []int{2, 4} }, []string{"input_shape"}},
		{"input shape zero", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.InputShape = []int{0} }, []string{"input_shape"}},
		{"input shape huge", cnnSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.InputShape = []int{1 << 20, 1 << 20, 1 << 20} }, []string{"input_shape"}},
		{"no layers", mlpSpec, func(s *runtime.Spec, _ runtime.Tensors) { s.Layers = nil }, []string{"layers"}},
		{"overflowing weight shape", mlpSpec, func(s *runtime.Spec, ts runtime.Tensors) {
			// in_features 2^24, out_features 2^(IntSize−24): the element count wraps to 0, so an
			// empty tensor would pass a plain len(data) == product check.
			s.InputShape = []int{1 << 24}
			s.Layers = []runtime.LayerSpec{{Name: "big", Op: runtime.OpLinear, In: 1 << 24, Out: hugeOut}}
			ts["big.weight"] = runtime.Tensor{Shape: []int{hugeOut, 1 << 24}}
		}, []string{`"big"`}},
		{"overflowing fa layer", faSpec, func(s *runtime.Spec, _ runtime.Tensors) {
			s.InputShape = []int{1 << 24}
			s.Layers = []runtime.LayerSpec{{Name: "big", Op: runtime.OpLinear, In: 1 << 24, Out: hugeOut,
				Posterior: faPosterior()}}
		}, []string{`"big"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.model()
			ts := randomTensors(spec, 2)
			if _, err := runtime.New(spec, ts); err != nil {
				t.Fatalf("unedited model: %v", err)
			}
			c.edit(spec, ts)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("New panicked: %v", r)
					}
				}()
				_, err = runtime.New(spec, ts)
			}()
			testutil.ErrorContains(t, err, c.want...)
			if errors.Is(err, runtime.ErrNoTensor) != strings.Contains(c.name, "missing") {
				t.Errorf("errors.Is(err, ErrNoTensor) = %v for %q", errors.Is(err, runtime.ErrNoTensor), err)
			}
		})
	}
}

// TestParseSpec: ParseSpec round-trips a Spec through JSON and rejects unknown fields and bad JSON.
func TestParseSpec(t *testing.T) {
	for _, tm := range testModels {
		spec := tm.spec()
		randomTensors(spec, 1) // fills the fa dimension
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := runtime.ParseSpec(data)
		if err != nil {
			t.Fatalf("%s: %v", tm.name, err)
		}
		again, _ := json.Marshal(got)
		if string(again) != string(data) {
			t.Errorf("%s: round trip changed the spec:\n%s\n%s", tm.name, data, again)
		}
	}
	for _, bad := range []string{
		`{"version":1,"task":"classification","input_shape":[3],"layers":[{"name":"a","op":"relu"}],"colour":1}`,
		`{"version":1,"task":"classification","input_shape":[3],"layers":[{"name":"a","op":"relu","kernal":[1,1]}]}`,
		`{"version":1,"task":"classification","input_shape":[3],"layers":[]}`,
		`{"version":1,`,
		`[]`,
		``,
	} {
		if _, err := runtime.ParseSpec([]byte(bad)); err == nil {
			t.Errorf("ParseSpec(%s) succeeded", bad)
		}
	}
}

// TestParseSpecHostile: a model description is bounded before it is decoded, strict about what
// follows it, and quotes at most a prefix of a hostile name or value.
func TestParseSpecHostile(t *testing.T) {
	head := `{"version":1,"task":"classification","input_shape":[3],"layers":[`
	relu := `{"name":"a","op":"relu"}`
	t.Run("many empty layers", func(t *testing.T) {
		// 3 MB of "{}," had decoded to 230 MB of LayerSpecs before the layer count was checked.
		bomb := []byte(head + strings.Repeat("{},", 1<<20) + relu + "]}")
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		_, err := runtime.ParseSpec(bomb)
		goruntime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "JSON values") {
			t.Fatalf("ParseSpec = %v, want the size error", err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
			t.Errorf("ParseSpec of a %d-byte description allocated %d bytes", len(bomb), got)
		}
	})
	t.Run("largest valid", func(t *testing.T) {
		// 4096 layers, each writing its geometry arrays, and an info value of 100 000 objects
		// (convert's per-tensor reports of a large ensemble): within the bounds.
		spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{3}}
		for i := range 4096 {
			spec.Layers = append(spec.Layers, runtime.LayerSpec{Name: fmt.Sprint("layer", i), Op: runtime.OpReLU})
		}
		spec.Info = json.RawMessage("[" + strings.Repeat(`{"t":"x","e":1},`, 100000) + "{}]")
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runtime.ParseSpec(data); err != nil {
			t.Fatalf("ParseSpec of a valid %d-byte description: %v", len(data), err)
		}
	})
	long := strings.Repeat("A", 1<<20)
	for _, tc := range []struct{ name, json, want string }{
		{"trailing data", head + relu + "]} {{{", "data after the JSON object"},
		{"trailing brackets", head + relu + "]}]]}}", "data after the JSON object"},
		{"long name", head + `{"name":"` + long + `","op":"relu"}]}`, "longer than 1024 bytes"},
		{"long op", head + `{"name":"a","op":"` + long + `"}]}`, "unknown op"},
		{"long task", `{"version":1,"task":"` + long + `","input_shape":[3],"layers":[` + relu + "]}", "is not classification"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runtime.ParseSpec([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 512 {
				t.Fatalf("ParseSpec = %.300v (%d bytes), want a short error with %q", err, len(fmt.Sprint(err)), tc.want)
			}
		})
	}
}

// TestNonFiniteOutputs: inputs that are finite but so large that the network overflows float32
// give a NonFiniteError naming the first such input (errors.Is ErrNonFinite), never numbers; the
// batch's other predictions stay valid.
func TestNonFiniteOutputs(t *testing.T) {
	cases := []struct {
		name     string
		spec     *runtime.Spec
		strategy runtime.Strategy
		value    float32
	}{
		// |x|² overflows in the local sampler's a = xᵀx.
		{"inducing local 1e20", mlpSpec(), runtime.Local, 1e20},
		{"deterministic ensemble 3e38", ensMLPSpec(runtime.Classification, 2), runtime.Auto, 3e38},
		{"regression 3e38", ensMLPSpec(runtime.Regression, 2), runtime.Auto, 3e38},
		// A linear regression ensemble: outputs near 1e20 are finite float32, the members' spread
		// squared (≈ 1e40) is finite in float64 but not in float32.
		{"regression variance 1e20", &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression,
			InputShape: []int{6}, Members: 2, NoiseVar: 0.05,
			Layers: []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: 6, Out: 2, Bias: true}}}, runtime.Auto, 1e20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m *runtime.Model
			if c.spec.Members > 0 {
				m, _, _ = buildEnsemble(t, c.spec, 3)
			} else {
				m = buildModel(t, c.spec, 3)
			}
			p, err := m.NewPredictor(runtime.Options{Samples: 4, MaxBatch: 2, Strategy: c.strategy})
			if err != nil {
				t.Fatal(err)
			}
			in := m.InputSize()
			xs := make([]float32, 4*in)
			// Inputs 1 and 3 overflow. Of ±3e38, which one reaches the output as ±Inf − ±Inf
			// (NaN) rather than saturating a tanh to ±1 depends on the weights' signs: −3e38
			// does for both 3e38 cases.
			for i := range in {
				xs[in+i] = -c.value
				xs[3*in+i] = -c.value
			}
			out := make([]runtime.Prediction, 4)
			err = p.PredictBatch(xs, out)
			var nf *runtime.NonFiniteError
			if !errors.Is(err, runtime.ErrNonFinite) || !errors.As(err, &nf) {
				t.Fatalf("PredictBatch = %v, want a NonFiniteError", err)
			}
			if nf.Input != 1 || nf.Count != 2 || !strings.Contains(err.Error(), "input 1") {
				t.Errorf("error %q: Input %d Count %d, want input 1 of 2", err, nf.Input, nf.Count)
			}
			for _, i := range []int{0, 2} {
				vals := append(append([]float32(nil), out[i].Probs...), out[i].Mean...)
				if len(vals) == 0 {
					t.Fatalf("input %d: no prediction", i)
				}
				for _, v := range vals {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("input %d (finite, small): non-finite prediction %v", i, vals)
					}
				}
			}
			// One input alone: Predict reports input 0.
			var pr runtime.Prediction
			if err := p.Predict(xs[in:2*in], &pr); !errors.Is(err, runtime.ErrNonFinite) {
				t.Errorf("Predict = %v, want ErrNonFinite", err)
			}
			if err := p.Predict(xs[:in], &pr); err != nil {
				t.Errorf("Predict on a zero input after the error: %v", err)
			}
		})
	}
}

// TestPredictorMemoryLimit: NewPredictor computes the memory it needs before allocating it. Its
// bound is never below what the predictor really holds (ScratchBytes) and never far above it, and
// above Options.MaxMemory — or above the machine's memory, for a tiny model whose input shape
// asks for terabytes of activations — it refuses with ErrMemory, saying how much it would need.
func TestPredictorMemoryLimit(t *testing.T) {
	for _, tm := range testModels {
		for _, opts := range []runtime.Options{
			{Samples: 32, MaxBatch: 1},
			{Samples: 8, MaxBatch: 5, Threads: 3},
			{Samples: 4, MaxBatch: 2, Strategy: runtime.Local},
		} {
			m := buildModel(t, tm.spec(), 1)
			opts.MaxMemory = -1
			p, err := m.NewPredictor(opts)
			if err != nil {
				t.Fatal(err)
			}
			held := p.ScratchBytes()
			p.Close()
			// Within 4× (+64 KiB for the warm-up's small slices) of what is held: it succeeds.
			opts.MaxMemory = 4*held + 64<<10
			if p, err := m.NewPredictor(opts); err != nil {
				t.Errorf("%s %+v: limit 4×%d bytes refused: %v", tm.name, opts, held, err)
			} else {
				p.Close()
			}
			// Below what it holds: refused, naming the need.
			opts.MaxMemory = held / 2
			_, err = m.NewPredictor(opts)
			if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), "bytes") {
				t.Errorf("%s %+v: limit %d (held %d): %v, want ErrMemory", tm.name, opts, opts.MaxMemory, held, err)
			}
		}
	}
	// A conv model of a dozen parameters over a 1×4096×4096 input: 4 channels of 16 Mi values,
	// 256 MiB per input and buffer, asked for in batches of 4096 (a terabyte). The default
	// limit (the machine's memory) refuses it before anything is allocated.
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{1, 4096, 4096},
		Layers: []runtime.LayerSpec{
			{Name: "c", Op: runtime.OpConv2d, In: 1, Out: 4, Bias: true, Kernel: [2]int{1, 1}},
			{Name: "gap", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{1, 1}},
			{Name: "flat", Op: runtime.OpFlatten},
			{Name: "fc", Op: runtime.OpLinear, In: 4, Out: 2, Bias: true},
		}}
	m := buildModel(t, spec, 1)
	_, err := m.NewPredictor(runtime.Options{MaxBatch: 4096})
	if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), "needs") {
		t.Fatalf("huge input: %v, want ErrMemory", err)
	}
	t.Log(err)
	// The kept per-sample outputs count too: 65536 samples × 10 outputs × batch 8 are 20 MiB of
	// Prediction.Outputs, which Predict grows on first use (it had allocated 250 MiB past a
	// 16 MiB limit).
	mlp := buildModel(t, mlpSpec(), 1)
	opts := runtime.Options{Samples: 1 << 16, MaxBatch: 8, KeepSamples: true, MaxMemory: 16 << 20}
	if _, err := mlp.NewPredictor(opts); !errors.Is(err, runtime.ErrMemory) {
		t.Errorf("KeepSamples beyond MaxMemory: %v, want ErrMemory", err)
	}
	opts.KeepSamples = false
	if p, err := mlp.NewPredictor(opts); err != nil {
		t.Errorf("the same without KeepSamples: %v", err)
	} else {
		p.Close()
	}
}

// TestLoadBytesErrors: LoadBytes validates like Load — empty, random and truncated bytes are
// errors, never a panic.
func TestLoadBytesErrors(t *testing.T) {
	good, err := os.ReadFile(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	for name, data := range map[string][]byte{
		"nil": nil, "empty": {}, "junk": junk, "truncated": good[:len(good)/2], "header only": good[:64],
	} {
		if m, err := runtime.LoadBytes(data); err == nil {
			t.Errorf("%s: LoadBytes succeeded (%d layers)", name, len(m.Layers()))
		}
	}
	if _, err := runtime.LoadBytes(good); err != nil {
		t.Fatalf("the demo model: %v", err)
	}
}

// TestLoadRefusesBadValues: a model file's values must be finite, as the converter makes them,
// so that a file it did not write fails at load naming the tensor rather than giving a NaN KL or
// an error blamed on the input.
func TestLoadRefusesBadValues(t *testing.T) {
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		spec := ensMLPSpec(runtime.Classification, 0)
		ts := randomTensors(spec, 1)
		w := ts["3.weight"]
		w.Data = append([]float32(nil), w.Data...)
		w.Data[5] = v
		ts["3.weight"] = w
		_, err := runtime.New(spec, ts)
		if err == nil || !strings.Contains(err.Error(), `tensor "3.weight": element 5`) {
			t.Errorf("value %v: %v, want an error naming the tensor and element", v, err)
		}
	}
}

// TestFFGPriorScale: a stored FFG prior standard deviation must be positive (0 gave a NaN KL,
// which inspect printed and inspect --json failed on naming nothing).
func TestFFGPriorScale(t *testing.T) {
	spec := ffgMLPSpec()
	ts := randomTensors(spec, 1)
	ts["2.prior_weight_sd"] = runtime.Tensor{Shape: []int{10, 128}, Data: make([]float32, 10*128)}
	_, err := runtime.New(spec, ts)
	if err == nil || !strings.Contains(err.Error(), `layer "2"`) || !strings.Contains(err.Error(), `tensor "2.prior_weight_sd": entry 0 is 0`) {
		t.Fatalf("New = %v, want an error naming the layer, tensor and entry", err)
	}
}

// TestInducingDegenerateScales: finite values whose scale underflows — a q(U) sd or λ that is
// softplus(−1000) = 0, a prior_sd below float32's smallest normal — are refused naming the layer
// and tensor: they gave KL = +Inf (inspect --json then failed naming nothing) or all-zero weights.
func TestInducingDegenerateScales(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*runtime.Spec, runtime.Tensors)
		want string
	}{
		{"sd", func(_ *runtime.Spec, ts runtime.Tensors) { ts["0._inducing_sd"].Data[3] = -1000 }, `"0._inducing_sd": entry 3`},
		{"lamda", func(_ *runtime.Spec, ts runtime.Tensors) { ts["0._lamda"].Data[0] = -1000 }, `"0._lamda"`},
		{"prior_sd", func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[0].Posterior.PriorSD = 1e-44 }, "prior_sd 1e-44"},
		// A negative cap made sd = min(softplus(·), −1) = −1: KL NaN, samples sign-flipped.
		{"max_sd_u", func(s *runtime.Spec, _ runtime.Tensors) { v := -1.0; s.Layers[0].Posterior.MaxSDU = &v }, "max_sd_u -1"},
		{"max_lamda", func(s *runtime.Spec, _ runtime.Tensors) { v := math.Inf(1); s.Layers[0].Posterior.MaxLamda = &v }, "max_lamda +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := mlpSpec()
			ts := randomTensors(spec, 1)
			for k, v := range ts {
				v.Data = append([]float32(nil), v.Data...)
				ts[k] = v
			}
			tc.edit(spec, ts)
			_, err := runtime.New(spec, ts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `layer "0"`) {
				t.Fatalf("New = %v, want an error naming layer 0 and %q", err, tc.want)
			}
		})
	}
}

// TestBatchNormEps: a negative eps (1/√(var + eps) NaN for small variances) is refused naming the
// layer, as is a running variance so small against eps that the scale overflows float32.
func TestBatchNormEps(t *testing.T) {
	spec := ensMLPSpec(runtime.Classification, 0)
	spec.Layers[5].Eps = -1
	if _, err := runtime.New(spec, randomTensors(spec, 1)); err == nil || !strings.Contains(err.Error(), `layer "5" (batchnorm): eps -1`) {
		t.Errorf("eps -1: %v", err)
	}
	spec = ensMLPSpec(runtime.Classification, 0)
	spec.Layers[5].Eps = 1e-300
	ts := randomTensors(spec, 1)
	v := ts["5.running_var"]
	v.Data = make([]float32, len(v.Data)) // all 0: 1/√1e-300 = 1e150
	ts["5.running_var"] = v
	if _, err := runtime.New(spec, ts); err == nil || !strings.Contains(err.Error(), "is not a finite float32") {
		t.Errorf("scale 1e150: %v", err)
	}
}

// TestPredictAfterClose: a prediction from a closed Predictor (whose workers are gone: a send on
// a closed channel had panicked) or from a closed Model (whose mapped file is gone: SIGSEGV) is
// ErrClosed.
func TestPredictAfterClose(t *testing.T) {
	spec := mlpSpec()
	m := newModel(t, spec, randomTensors(spec, 1))
	x := make([]float32, m.InputSize())
	var out runtime.Prediction
	p, err := m.NewPredictor(runtime.Options{Samples: 4, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Predict(x, &out); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.Predict(x, &out); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Predict after Close = %v, want ErrClosed", err)
	}
	q, err := m.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// A copy with deployment sections shares the model's file, and so its closing.
	_, dq := deployedCopy(t, m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Predict(x, &out); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Predict after Model.Close = %v, want ErrClosed", err)
	}
	if err := dq.Predict(x, &out); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Predict of WithDeployment's copy after Model.Close = %v, want ErrClosed", err)
	}
	if _, err := m.NewPredictor(runtime.Options{Samples: 4}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("NewPredictor after Model.Close = %v, want ErrClosed", err)
	}
}

// deployedCopy returns m.WithDeployment(nil, nil) — a copy that shares m's file — and a
// Predictor (4 samples) of the copy.
func deployedCopy(t *testing.T, m *runtime.Model) (*runtime.Model, *runtime.Predictor) {
	t.Helper()
	d, err := m.WithDeployment(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatal(err)
	}
	return d, p
}

// TestCloseWhilePredicting: closing a model loaded from a file (memory-mapped) while other
// goroutines predict with it waits for the predictions in flight — it had unmapped the file under
// the GEMM (SIGSEGV) — and later calls are ErrClosed; Close may be called from several goroutines
// at once (-race); the weight accessors are ErrClosed after it (they had read the unmapped file);
// and closing a WithDeployment copy closes only the copy.
func TestCloseWhilePredicting(t *testing.T) {
	spec := mlpSpec()
	path := writeModelFile(t, spec, runtime.MemorySource{Tensors: randomTensors(spec, 1)}, nil)
	for round := range 20 {
		m, err := runtime.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 2)
		for g := range 2 {
			p, err := m.NewPredictor(runtime.Options{Samples: 16, Seed: uint64(g)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				x := make([]float32, m.InputSize())
				var out runtime.Prediction
				for i := 0; ; i++ {
					err := p.Predict(x, &out)
					if i == 0 {
						started <- struct{}{}
					}
					if errors.Is(err, runtime.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("round %d: Predict: %v", round, err)
						return
					}
				}
			})
		}
		<-started
		<-started
		for range 2 { // two Closes at once
			wg.Go(func() {
				if err := m.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
		if _, _, _, err := m.MeanWeight(spec.Layers[0].Name); !errors.Is(err, runtime.ErrClosed) {
			t.Fatalf("MeanWeight after Close = %v, want ErrClosed", err)
		}
		if _, _, _, err := m.MemberWeight(spec.Layers[0].Name, 0); !errors.Is(err, runtime.ErrClosed) {
			t.Fatalf("MemberWeight after Close = %v, want ErrClosed", err)
		}
		if _, err := m.Posterior(1 << 14); !errors.Is(err, runtime.ErrClosed) {
			t.Fatalf("Posterior after Close = %v, want ErrClosed", err)
		}
	}

	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, dp := deployedCopy(t, m)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, m.InputSize())
	var out runtime.Prediction
	if err := dp.Predict(x, &out); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("the closed copy's Predict = %v, want ErrClosed", err)
	}
	p, err := m.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatalf("NewPredictor of the model after its copy's Close: %v", err)
	}
	if err := p.Predict(x, &out); err != nil {
		t.Fatalf("Predict of the model after its copy's Close: %v", err)
	}
}

// TestPredictionReuseAcrossTasks: Predict into a nil *Prediction is an error, not a panic; and a
// Prediction a classifier filled, reused for a regression model, keeps none of the classifier's
// summaries (its class, confidence and entropies had stayed).
func TestPredictionReuseAcrossTasks(t *testing.T) {
	cls, reg := buildModel(t, mlpSpec(), 1), buildModel(t, faSpec(), 1)
	pc, err := cls.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := reg.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Predict(make([]float32, cls.InputSize()), nil); err == nil {
		t.Error("Predict into a nil *Prediction: no error")
	}
	var out runtime.Prediction
	if err := pc.Predict(make([]float32, cls.InputSize()), &out); err != nil {
		t.Fatal(err)
	}
	if !(out.Confidence > 0) || !(out.Entropy > 0) {
		t.Fatalf("classifier: confidence %v entropy %v", out.Confidence, out.Entropy)
	}
	if err := pr.Predict(make([]float32, reg.InputSize()), &out); err != nil {
		t.Fatal(err)
	}
	if out.Class != 0 || out.Confidence != 0 || out.Entropy != 0 || out.ExpectedEntropy != 0 || out.MutualInfo != 0 || len(out.Probs) != 0 {
		t.Errorf("regression into a classifier's Prediction kept class %d confidence %v entropies %v %v %v probs %v",
			out.Class, out.Confidence, out.Entropy, out.ExpectedEntropy, out.MutualInfo, out.Probs)
	}
}

// TestPredictionClone: a Clone keeps a prediction's values when the Prediction is written again
// (a plain copy shares its slices with the next prediction).
func TestPredictionClone(t *testing.T) {
	m := buildModel(t, mlpSpec(), 1)
	p, err := m.NewPredictor(runtime.Options{Samples: 4, KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	var out runtime.Prediction
	x := make([]float32, m.InputSize())
	if err := p.Predict(x, &out); err != nil {
		t.Fatal(err)
	}
	kept := out.Clone()
	want := append([]float32(nil), out.Probs...)
	for i := range x {
		x[i] = 3
	}
	if err := p.Predict(x, &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.Probs, want) || &kept.Probs[0] == &out.Probs[0] || &kept.Outputs[0] == &out.Outputs[0] {
		t.Errorf("the clone changed with the next prediction: %v, want %v", kept.Probs, want)
	}
}

// TestStrategyTextAndOptionsPolicy: a Strategy is a text value (flag.TextVar, JSON) both ways;
// Predictor.Options names the policy in effect (a copy); Decide of nil acts on nothing.
func TestStrategyTextAndOptionsPolicy(t *testing.T) {
	for _, s := range []runtime.Strategy{runtime.Auto, runtime.Weight, runtime.Local} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back runtime.Strategy
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("%v: %q back to %v (%v)", s, b, back, err)
		}
	}
	if _, err := runtime.Strategy(7).MarshalText(); err == nil {
		t.Error("Strategy(7) marshalled")
	}
	var s runtime.Strategy
	if err := s.UnmarshalText([]byte("fast")); err == nil {
		t.Error(`"fast" unmarshalled`)
	}
	m := buildModel(t, mlpSpec(), 1)
	conf := 0.9
	pol := &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: &conf}
	p, err := m.NewPredictor(runtime.Options{Samples: 4, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Options().Policy
	if got == nil || got.MinConfidence == nil || *got.MinConfidence != 0.9 {
		t.Fatalf("Options().Policy = %+v, want the policy given", got)
	}
	*got.MinConfidence = 0 // a copy: the predictor's stays
	if *p.Options().Policy.MinConfidence != 0.9 {
		t.Error("editing Options().Policy changed the predictor's policy")
	}
	if d := pol.Decide(nil); d.Act {
		t.Error("Decide(nil) acts")
	}
}

// TestWithDeploymentDuringClose: WithDeployment and Close of the same Model from two goroutines
// are free of data races (-race; Close had cleared a field WithDeployment copies).
func TestWithDeploymentDuringClose(t *testing.T) {
	spec := mlpSpec()
	path := writeModelFile(t, spec, runtime.MemorySource{Tensors: randomTensors(spec, 1)}, nil)
	for range 20 {
		m, err := runtime.Load(path) // closer != nil: Close writes the field
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; m.Close() })
		wg.Go(func() {
			<-start
			if d, err := m.WithDeployment(nil, nil); err == nil {
				d.Close()
			}
		})
		close(start)
		wg.Wait()
	}
}

// TestSecondCloseWaits: a second Close, from another goroutine, returns only once the first has
// released the file — after the prediction in flight — so that a caller may then release what
// the model reads (a FromFile model's file): it had returned at once.
func TestSecondCloseWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("one prediction of 16384 samples of a CNN")
	}
	spec := cnnSpec()
	path := writeModelFile(t, spec, runtime.MemorySource{Tensors: randomTensors(spec, 1)}, nil)
	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// One prediction of ~200 ms (several seconds under -race).
	p, err := m.NewPredictor(runtime.Options{Samples: 1 << 14, Strategy: runtime.Weight})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, m.InputSize())
	predicting, predicted := make(chan struct{}), make(chan error, 1)
	go func() {
		var out runtime.Prediction
		close(predicting)
		predicted <- p.Predict(x, &out)
	}()
	<-predicting
	time.Sleep(20 * time.Millisecond) // inside PredictBatch, holding the read lock
	firstStarted, firstDone := make(chan struct{}), make(chan struct{})
	go func() {
		close(firstStarted)
		m.Close() // waits for the prediction
		close(firstDone)
	}()
	<-firstStarted
	time.Sleep(10 * time.Millisecond)
	m.Close() // the second Close
	select {
	case <-firstDone:
	default:
		select {
		case <-predicted:
			t.Fatal("the prediction ended too early for the test to show anything; use more samples")
		default:
		}
		t.Errorf("the second Close returned while a prediction was still reading the file and the first Close had not released it")
	}
	<-firstDone
	if err := <-predicted; err != nil {
		t.Fatal(err)
	}
}

// TestWithDeploymentOfClosedCopy: WithDeployment of a closed Model — an owner or a copy — is
// ErrClosed (a closed copy had made a new, open one).
func TestWithDeploymentOfClosedCopy(t *testing.T) {
	spec := mlpSpec()
	m, err := runtime.New(spec, runtime.MemorySource{Tensors: randomTensors(spec, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := m.WithDeployment(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := d.NewPredictor(runtime.Options{Samples: 2}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("closed copy: NewPredictor = %v, want ErrClosed", err)
	}
	if _, err := d.WithDeployment(nil, nil); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("WithDeployment of a closed copy = %v, want ErrClosed", err)
	}
}

// TestPolicyStrategyAndSeed: a policy's recorded strategy is the default (Auto) of its model's
// predictions and its seed the one Options.PolicySeed takes; Validate refuses another strategy
// name (auto included: its samples depend on the batch).
func TestPolicyStrategyAndSeed(t *testing.T) {
	m := buildModel(t, mlpSpec(), 1)
	seed := uint64(5)
	conf := 0.5
	pol := &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: &conf, Strategy: "weight", Seed: &seed}
	d, err := m.WithDeployment(nil, pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts     runtime.Options
		strategy runtime.Strategy
		seed     uint64
	}{
		{runtime.Options{Samples: 2}, runtime.Weight, 0},
		{runtime.Options{Samples: 2, PolicySeed: true}, runtime.Weight, 5},
		{runtime.Options{Samples: 2, Seed: 9, Strategy: runtime.Local}, runtime.Local, 9},
		// The mean network samples nothing: the strategy stays Auto (Local would compute every
		// layer's variance for nothing, twice the forward's cost).
		{runtime.Options{Mean: true}, runtime.Auto, 0},
	} {
		p, err := d.NewPredictor(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		// Options reports the seed predictions use, PolicySeed resolved.
		if o := p.Options(); o.Strategy != tc.strategy || o.Seed != tc.seed || o.PolicySeed {
			t.Errorf("%+v: strategy %v seed %d policy seed %v, want %v, %d, false", tc.opts, o.Strategy, o.Seed, o.PolicySeed, tc.strategy, tc.seed)
		}
	}
	for _, bad := range []string{"auto", "fast"} {
		p := *pol
		p.Strategy = bad
		if err := p.Validate(runtime.Classification); err == nil {
			t.Errorf("strategy %q validated", bad)
		}
	}
}

// TestPolicyDifferences: what a predictor's options draw differently from the policy's fit.
func TestPolicyDifferences(t *testing.T) {
	seed := uint64(42)
	p := &runtime.Policy{Version: runtime.DeployVersion, Samples: 256, Strategy: "local", Seed: &seed}
	for _, tc := range []struct {
		o    runtime.Options
		want []string
	}{
		{runtime.Options{Samples: 256, Strategy: runtime.Local, Seed: 42}, nil},
		{runtime.Options{Samples: 32, Strategy: runtime.Weight, Seed: 1}, []string{"32 samples, not 256", "strategy weight, not local", "seed 1, not 42"}},
		{runtime.Options{Mean: true, Samples: 1}, nil},
	} {
		if got := p.Differences(tc.o); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
	if d := (*runtime.Policy)(nil).Differences(runtime.Options{Samples: 3}); d != nil {
		t.Errorf("nil policy: %q", d)
	}
}
