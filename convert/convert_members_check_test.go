package convert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// bernsteinMember writes a Bernstein-flow regression model, Linear(3 → 2, bias) of degree m and
// a table of 33 points (2 × 4 weights: quantile tables of 1056 bytes, 1320·(m+1)/5 flow-term
// evaluations), with the same valid flow for every weight.
func bernsteinMember(t *testing.T, path string, m int) {
	t.Helper()
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{3},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, TableSize: 33}}}}
	flow := flowRaw(0.5, 0.1, -0.2, repeat(-1, m), 0.4, 0.1)
	w := format.NewWriter()
	for _, tn := range []struct {
		name  string
		shape []int
		n     int
	}{{"fc.bf_weight", []int{2, 3, m + 5}, 6}, {"fc.bf_bias", []int{2, m + 5}, 2}} {
		var v []float32
		for range tn.n {
			v = append(v, flow...)
		}
		if _, err := w.AddTensor(tn.name, tn.shape, v, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.AddSpec(t, w, spec)
	modeltest.Save(t, w, path)
}

// TestConvertMembersChecked: each member is checked as it is read — alone (its tensors against
// its spec, and the runtime model they make), against member 0's architecture, and, added to the
// members before it, against the runtime's load limits (runtime.LoadBudget) — and the first one
// that fails is named, with the tensor, the first differing spec field or the limit, before the
// members after it are read (the last member of each case does not exist) and without writing
// the output. These errors used to come once every member was read, from the combined model,
// naming only member 0's file: the tensor "member2/0.weight", or "the checkpoint does not make a
// valid model: runtime: mixture member 2: …", or for an architecture "another architecture or
// posterior" without saying where.
func TestConvertMembersChecked(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	bernsteinMember(t, p("b0.ebnn"), 4)
	perturbedCopy(t, p("b0.ebnn"), p("b1.ebnn"), 0.05, nil)
	perturbedCopy(t, p("b0.ebnn"), p("b2.ebnn"), 0.1, nil)
	bernsteinMember(t, p("degree5.ebnn"), 5)
	// A flow scale softplus(−1000) underflows to zero: the file reads, the runtime refuses it.
	modeltest.Rewrite(t, p("b0.ebnn"), p("flat.ebnn"), "fc.bf_weight", func(v []float32, shape []int) ([]float32, []int) {
		v = slices.Clone(v)
		v[0] = -1000
		return v, shape
	}, nil)
	deepModel(t, p("small.ebnn"), 2, nil)
	modeltest.Rewrite(t, p("small.ebnn"), p("reshaped.ebnn"), "0.weight", func(v []float32, _ []int) ([]float32, []int) {
		return v, []int{4}
	}, nil)
	deepModel(t, p("junk.ebnn"), 2, map[string][]float32{"junk": {1, 2}})
	const tables, work = 2 * 4 * 33 * 4, 2 * 4 * 33 * 5 // a Bernstein member's
	missing := p("missing.ebnn")
	for _, c := range []struct {
		name    string
		first   string
		members []string
		limits  runtime.LoadLimits
		want    []string
	}{
		{"tables over the limit", "b0.ebnn", []string{"b1.ebnn", "b2.ebnn"}, runtime.LoadLimits{BernsteinTableBytes: 3*tables - 1},
			[]string{`member 2 ("`, `b2.ebnn") takes the mixture over the runtime's load limits`, "2112 of 3167 bytes of quantile tables (runtime.MaxBernsteinTableBytes), 1056 a member", "at most 2 members"}},
		{"work over the limit", "b0.ebnn", []string{"b1.ebnn", "b2.ebnn"}, runtime.LoadLimits{BernsteinWork: 3*work - 1},
			[]string{`member 2 ("`, `b2.ebnn") takes the mixture over the runtime's load limits`, "2640 of 3959 flow-term evaluations (runtime.MaxBernsteinWork), 1320 a member", "at most 2 members"}},
		{"invalid alone", "b0.ebnn", []string{"b1.ebnn", "flat.ebnn"}, runtime.LoadLimits{},
			[]string{`member 2 ("`, `flat.ebnn") does not make a valid model on its own`, `layer "fc"`, "underflow"}},
		{"tensor shape", "small.ebnn", []string{"small.ebnn", "reshaped.ebnn"}, runtime.LoadLimits{},
			[]string{`member 2 ("`, `reshaped.ebnn") does not make a valid model on its own`, `tensor "0.weight" has shape [4]`}},
		{"undeclared tensor", "small.ebnn", []string{"small.ebnn", "junk.ebnn"}, runtime.LoadLimits{},
			[]string{`member 2 ("`, `junk.ebnn") does not make a valid model on its own`, `tensor "junk" (shape [2])`, "not used"}},
		{"member 0 invalid alone", "flat.ebnn", []string{"b1.ebnn"}, runtime.LoadLimits{},
			[]string{`member 0 ("`, `flat.ebnn") does not make a valid model on its own`, "underflow"}},
		{"architecture", "b0.ebnn", []string{"b1.ebnn", "degree5.ebnn"}, runtime.LoadLimits{},
			[]string{"member 2: ", `degree5.ebnn" has another architecture or posterior than "`, `b0.ebnn"`, `its layers[0] ("fc").posterior.degree is 5, not 4`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Checkpoint: p(c.first), Out: p("out.ebnn"), loadLimits: c.limits}
			for _, m := range c.members {
				opts.Members = append(opts.Members, p(m))
			}
			opts.Members = append(opts.Members, missing)
			_, err := Convert(opts)
			testutil.ErrorContains(t, err, c.want...)
			if strings.Contains(err.Error(), "missing.ebnn") {
				t.Errorf("error %q: the member after the one at fault was read", err)
			}
			if _, err := os.Stat(opts.Out); err == nil {
				t.Errorf("%s written", opts.Out)
			}
		})
	}
	// Within the limits, the same members combine.
	opts := Options{Checkpoint: p("b0.ebnn"), Members: []string{p("b1.ebnn"), p("b2.ebnn")}, Out: p("ok.ebnn"),
		loadLimits: runtime.LoadLimits{BernsteinTableBytes: 3 * tables, BernsteinWork: 3 * work}}
	if _, err := Convert(opts); err != nil {
		t.Errorf("3 members within limits of 3: %v", err)
	}
}

// TestBudgetUse: the budget that one more member takes over is named, with the members' total,
// the limit and a member's share; when the totals do not show it (an inducing layer's bytes held
// while it loads, the work allowed per stored value), every budget in use is.
func TestBudgetUse(t *testing.T) {
	limits := runtime.LoadLimits{BernsteinTableBytes: 100, BernsteinWork: 1000, InducingBytes: 400, InducingWork: 5000}
	for _, c := range []struct {
		name      string
		used      runtime.LoadLimits
		want, not []string
	}{
		{"tables", runtime.LoadLimits{BernsteinTableBytes: 80, BernsteinWork: 80}, []string{"80 of 100 bytes of quantile tables (runtime.MaxBernsteinTableBytes), 40 a member"}, []string{"MaxBernsteinWork"}},
		{"inducing bytes", runtime.LoadLimits{InducingBytes: 300, InducingWork: 600}, []string{"300 of 400 bytes of inducing values (runtime.MaxInducingBytes), 150 a member"}, []string{"MaxInducingWork"}},
		{"not from the totals", runtime.LoadLimits{InducingBytes: 100, InducingWork: 4000},
			[]string{"100 of 400 bytes of inducing values (runtime.MaxInducingBytes)", "4000 of 5000 multiply-adds, plus runtime.InducingWorkPerValue a stored value (runtime.MaxInducingWork), 2000 a member"}, nil},
		{"none", runtime.LoadLimits{}, []string{"none of them"}, nil},
	} {
		got := budgetUse(c.used, limits, 2)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", c.name, got, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q names %s, which one more member does not take over", c.name, got, w)
			}
		}
	}
}
