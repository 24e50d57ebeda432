package runtime_test

import (
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestLoadBudgetMembers: building a mixture's members one by one with one LoadBudget charges
// them what New charges the mixture — the member that takes it over a limit is the first whose
// New fails, and the mixture of the members before it loads within the same limits — and
// NewLoadBudget never raises a limit above the runtime's.
func TestLoadBudgetMembers(t *testing.T) {
	_, ts := bernsteinModel(t, 1, 3, 2, 4, 33) // 2 × 4 weights (bias included) × 33 points
	const tableBytes, work = 2 * 4 * 33 * 4, 2 * 4 * 33 * 5
	single := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{3},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: 4, TableSize: 33}}}}
	mixture := func(m int) (*runtime.Spec, runtime.Tensors) {
		spec := single.Clone()
		spec.Members = m
		all := runtime.Tensors{}
		for k := range m {
			for name, tn := range ts {
				all[runtime.MemberPrefix(k)+name] = tn
			}
		}
		return &spec, all
	}
	for _, c := range []struct {
		name   string
		limits runtime.LoadLimits
		want   string
	}{
		{"tables", runtime.LoadLimits{BernsteinTableBytes: 3*tableBytes - 1}, "the quantile table"},
		{"work", runtime.LoadLimits{BernsteinWork: 3*work - 1}, "flow-term evaluations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := runtime.NewLoadBudget(c.limits)
			for k := range 3 {
				_, err := b.New(single, ts)
				if k < 2 {
					if err != nil {
						t.Fatalf("member %d: %v", k, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("member 2: %v, want an error saying %q", err, c.want)
				}
			}
			if u := b.Used(); u.BernsteinTableBytes != 2*tableBytes || u.BernsteinWork != 2*work {
				t.Errorf("used %+v, want the 2 members' %d bytes and %d evaluations", u, 2*tableBytes, 2*work)
			}
			for m, ok := range map[int]bool{2: true, 3: false} {
				spec, all := mixture(m)
				if _, err := runtime.NewLoadBudget(c.limits).New(spec, all); (err == nil) != ok {
					t.Errorf("a mixture of %d members: %v", m, err)
				}
			}
		})
	}
	if got, want := runtime.NewLoadBudget(runtime.LoadLimits{BernsteinWork: 1 << 62, InducingBytes: -1}).Limits(), runtime.DefaultLoadLimits(); got != want {
		t.Errorf("limits %+v, want the runtime's %+v", got, want)
	}
}
