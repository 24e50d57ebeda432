package runtime

import (
	"errors"
	"strings"
	"testing"
)

// twoInducing is a model of two inducing Linear layers 3 → 4 → 2 (M_r = M_c = 3, whitened
// diagonal q(U)) and its tensors, with every member of a mixture of members (0: one network).
func twoInducing(members int) (*Spec, Tensors) {
	post := func() *PosteriorSpec {
		return &PosteriorSpec{Kind: KindInducing, InducingRows: 3, InducingCols: 3, PriorSD: 1, QInducing: QDiagonal, WhitenedU: true}
	}
	spec := &Spec{Version: 1, Task: Classification, InputShape: []int{3}, Members: members, Layers: []LayerSpec{
		{Name: "l0", Op: OpLinear, In: 3, Out: 4, Posterior: post()},
		{Name: "l1", Op: OpLinear, In: 4, Out: 2, Posterior: post()},
	}}
	ts := Tensors{}
	for k := range max(members, 1) {
		for _, l := range spec.Layers {
			for _, d := range InducingTensors(l.Out, l.In, l.Posterior) {
				n, _ := elements(d.Shape)
				v := make([]float32, n)
				for i := range v {
					v[i] = float32((i*7+k)%5)/5 - 0.4
				}
				name := l.Name + "." + d.Name
				if members > 1 {
					name = MemberPrefix(k) + name
				}
				ts[name] = Tensor{Shape: d.Shape, Data: v}
			}
		}
	}
	return spec, ts
}

// TestHostile32InducingBudget: the inducing layers' load budget (MaxInducingWork,
// MaxInducingBytes) is the model's, charged layer by layer before each loads, across the
// members of a mixture too.
func TestHostile32InducingBudget(t *testing.T) {
	spec, ts := twoInducing(0)
	w0, k0, t0, _ := inducingLoadCost(spec.Layers[0].Posterior, 4, 3, OpLinear)
	w1, k1, t1, _ := inducingLoadCost(spec.Layers[1].Posterior, 2, 4, OpLinear)
	// Without the allowance per stored value (TestInducingBudgetAdmitsPaperModels has it): the
	// work bound is MaxInducingWork alone.
	budget := func(bytes, work int64) *loadBudget {
		return &loadBudget{maxBernsteinBytes: MaxBernsteinTableBytes, maxBernsteinWork: MaxBernsteinWork, maxInducingBytes: bytes, maxInducingWork: work}
	}
	for _, c := range []struct {
		name        string
		bytes, work int64
		want        []string // nil: loads
		isMem       bool
	}{
		{"fits", k0 + k1 + t1, w0 + w1, nil, false},
		{"work", MaxInducingBytes, w0 + w1 - 1, []string{`layer "l1"`, "MaxInducingWork", "taken by earlier layers"}, false},
		{"work-first", MaxInducingBytes, w0 - 1, []string{`layer "l0"`, "MaxInducingWork"}, false},
		{"bytes", k0 + k1 + t1 - 1, MaxInducingWork, []string{`layer "l1"`, "MaxInducingBytes", "kept by earlier inducing layers"}, true},
		{"bytes-first", k0 + t0 - 1, MaxInducingWork, []string{`layer "l0"`, "MaxInducingBytes"}, true},
	} {
		b := budget(c.bytes, c.work)
		_, err := newModel(spec, ts, b)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if b.inducingWork != w0+w1 || b.inducingBytes != k0+k1 {
				t.Errorf("%s: charged %d work and %d bytes kept, want %d and %d", c.name, b.inducingWork, b.inducingBytes, w0+w1, k0+k1)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: loaded; want an error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
		if errors.Is(err, ErrMemory) != c.isMem {
			t.Errorf("%s: error %q: errors.Is ErrMemory is %v", c.name, err, !c.isMem)
		}
	}
	// A mixture's members share the budget: three members' layers do not fit two members' work.
	mspec, mts := twoInducing(3)
	if _, err := newModel(mspec, mts, budget(MaxInducingBytes, 3*(w0+w1))); err != nil {
		t.Fatalf("mixture within its budget: %v", err)
	}
	if _, err := newModel(mspec, mts, budget(MaxInducingBytes, 2*(w0+w1))); err == nil || !strings.Contains(err.Error(), "member 2") {
		t.Fatalf("mixture beyond its budget: %v; want member 2 refused", err)
	}
}

// TestHostile32DeclaredShapes: the declared shapes of a spec's tensors saturate instead of
// wrapping around in 32-bit int.
func TestHostile32DeclaredShapes(t *testing.T) {
	p := &PosteriorSpec{Kind: KindInducing, InducingRows: 256, InducingCols: 256, QInducing: QFull}
	for _, d := range InducingTensors(1, 1, p) {
		if d.Name == "_inducing_scale_tril" && (len(d.Shape) != 1 || d.Shape[0] != oversize) {
			t.Errorf("d = 65536: the packed factor is declared %v, want [%d]", d.Shape, oversize)
		}
	}
	for _, c := range []struct{ a, b, want int }{{1 << 15, 1 << 15, 1 << 30}, {1 << 16, 1 << 16, oversize}, {-1, 3, -1}, {0, 1 << 20, 0}} {
		if got := dimProd(c.a, c.b); got != c.want {
			t.Errorf("dimProd(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := triangular(1 << 20); got != oversize {
		t.Errorf("triangular(2^20) = %d, want %d", got, oversize)
	}
	if got := triangular(4096); got != 4096*4097/2 {
		t.Errorf("triangular(4096) = %d", got)
	}
}
