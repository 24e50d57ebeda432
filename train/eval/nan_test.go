package eval

import (
	"math"
	"testing"
	"time"
)

// TestNaNScores: a NaN score has no rank, so the metrics that sort scores are NaN — AUROC, AUPR,
// the AUROC interval, the class AUROC of Classify, and selective prediction — instead of looping
// for ever (a tie group compared with ==, which NaN never satisfies) or depending on input order.
func TestNaNScores(t *testing.T) {
	nan := math.NaN()
	in, out := []float64{0.1, 0.2, 0.3}, []float64{nan, 0.25}
	within := func(name string, f func() float64) {
		t.Helper()
		got := make(chan float64, 1)
		go func() { got <- f() }()
		select {
		case v := <-got:
			if !math.IsNaN(v) {
				t.Errorf("%s = %v, want NaN", name, v)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not return", name)
		}
	}
	within("AUROC", func() float64 { return AUROC(in, out) })
	within("AUROC, NaN in-distribution", func() float64 { return AUROC(out, in) })
	within("AUPR", func() float64 { return AUPR(in, out) })
	within("AUROCInterval", func() float64 { a, _, _ := AUROCInterval(in, out, 0.95); return a })
	within("Classify's AUROC", func() float64 {
		c, _ := Classify([]float32{0.5, float32(nan), 0.2, 0.8}, 2, []int{1, 0})
		return float64(c.AUROC)
	})
	within("Selective", func() float64 {
		return Selective([]float64{0.1, nan, 0.3}, []bool{true, false, true}, []float64{0.5})[0]
	})
	within("Selective, no inputs", func() float64 { return Selective(nil, nil, []float64{0.5})[0] })
	within("SelectiveBy", func() float64 {
		return SelectiveBy([]float64{0.1, nan}, []float64{0.5}, func([]int) float64 { return 1 })[0]
	})
	// midRanks itself ends on a NaN (AUROCInterval no longer reaches it with one).
	if r := midRanks([]float64{nan, 1, nan}); len(r) != 3 {
		t.Errorf("midRanks: %v", r)
	}
}
