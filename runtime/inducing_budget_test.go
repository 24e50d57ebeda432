package runtime

import (
	"fmt"
	"testing"
)

// resnetLayers are the Linear and Conv2d weights (d_out, d_in with the bias column where there
// is one) of a CIFAR-shape ResNet-18, -34 or -50 (3 × 3 stem, 10 classes), in order.
func resnetLayers(arch string) (dOut, dIn []int, conv []bool) {
	add := func(o, i int, c bool) { dOut, dIn, conv = append(dOut, o), append(dIn, i), append(conv, c) }
	add(64, 3*9, true)
	cin := 64
	if arch == "resnet50" {
		for s, n := range []int{3, 4, 6, 3} {
			p := 64 << s
			for b := range n {
				add(p, cin, true)
				add(p, 9*p, true)
				add(4*p, p, true)
				if b == 0 {
					add(4*p, cin, true)
				}
				cin = 4 * p
			}
		}
	} else {
		blocks := []int{2, 2, 2, 2}
		if arch == "resnet34" {
			blocks = []int{3, 4, 6, 3}
		}
		for s, n := range blocks {
			p := 64 << s
			for b := range n {
				add(p, 9*cin, true)
				add(p, 9*p, true)
				if b == 0 && cin != p {
					add(p, cin, true)
				}
				cin = p
			}
		}
	}
	add(10, cin+1, false)
	return dOut, dIn, conv
}

// charge runs the model's budget over every layer of arch with posterior p, members times (a
// mixture), and returns the first refusal.
func charge(b *loadBudget, arch string, p *PosteriorSpec, members int) error {
	dOut, dIn, conv := resnetLayers(arch)
	for range members {
		for i := range dOut {
			op := OpLinear
			if conv[i] {
				op = OpConv2d
			}
			lp := *p
			if op == OpLinear {
				lp.InducingRows = min(lp.InducingRows, dOut[i]) // bayesianize's last-layer rule
			}
			w, k, t, s := inducingLoadCost(&lp, dOut[i], dIn[i], op)
			if err := b.chargeInducing(fmt.Sprintf("layer %d", i), w, k, t, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestInducingBudgetAdmitsPaperModels: the inducing load budget admits paper 003's models —
// ResNet-18, -34 and -50 with M × M inducing weights, M up to 256, every q(U) family, ensembles of
// 5 to 10 members (bayesianize's default is 8), whitened or not, and mixtures of two — and
// refuses a small file's disproportionate ask: one 1 → 1 layer with M_c = 4096.
func TestInducingBudgetAdmitsPaperModels(t *testing.T) {
	fresh := func() *loadBudget {
		return &loadBudget{maxInducingBytes: 1 << 62, maxInducingWork: MaxInducingWork, inducingWorkPerValue: InducingWorkPerValue}
	}
	for _, arch := range []string{"resnet18", "resnet34", "resnet50"} {
		for _, m := range []int{64, 128, 256} {
			for _, q := range []struct {
				q       string
				members int
			}{{QDiagonal, 0}, {QMatrix, 0}, {QEnsemble, 5}, {QEnsemble, 8}, {QEnsemble, 10}} {
				for _, wh := range []bool{true, false} {
					for _, mix := range []int{1, 2} {
						p := &PosteriorSpec{Kind: KindInducing, InducingRows: m, InducingCols: m, QInducing: q.q, EnsembleSize: q.members, WhitenedU: wh}
						b := fresh()
						if err := charge(b, arch, p, mix); err != nil {
							t.Errorf("%s M=%d %s(%d) whitened=%v mixture of %d: %v", arch, m, q.q, q.members, wh, mix, err)
						} else if arch == "resnet50" && m == 256 && q.members == 8 && wh && mix == 1 {
							t.Logf("resnet50 M=256 ensemble 8: %.3g multiply-adds for %d stored values, %.2f of the allowance",
								float64(b.inducingWork), b.inducingStored, float64(b.inducingWork)/float64(MaxInducingWork+InducingWorkPerValue*b.inducingStored))
						}
					}
				}
			}
		}
	}
	p := &PosteriorSpec{Kind: KindInducing, InducingRows: 1, InducingCols: 4096, QInducing: QDiagonal, WhitenedU: true}
	w, k, tmp, s := inducingLoadCost(p, 1, 1, OpLinear)
	if err := fresh().chargeInducing("hostile", w, k, tmp, s); err == nil {
		t.Errorf("a 1 → 1 layer with M_c = 4096 (%.3g multiply-adds, %d stored values) was admitted", float64(w), s)
	}
}
