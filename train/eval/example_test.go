package eval_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/train/eval"
)

// Out-of-distribution detection from an uncertainty score: OOD inputs should score higher.
func ExampleAUROC() {
	inDist := []float64{0.1, 0.2, 0.3, 0.7}
	ood := []float64{0.6, 0.8, 0.9}
	fmt.Printf("AUROC %.3f, AUPR %.3f\n", eval.AUROC(inDist, ood), eval.AUPR(inDist, ood))
	// Output:
	// AUROC 0.917, AUPR 0.917
}
