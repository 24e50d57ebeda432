package convert

import (
	"testing"

	"github.com/edgebnn/edgebnn/convert/statedict"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestGlobalFromStateDict: the global inducing posterior of a bayesianize state_dict is read
// from its _global_inducing_module tensors (size, q(G) family) and the given keyword arguments;
// a state_dict without them is left alone, and malformed ones are errors naming the tensors.
func TestGlobalFromStateDict(t *testing.T) {
	spec := func() *runtime.Spec {
		p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 3, PriorSD: 0.5,
			QInducing: runtime.QDiagonal, WhitenedU: true}
		q := *p
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{4},
			Layers: []runtime.LayerSpec{
				{Name: "0", Op: runtime.OpLinear, In: 4, Out: 5, Bias: true, Posterior: p},
				{Name: "1", Op: runtime.OpReLU},
				{Name: "2", Op: runtime.OpLinear, In: 5, Out: 3, Posterior: &q}}}
	}
	tensors := func(names map[string][]int) map[string]*statedict.Tensor {
		out := map[string]*statedict.Tensor{}
		for n, s := range names {
			out[runtime.GlobalUName+"."+n] = &statedict.Tensor{Name: runtime.GlobalUName + "." + n, Shape: s}
		}
		return out
	}
	base := map[string][]int{"z_row": {4, 4}, "z_col": {2, 3}, "inducing_mean": {4, 2}, "_inducing_sd": {4, 2}}
	yes, ml := true, 0.25
	tests := []struct {
		name   string
		tens   map[string][]int
		args   *GlobalInducingArgs
		want   runtime.PosteriorSpec
		global bool
		err    string
	}{
		{"none", nil, nil, runtime.PosteriorSpec{}, false, ""},
		{"diagonal", base, nil, runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 4, InducingCols: 2, PriorSD: 1,
			QInducing: runtime.QDiagonal, WhitenedU: true}, true, ""},
		{"ensemble with args", map[string][]int{"z_row": {4, 4}, "z_col": {2, 3}, "inducing_mean": {5, 4, 2}},
			&GlobalInducingArgs{WhitenedU: &yes, MaxLamda: &ml},
			runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 4, InducingCols: 2, PriorSD: 1,
				QInducing: runtime.QEnsemble, EnsembleSize: 5, WhitenedU: true, MaxLamda: &ml}, true, ""},
		{"args without tensors", nil, &GlobalInducingArgs{}, runtime.PosteriorSpec{}, false, "global inducing arguments given"},
		{"no z_col", map[string][]int{"z_row": {4, 4}, "inducing_mean": {4, 2}, "_inducing_sd": {4, 2}}, nil,
			runtime.PosteriorSpec{}, false, "_global_inducing_module.z_col"},
		{"no scale", map[string][]int{"z_row": {4, 4}, "z_col": {2, 3}, "inducing_mean": {4, 2}}, nil,
			runtime.PosteriorSpec{}, false, "no q(G) scale tensor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			err := globalFromStateDict(s, tensors(tc.tens), tc.args)
			if testutil.WantError(t, err, tc.err) {
				return
			}
			if !tc.global {
				if s.GlobalU != nil || s.Layers[0].Posterior.QInducing != runtime.QDiagonal {
					t.Fatal("spec changed without global tensors")
				}
				return
			}
			g := *s.GlobalU
			if g.InducingRows != tc.want.InducingRows || g.InducingCols != tc.want.InducingCols || g.QInducing != tc.want.QInducing ||
				g.EnsembleSize != tc.want.EnsembleSize || g.WhitenedU != tc.want.WhitenedU || g.PriorSD != 1 ||
				(g.MaxLamda == nil) != (tc.want.MaxLamda == nil) {
				t.Fatalf("global posterior %+v, want %+v", g, tc.want)
			}
			for _, i := range []int{0, 2} {
				if q := s.Layers[i].Posterior.QInducing; q != runtime.QGlobal {
					t.Errorf("layer %d: q_inducing %q, want global", i, q)
				}
			}
		})
	}
}
