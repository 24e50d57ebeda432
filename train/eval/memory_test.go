package eval

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	rt "github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// TestCheckMemory: n inputs × outputs against the limit, at the boundary, and sizes whose
// product overflows an int64 are refused rather than wrapped around.
func TestCheckMemory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, outputs int
		limit      int64
		ok         bool
	}{
		{"at the limit", 4000, 20000, 4000 * (20000*BytesPerOutput + BytesPerInput), true},
		{"a byte over", 4000, 20000, 4000*(20000*BytesPerOutput+BytesPerInput) - 1, false},
		{"no inputs", 0, 1 << 30, 0, true},
		{"40 000 rows × 200 000 names", 40000, 200000, 24 << 30, false},
		{"overflow", math.MaxInt / 2, math.MaxInt / 2, math.MaxInt64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMemory("csv big.csv", tc.n, tc.outputs, tc.limit)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckMemory = %v, want ok %v", err, tc.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "csv big.csv") || !strings.Contains(err.Error(), "GiB") || !strings.Contains(err.Error(), "--test-limit")) {
				t.Fatalf("error %q does not name the data, the memory and the remedy", err)
			}
		})
	}
}

// TestPredictChecksMemory: Predict refuses, before allocating its N × outputs predictions, a data
// set whose predictions would not fit in the budget.
func TestPredictChecksMemory(t *testing.T) {
	spec := &rt.Spec{Version: rt.SpecVersion, Task: rt.Classification, InputShape: []int{2},
		Layers: []rt.LayerSpec{{Name: "fc", Op: rt.OpLinear, In: 2, Out: 3, Bias: true}}}
	m, err := rt.New(spec, rt.Tensors{
		"fc.weight": {Shape: []int{3, 2}, Data: []float32{1, 0, 0, 1, 1, 1}},
		"fc.bias":   {Shape: []int{3}, Data: []float32{0, 0, 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := &data.Dataset{Name: "names.csv", N: 10, Dim: 2, Shape: []int{2}, Classes: 3, Labels: make([]int, 10), X: make([]float32, 20)}
	defer func(f func() int64) { memoryLimit = f }(memoryLimit)
	need := MemoryNeed(10, 3)
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{need, true}, {need - 1, false}} {
		memoryLimit = func() int64 { return tc.limit }
		p, err := Predict(m, d, rt.Options{}, 1)
		if (err == nil) != tc.ok {
			t.Fatalf("limit %d: Predict = %v, want ok %v", tc.limit, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "names.csv") {
			t.Fatalf("error %q does not name the data set", err)
		}
		if err == nil && len(p.Probs) != 30 {
			t.Fatalf("%d probabilities, want 30", len(p.Probs))
		}
	}
}

// TestSelectiveInPlace: the selective F1 and AUROC, computed on the rows in place, equal the
// metrics of copies of those rows (as they were computed, at rows × classes values per subset).
func TestSelectiveInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, classes := range []int{2, 3, 7} {
		n := 60
		probs := make([]float32, n*classes)
		labels := make([]int, n)
		u := make([]float64, n)
		for i := range labels {
			labels[i] = rng.IntN(classes)
			u[i] = float64(rng.IntN(10)) // ties
			for c := 0; c < classes; c++ {
				probs[i*classes+c] = float32(rng.IntN(5)) / 4
			}
		}
		fr := []float64{1, 0.9, 0.5, 0.1, 0.01}
		f1 := SelectiveF1(u, probs, classes, labels, fr)
		auc := SelectiveAUROC(u, probs, classes, labels, fr)
		SelectiveBy(u, fr, func(idx []int) float64 {
			k := len(idx)
			sp := make([]float32, 0, k*classes)
			sl := make([]int, 0, k)
			for _, i := range idx {
				sp = append(sp, probs[i*classes:(i+1)*classes]...)
				sl = append(sl, labels[i])
			}
			j := 0
			for j < len(fr) && min(max(int(math.Ceil(fr[j]*float64(n))), 1), n) != k {
				j++
			}
			_, _, wf1, err := PrecisionRecallF1(argmaxRows(sp, classes), sl, classes)
			if err != nil {
				t.Fatal(err)
			}
			wauc := ClassAUROC(sp, classes, sl)
			if f1[j] != wf1 || !(auc[j] == wauc || math.IsNaN(auc[j]) && math.IsNaN(wauc)) {
				t.Errorf("%d classes, %d rows: F1 %v AUROC %v, copies give %v %v", classes, k, f1[j], auc[j], wf1, wauc)
			}
			return 0
		})
	}
}
