package runtime_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// The tensor schema (runtime.LayerTensors and friends) against the loaders: for every posterior
// kind, a model made of exactly the declared tensors loads and reads every one of them; leaving
// out a required one, or giving it another shape, is an error naming it; an optional one may be
// left out.

// schemaCases are one small network per posterior kind and layer type.
func schemaCases() []struct {
	name string
	spec *runtime.Spec
} {
	lin := func(name string, in, out int, bias bool, p *runtime.PosteriorSpec) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpLinear, In: in, Out: out, Bias: bias, Posterior: p}
	}
	mlp := func(p *runtime.PosteriorSpec) *runtime.Spec {
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{4},
			Layers: []runtime.LayerSpec{lin("fc1", 4, 3, true, p), {Name: "r", Op: runtime.OpReLU}, lin("fc2", 3, 2, false, p)}}
	}
	ind := func(q string, ens int) *runtime.PosteriorSpec {
		return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 3, PriorSD: 1,
			QInducing: q, EnsembleSize: ens, WhitenedU: q == runtime.QEnsemble}
	}
	cnn := func(p *runtime.PosteriorSpec) *runtime.Spec {
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 5, 5},
			Layers: []runtime.LayerSpec{
				{Name: "conv", Op: runtime.OpConv2d, In: 2, Out: 3, Kernel: [2]int{3, 3}, Bias: true, Posterior: p},
				{Name: "bn", Op: runtime.OpBatchNorm, In: 3, Affine: true},
				{Name: "bn2", Op: runtime.OpBatchNorm, In: 3},
				{Name: "f", Op: runtime.OpFlatten},
				lin("fc", 27, 2, true, nil)}}
	}
	fa := mlp(&runtime.PosteriorSpec{Kind: runtime.KindFA})
	fa.FA = &runtime.FASpec{Dim: 3*5 + 2*3, Rank: 2}
	return []struct {
		name string
		spec *runtime.Spec
	}{
		{"deterministic", mlp(nil)},
		{"ffg", mlp(&runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1})},
		{"fcg", mlp(&runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 1})},
		{"bernstein", mlp(&runtime.PosteriorSpec{Kind: runtime.KindBernstein, PriorSD: 1, Degree: 4, TableSize: 16})},
		{"inducing diagonal", mlp(ind(runtime.QDiagonal, 0))},
		{"inducing full", mlp(ind(runtime.QFull, 0))},
		{"inducing matrix", mlp(ind(runtime.QMatrix, 0))},
		{"inducing ensemble", mlp(ind(runtime.QEnsemble, 3))},
		{"fa", fa},
		{"conv ffg, batchnorm", cnn(&runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1})},
		{"conv deterministic", cnn(nil)},
		{"global U", globalTwoLayer(globalCase{q: runtime.QDiagonal, whitened: true})},
	}
}

// declared lists spec's tensors as the schema declares them: name → declaration, layer by layer.
func declared(spec *runtime.Spec) map[string]runtime.TensorDecl {
	out := map[string]runtime.TensorDecl{}
	add := func(layer string, ds []runtime.TensorDecl) {
		for _, d := range ds {
			out[layer+"."+d.Name] = d
		}
	}
	if spec.FA != nil {
		add(runtime.FALayer, runtime.FATensors(spec.FA))
	}
	add(runtime.GlobalUName, runtime.GlobalUTensors(spec))
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) { add(l.Name, runtime.LayerTensors(l)) })
	return out
}

// schemaTensors makes valid values for every declared tensor that is not dropped.
func schemaTensors(spec *runtime.Spec, decls map[string]runtime.TensorDecl) runtime.Tensors {
	r := rand.New(rand.NewPCG(3, 5))
	ts := runtime.Tensors{}
	for name, d := range decls {
		if d.Role == runtime.TensorDropped {
			continue
		}
		n := 1
		for _, v := range d.Shape {
			n *= v
		}
		v := randn(r, n, 0.3)
		switch {
		case d.Name == "bf_weight" || d.Name == "bf_bias":
			m := d.Shape[len(d.Shape)-1] - 5
			v = v[:0]
			for len(v) < n {
				v = append(v, randomFlowParams(r, m)...)
			}
		case d.Name == "running_var" || d.Name == "psi" || strings.HasPrefix(d.Name, "prior_") && strings.HasSuffix(d.Name, "_sd"):
			for i := range v {
				v[i] = float32(math.Abs(float64(v[i]))) + 0.5
			}
		}
		ts[name] = runtime.Tensor{Shape: append([]int{}, d.Shape...), Data: v}
	}
	return ts
}

func TestSchemaLoaders(t *testing.T) {
	for _, c := range schemaCases() {
		t.Run(c.name, func(t *testing.T) {
			decls := declared(c.spec)
			ts := schemaTensors(c.spec, decls)
			m, err := runtime.New(c.spec, ts)
			if err != nil {
				t.Fatalf("the declared tensors do not load: %v", err)
			}
			want := slices.Sorted(func(yield func(string) bool) {
				for name := range ts {
					if !yield(name) {
						return
					}
				}
			})
			if got := m.TensorsUsed(); !slices.Equal(got, want) {
				t.Fatalf("the loader read %v; the schema declares %v", got, want)
			}
			for name, d := range decls {
				if d.Role == runtime.TensorDropped {
					continue
				}
				// Left out.
				rest := runtime.Tensors{}
				for k, v := range ts {
					if k != name {
						rest[k] = v
					}
				}
				_, err := runtime.New(c.spec, rest)
				if d.Role == runtime.TensorOptional {
					if err != nil {
						t.Errorf("without the optional %s: %v", name, err)
					}
					continue
				}
				if err == nil || !errors.Is(err, runtime.ErrNoTensor) || !strings.Contains(err.Error(), name) {
					t.Errorf("without %s: error %v, want ErrNoTensor naming it", name, err)
				}
				// Another shape.
				bad := runtime.Tensors{}
				for k, v := range ts {
					bad[k] = v
				}
				bad[name] = runtime.Tensor{Shape: []int{len(ts[name].Data) + 1}, Data: make([]float32, len(ts[name].Data)+1)}
				if _, err := runtime.New(c.spec, bad); err == nil || !strings.Contains(err.Error(), name) {
					t.Errorf("%s with shape %v: error %v, want one naming it", name, bad[name].Shape, err)
				}
			}
		})
	}
}

// TestSchemaDeclarations pins the declaration of a few kinds to bayesianize's state_dict names
// and shapes (written out here, not taken from the code).
func TestSchemaDeclarations(t *testing.T) {
	type nd struct {
		name  string
		shape []int
		role  runtime.TensorRole
	}
	P, O, B, D := runtime.TensorParam, runtime.TensorOptional, runtime.TensorBuffer, runtime.TensorDropped
	for _, c := range []struct {
		what string
		l    runtime.LayerSpec
		want []nd
	}{
		{"ffg conv", runtime.LayerSpec{Op: runtime.OpConv2d, In: 2, Out: 4, Kernel: [2]int{3, 1}, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG}},
			[]nd{{"weight_mean", []int{4, 2, 3, 1}, P}, {"_weight_sd", []int{4, 2, 3, 1}, P}, {"bias_mean", []int{4}, P},
				{"_bias_sd", []int{4}, P}, {"prior_weight_mean", []int{4, 2, 3, 1}, O}, {"prior_weight_sd", []int{4, 2, 3, 1}, O},
				{"prior_bias_mean", []int{4}, O}, {"prior_bias_sd", []int{4}, O}}},
		{"inducing matrix linear", runtime.LayerSpec{Op: runtime.OpLinear, In: 5, Out: 7, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 3, InducingCols: 4, QInducing: runtime.QMatrix}},
			[]nd{{"z_row", []int{3, 7}, P}, {"z_col", []int{4, 6}, P}, {"_d_row", []int{3}, P}, {"_d_col", []int{4}, P},
				{"_lamda", []int{}, P}, {"inducing_mean", []int{3, 4}, P}, {"_inducing_row_scale_tril", []int{6}, P},
				{"_inducing_col_scale_tril", []int{10}, P}}},
		{"fcg", runtime.LayerSpec{Op: runtime.OpLinear, In: 2, Out: 3, Bias: true, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFCG}},
			[]nd{{"mean", []int{9}, P}, {"_scale_diag", []int{9}, P}, {"_scale_tril", []int{9, 9}, P},
				{"prior_mean", []int{9}, D}, {"prior_scale_tril", []int{9, 9}, D}}},
		{"batchnorm", runtime.LayerSpec{Op: runtime.OpBatchNorm, In: 6, Affine: true},
			[]nd{{"weight", []int{6}, P}, {"bias", []int{6}, P}, {"running_mean", []int{6}, B}, {"running_var", []int{6}, B},
				{"num_batches_tracked", []int{}, D}}},
		{"relu", runtime.LayerSpec{Op: runtime.OpReLU}, nil},
	} {
		var got []nd
		for _, d := range runtime.LayerTensors(&c.l) {
			got = append(got, nd{d.Name, d.Shape, d.Role})
		}
		if !slices.EqualFunc(got, c.want, func(a, b nd) bool {
			return a.name == b.name && slices.Equal(a.shape, b.shape) && a.role == b.role
		}) {
			t.Errorf("%s: declared %v, want %v", c.what, got, c.want)
		}
	}
	pruned := runtime.LayerSpec{Op: runtime.OpLinear, In: 2, Out: 3, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, Pruned: true}}
	for _, d := range runtime.LayerTensors(&pruned) {
		if kept := strings.HasSuffix(d.Name, "_kept"); d.Kept != kept || (kept && d.Shape != nil) {
			t.Errorf("pruned ffg: %+v", d)
		}
	}
}
