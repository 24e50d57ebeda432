package convert

import (
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// TestInspectNonzeroParameters: Inspect's parameters are what is stored (every entry of a dense
// Z, as bayesianize and plan count), its nonzero_parameters those not exactly zero. The fixture
// converted as it is has as many nonzero values as the checkpoint's parameters (counted here from
// the safetensors file); with 7 entries of 1.z_col and 3 of 3.z_row set to zero in the checkpoint,
// the stored count is unchanged and the nonzero count falls by 10, in those layers.
func TestInspectNonzeroParameters(t *testing.T) {
	d := filepath.Join(fixtureDir, "mlp_ffgu")
	f := fixtureFile(t, "mlp_ffgu", "state_dict")
	nonzero := func(ts []safetensors.Tensor) (n int64) {
		for _, tt := range ts {
			v, err := tt.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range v {
				if x != 0 {
					n++
				}
			}
		}
		return n
	}
	dir := t.TempDir()
	inspect := func(ckpt, name string) *Inspection {
		o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, name))
		o.Checkpoint = ckpt
		if _, err := Convert(o); err != nil {
			t.Fatal(err)
		}
		in, err := Inspect(o.Out, true)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	base := inspect(filepath.Join(d, "state_dict.safetensors"), "base.ebnn")
	if want := nonzero(f.Tensors); base.NonzeroParameters != want || base.Parameters != want {
		t.Fatalf("fixture: %d parameters, %d nonzero; want %d and %d (the checkpoint's values)", base.Parameters, base.NonzeroParameters, want, want)
	}
	zeroed := map[string]int{"1.z_col": 7, "3.z_row": 3}
	ts := append([]safetensors.Tensor(nil), f.Tensors...)
	for i, tt := range ts {
		k, ok := zeroed[tt.Name]
		if !ok {
			continue
		}
		v, err := tt.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		v = append([]float32(nil), v...)
		for j := 0; j < k; j++ {
			v[5*j+1] = 0
		}
		if ts[i], err = safetensors.NewF32(tt.Name, tt.Shape, v); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "zeroed.safetensors")
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	z := inspect(p, "zeroed.ebnn")
	if z.Parameters != base.Parameters || z.NonzeroParameters != base.NonzeroParameters-10 {
		t.Errorf("zeroed: %d parameters, %d nonzero; want %d and %d", z.Parameters, z.NonzeroParameters, base.Parameters, base.NonzeroParameters-10)
	}
	for i, l := range z.Layers {
		want := base.Layers[i].Nonzero - int64(map[string]int{"1": 7, "3": 3}[l.Name])
		if l.Parameters != base.Layers[i].Parameters || l.Nonzero != want {
			t.Errorf("layer %s: %d parameters, %d nonzero; want %d and %d", l.Name, l.Parameters, l.Nonzero, base.Layers[i].Parameters, want)
		}
	}
}
