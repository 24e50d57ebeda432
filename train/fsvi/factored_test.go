package fsvi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

// TestFactoredMatchesDense: the factored path (Linearize of a network of Linear layers) gives the
// dense path's Jacobian, KL, gradients, ∂KL/∂J and gradient through J — joint and per output,
// with and without the prior side, with σ clamped at MaxSD for some weights and a prior whose
// σ₀ differs per weight. The dense path is checked against the tape and finite differences by
// the tests above, so agreement to rounding checks the factored algebra.
func TestFactoredMatchesDense(t *testing.T) {
	for _, kind := range []string{"linear", "mlp", "mlp3"} {
		for _, per := range []bool{false, true} {
			for _, priorSide := range []bool{false, true} {
				n, shape := tinyNet(t, kind)
				ts, _ := n.FFGTensors()
				rng := rand.New(rand.NewPCG(3, uint64(len(ts))))
				for i := range ts {
					ts[i].HasMax, ts[i].MaxSD = true, 0.9
					for k := range ts[i].PriorSD.Value {
						ts[i].PriorSD.Value[k] *= 0.5 + rng.Float64()
					}
				}
				const m = 4
				x := contextInputs(shape, m, 11)
				fac, err := Linearize(autodiff.NewTape[float64](), n, ts, x, m, shape)
				if err != nil {
					t.Fatal(err)
				}
				if !fac.Factored() {
					t.Fatalf("%s: Linearize did not factor a network of Linear layers", kind)
				}
				den, err := Jacobian(autodiff.NewTape[float64](), n, ts, x, m, shape)
				if err != nil {
					t.Fatal(err)
				}
				fb := fac.Dense()
				for i := range den.Blocks {
					if e := relErr(fb[i], den.Blocks[i]); !(e <= 1e-12) {
						t.Fatalf("%s: tensor %d: factored Jacobian differs by %.2g (relative)", kind, i, e)
					}
				}
				dJd, dJf := copyBlocks(den.Blocks), copyBlocks(den.Blocks)
				o := Options{Jitter: 1e-4, PerOutput: per, JacobianGradPriorSide: priorSide, Workspace: &Workspace{}}
				o.JacobianGrad = dJd
				klD, gmD, grD := gradsOf(t, ts, den, o)
				for rep := 0; rep < 2; rep++ { // the second call reuses the workspace
					o.JacobianGrad = dJf
					klF, gmF, grF := gradsOf(t, ts, fac, o)
					if !(math.Abs(klF-klD) <= 1e-10*(1+math.Abs(klD))) || !(relErr(gmF, gmD) <= 1e-9) || !(relErr(grF, grD) <= 1e-9) {
						t.Fatalf("%s perOutput=%v: factored KL %.12g (∂μ rel. err. %.2g, ∂ρ %.2g), dense %.12g",
							kind, per, klF, relErr(gmF, gmD), relErr(grF, grD), klD)
					}
					for i := range dJd {
						if e := relErr(dJf[i], dJd[i]); !(e <= 1e-9) {
							t.Fatalf("%s perOutput=%v priorSide=%v: ∂KL/∂J block %d differs by %.2g (relative)", kind, per, priorSide, i, e)
						}
					}
				}
				// The gradient through J from rows formed on demand.
				var rows FactoredRows
				o.JacobianGrad, o.JacobianRows = nil, &rows
				gradsOf(t, ts, fac, o)
				outF, outD := make([][]float64, len(ts)), make([][]float64, len(ts))
				for i, tt := range ts {
					outF[i], outD[i] = make([]float64, len(tt.Mean.Value)), make([]float64, len(tt.Mean.Value))
				}
				if err := JacobianVJP(autodiff.NewTape[float64](), n, ts, x, m, shape, &rows, outF, 1e-4); err != nil {
					t.Fatal(err)
				}
				if err := JacobianVJP(autodiff.NewTape[float64](), n, ts, x, m, shape, BlockRows(dJd), outD, 1e-4); err != nil {
					t.Fatal(err)
				}
				var a, b []float64
				for i := range outF {
					a, b = append(a, outF[i]...), append(b, outD[i]...)
				}
				// FactoredRows.Row forms the directions with float32 products: float32 rounding (6·10⁻⁸
				// relative), amplified where the prior side's terms cancel, against an error of O(1)
				// for a wrong formula. A network linear in its parameters ("linear") has ∇²f = 0: both
				// are rounding noise (~10⁻¹³), compared in absolute terms.
				scale := 0.0
				for _, v := range b {
					scale = math.Max(scale, math.Abs(v))
				}
				switch {
				case scale < 1e-9:
					for _, v := range a {
						if !(math.Abs(v) <= 1e-9) {
							t.Fatalf("%s perOutput=%v priorSide=%v: gradient through J %g from factored rows where the dense path's is zero", kind, per, priorSide, v)
						}
					}
				case !(relErr(a, b) <= 1e-3): // NaN too
					t.Fatalf("%s perOutput=%v priorSide=%v: gradient through J from factored rows differs by %.2g (relative)", kind, per, priorSide, relErr(a, b))
				}
			}
		}
	}
}

// TestLinearizeConvIsDense: a network with a Conv2d ffg layer gets dense blocks.
func TestLinearizeConvIsDense(t *testing.T) {
	n, shape := tinyNet(t, "conv")
	ts, _ := n.FFGTensors()
	lin, err := Linearize(autodiff.NewTape[float64](), n, ts, contextInputs(shape, 2, 1), 2, shape)
	if err != nil {
		t.Fatal(err)
	}
	if lin.Factored() || lin.Blocks == nil {
		t.Fatal("a network with a Conv2d layer was factored")
	}
	var rows FactoredRows
	if _, err := AddKLGrad(autodiff.NewTape[float64](), ts, lin, 1, Options{JacobianRows: &rows}); err == nil {
		t.Fatal("JacobianRows accepted with a dense linearisation")
	}
}
