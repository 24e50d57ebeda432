package tabular

import (
	"math"
	"slices"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// table returns n examples of two features, the first the example's index (so that rows can be
// traced through a partition), the second a scaled copy, with labels i mod 2.
func table(n int) *data.Dataset {
	d := &data.Dataset{Name: "t", N: n, Dim: 2, Shape: []int{2}, Classes: 2}
	for i := 0; i < n; i++ {
		d.X = append(d.X, float32(i), float32(3*i+7))
		d.Labels = append(d.Labels, i%2)
	}
	return d
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		n    int
		frac []float64
		want []int
	}{
		{683, []float64{0.5, 0.2}, []int{342, 137, 204}},
		{506, []float64{0.1}, []int{51, 455}},
		{10, []float64{0.3, 0.3}, []int{3, 3, 4}},
		{3, []float64{0.1}, nil}, // a part of 0
		{3, []float64{0.9}, nil}, // nothing left
		{4, []float64{0.5, 0.5}, nil},
	} {
		got, err := Sizes(tc.n, tc.frac...)
		if tc.want == nil {
			if err == nil {
				t.Errorf("Sizes(%d, %v) = %v, want an error", tc.n, tc.frac, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Sizes(%d, %v) = %v, %v; want %v", tc.n, tc.frac, got, err, tc.want)
		}
	}
}

func TestPartition(t *testing.T) {
	d := table(50)
	parts, err := Partition(d, []int{25, 10, 15}, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	for k, p := range parts {
		if p.N != []int{25, 10, 15}[k] {
			t.Errorf("part %d has %d examples", k, p.N)
		}
		for i := 0; i < p.N; i++ {
			id := int(p.Row(i)[0])
			if p.Row(i)[1] != float32(3*id+7) || p.Labels[i] != id%2 {
				t.Fatalf("part %d row %d: %v label %d do not belong together", k, i, p.Row(i), p.Labels[i])
			}
			seen = append(seen, id)
		}
	}
	slices.Sort(seen)
	for i, id := range seen {
		if id != i {
			t.Fatalf("the parts do not hold every example once: %v", seen)
		}
	}
	again, _ := Partition(d, []int{25, 10, 15}, 7, 2)
	other, _ := Partition(d, []int{25, 10, 15}, 7, 3)
	if !slices.Equal(again[2].X, parts[2].X) {
		t.Error("the same seed and split gave another partition")
	}
	if slices.Equal(other[2].X, parts[2].X) {
		t.Error("another split index gave the same partition")
	}
	for _, sizes := range [][]int{{25, 10}, {25, 25, 1}, {50, 0}} {
		if _, err := Partition(d, sizes, 7, 2); err == nil {
			t.Errorf("sizes %v of 50 examples: no error", sizes)
		}
	}
}

func TestScaler(t *testing.T) {
	d := table(9)
	d.X[1*2+1] = 100 // not a linear copy of the first column any more
	st := Fit(d)
	if !(math.Abs(st.XMean[0]-4) <= 1e-12) || !(math.Abs(st.XSD[0]-math.Sqrt(60.0/9)) <= 1e-12) {
		t.Errorf("feature 0: mean %g sd %g, want 4 and √(60/9)", st.XMean[0], st.XSD[0])
	}
	if st.YMean != 0 || st.YSD != 1 {
		t.Errorf("classification data: target mean %g sd %g, want 0 and 1", st.YMean, st.YSD)
	}
	s := Fit(st.Apply(d))
	if len(s.XMean) == 0 || len(s.XSD) != len(s.XMean) {
		t.Fatalf("refit: %d feature means, %d sds", len(s.XMean), len(s.XSD))
	}
	for j := range s.XMean {
		if !(math.Abs(s.XMean[j]) <= 1e-6) || !(math.Abs(s.XSD[j]-1) <= 1e-6) {
			t.Errorf("feature %d after standardising: mean %g sd %g", j, s.XMean[j], s.XSD[j])
		}
	}
	r := &data.Dataset{Name: "r", N: 4, Dim: 1, Shape: []int{1}, X: []float32{5, 5, 5, 5}, Targets: []float32{1, 2, 3, 4}, Outputs: 1}
	st = Fit(r)
	if st.XSD[0] != 1 || st.YMean != 2.5 || !(math.Abs(st.YSD-math.Sqrt(1.25)) <= 1e-12) {
		t.Errorf("regression: x sd %g (constant column: want 1), y mean %g sd %g", st.XSD[0], st.YMean, st.YSD)
	}
	if a := st.Apply(r); a.X[0] != 0 || !(math.Abs(float64(a.Targets[3])-1.5/math.Sqrt(1.25)) <= 1e-6) {
		t.Errorf("regression standardised: x %v, y %v", a.X, a.Targets)
	}
}
