package eval

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPrecisionRecallF1 checks hand-counted confusions (the expected values are worked out in
// the comments, not by the code under test).
func TestPrecisionRecallF1(t *testing.T) {
	cases := []struct {
		name          string
		pred, labels  []int
		classes       int
		wantP, wantR  float64
		wantF1        float64
		wantAveraging string
	}{
		{
			// TP = 3 (inputs 0, 2, 6), FN = 1 (input 1), FP = 2 (inputs 3, 4), TN = 2:
			// P = 3/5, R = 3/4, F1 = 2·(3/5)(3/4)/(3/5 + 3/4) = 2/3.
			name: "binary", classes: 2,
			labels: []int{1, 1, 1, 0, 0, 0, 1, 0},
			pred:   []int{1, 0, 1, 1, 1, 0, 1, 0},
			wantP:  3.0 / 5, wantR: 3.0 / 4, wantF1: 2.0 / 3, wantAveraging: AverageBinary,
		},
		{
			// No positive predicted, one positive label: P = 0 (0/0 counts 0), R = 0, F1 = 0.
			name: "binary, nothing predicted positive", classes: 2,
			labels: []int{1, 0}, pred: []int{0, 0},
			wantAveraging: AverageBinary,
		},
		{
			// Class 0: TP 2, FP 0, FN 1 → P 1, R 2/3, F1 4/5.
			// Class 1: TP 1, FP 1 (input 2), FN 1 (input 4) → 1/2, 1/2, 1/2.
			// Class 2: TP 4, FP 1 (input 4), FN 0 → P 4/5, R 1, F1 8/9.
			name: "macro", classes: 3,
			labels: []int{0, 0, 0, 1, 1, 2, 2, 2, 2},
			pred:   []int{0, 0, 1, 1, 2, 2, 2, 2, 2},
			wantP:  (1 + 0.5 + 0.8) / 3, wantR: (2.0/3 + 0.5 + 1) / 3, wantF1: (0.8 + 0.5 + 8.0/9) / 3,
			wantAveraging: AverageMacro,
		},
		{
			// The same with a fourth class that is neither a label nor a prediction: left out.
			name: "macro, absent class", classes: 4,
			labels: []int{0, 0, 0, 1, 1, 2, 2, 2, 2},
			pred:   []int{0, 0, 1, 1, 2, 2, 2, 2, 2},
			wantP:  (1 + 0.5 + 0.8) / 3, wantR: (2.0/3 + 0.5 + 1) / 3, wantF1: (0.8 + 0.5 + 8.0/9) / 3,
			wantAveraging: AverageMacro,
		},
		{
			// Class 0: TP 1, FN 1 → 1, 1/2, 2/3. Class 1: 1, 1, 1. Class 2 predicted once, never
			// a label: P 0, R 0 (0/0), F1 0. Macro: P 2/3, R 1/2, F1 5/9.
			name: "macro, predicted class without labels", classes: 3,
			labels: []int{0, 0, 1}, pred: []int{0, 2, 1},
			wantP: 2.0 / 3, wantR: 0.5, wantF1: 5.0 / 9, wantAveraging: AverageMacro,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, r, f, err := PrecisionRecallF1(c.pred, c.labels, c.classes)
			if err != nil {
				t.Fatal(err)
			}
			if !(math.Abs(p-c.wantP) <= 1e-12) || !(math.Abs(r-c.wantR) <= 1e-12) || !(math.Abs(f-c.wantF1) <= 1e-12) {
				t.Errorf("P %v R %v F1 %v, want %v %v %v", p, r, f, c.wantP, c.wantR, c.wantF1)
			}
			if a := Averaging(c.classes); a != c.wantAveraging {
				t.Errorf("averaging %q, want %q", a, c.wantAveraging)
			}
		})
	}
	for _, bad := range []struct {
		name         string
		pred, labels []int
	}{{"lengths", []int{0}, []int{0, 1}}, {"label range", []int{0}, []int{3}}, {"prediction range", []int{-1}, []int{0}}, {"empty", nil, nil}} {
		if _, _, _, err := PrecisionRecallF1(bad.pred, bad.labels, 3); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

// TestClassifyReportsTable2Metrics: Classify's precision, recall, F1 and AUROC are those of its
// most probable classes (first on ties).
func TestClassifyReportsTable2Metrics(t *testing.T) {
	// Rows of TestClassAUROC's multi-class example: predictions 0, 1, 1, 0 (the last a tie of
	// 0 and 1 → 0) for labels 0, 1, 2, 0. Class 0: TP 2 → P 1, R 1, F1 1. Class 1: TP 1, FP 1 →
	// P 1/2, R 1, F1 2/3. Class 2: FN 1 → 0, 0, 0.
	probs := []float32{0.7, 0.2, 0.1, 0.3, 0.4, 0.3, 0.2, 0.5, 0.3, 0.4, 0.4, 0.2}
	c, err := Classify(probs, 3, []int{0, 1, 2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(c.Precision-0.5) <= 1e-12) || !(math.Abs(c.Recall-2.0/3) <= 1e-12) || !(math.Abs(c.F1-5.0/9) <= 1e-12) ||
		!(math.Abs(float64(c.AUROC)-7.0/9) <= 1e-12) || c.Averaging != AverageMacro {
		t.Errorf("got %+v, want precision 1/2, recall 2/3, F1 5/9, AUROC 7/9, macro", c)
	}
}

// rankSumAUROC is the Mann–Whitney statistic U/(n₊n₋) with U = R₊ − n₊(n₊+1)/2, R₊ the sum of
// the positives' ranks among all scores, each rank found by counting (average rank on ties).
func rankSumAUROC(neg, pos []float64) float64 {
	all := append(append([]float64{}, neg...), pos...)
	r := 0.0
	for _, v := range pos {
		less, equal := 0.0, 0.0
		for _, w := range all {
			switch {
			case w < v:
				less++
			case w == v:
				equal++
			}
		}
		r += less + (equal+1)/2
	}
	np, nn := float64(len(pos)), float64(len(neg))
	return (r - np*(np+1)/2) / (np * nn)
}

func TestClassAUROC(t *testing.T) {
	cases := []struct {
		name    string
		probs   []float32
		classes int
		labels  []int
		want    float64
	}{
		{
			// p(1) of positives 0.9, 0.4, 0.6 against negatives 0.5, 0.2: 5 of 6 pairs.
			name: "binary", classes: 2,
			probs:  []float32{0.1, 0.9, 0.6, 0.4, 0.4, 0.6, 0.5, 0.5, 0.8, 0.2},
			labels: []int{1, 1, 1, 0, 0},
			want:   5.0 / 6,
		},
		{
			// With a tied negative 0.6: 0.9 beats 3, 0.4 beats 1, 0.6 beats 2 and ties 1: 6.5/9.
			name: "binary with a tie", classes: 2,
			probs:  []float32{0.1, 0.9, 0.6, 0.4, 0.4, 0.6, 0.5, 0.5, 0.8, 0.2, 0.4, 0.6},
			labels: []int{1, 1, 1, 0, 0, 0},
			want:   6.5 / 9,
		},
		{
			// Class 0: positives 0.7, 0.4 above negatives 0.3, 0.2 → 1. Class 1: positive 0.4
			// against 0.2, 0.5, 0.4 → 1.5/3. Class 2: 0.3 against 0.1, 0.3, 0.2 → 2.5/3.
			// Macro: (1 + 1/2 + 5/6)/3 = 7/9.
			name: "one-vs-rest macro", classes: 3,
			probs:  []float32{0.7, 0.2, 0.1, 0.3, 0.4, 0.3, 0.2, 0.5, 0.3, 0.4, 0.4, 0.2},
			labels: []int{0, 1, 2, 0},
			want:   7.0 / 9,
		},
		{
			// Class 2 has no positives and is left out. Class 0: positives 0.7, 0.4, 0.2 against
			// the negative 0.3 → 2/3. Class 1: 0.4 against 0.2, 0.4, 0.5 → 1.5/3. Macro 7/12.
			name: "one-vs-rest, absent class", classes: 3,
			probs:  []float32{0.7, 0.2, 0.1, 0.3, 0.4, 0.3, 0.4, 0.4, 0.2, 0.2, 0.5, 0.3},
			labels: []int{0, 1, 0, 0},
			want:   (2.0/3 + 0.5) / 2,
		},
		{name: "one class only", classes: 2, probs: []float32{0.3, 0.7, 0.6, 0.4}, labels: []int{1, 1}, want: math.NaN()},
	}
	for _, c := range cases {
		got := ClassAUROC(c.probs, c.classes, c.labels)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestClassAUROCMannWhitney compares ClassAUROC on random data (with ties) with the rank-sum
// formula, per class and macro-averaged.
func TestClassAUROCMannWhitney(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, classes := range []int{2, 3, 5} {
		for trial := 0; trial < 5; trial++ {
			n := 30 + rng.IntN(50)
			probs := make([]float32, n*classes)
			labels := make([]int, n)
			for i := range labels {
				labels[i] = rng.IntN(classes)
				for c := 0; c < classes; c++ {
					probs[i*classes+c] = float32(rng.IntN(8)) / 8 // coarse: many ties
				}
			}
			perClass := func(c int) float64 {
				var neg, pos []float64
				for i, y := range labels {
					if v := float64(probs[i*classes+c]); y == c {
						pos = append(pos, v)
					} else {
						neg = append(neg, v)
					}
				}
				if len(pos) == 0 || len(neg) == 0 {
					return math.NaN()
				}
				return rankSumAUROC(neg, pos)
			}
			want := perClass(1)
			if classes > 2 {
				s, k := 0.0, 0.0
				for c := 0; c < classes; c++ {
					if a := perClass(c); !math.IsNaN(a) {
						s += a
						k++
					}
				}
				want = s / k
			}
			if got := ClassAUROC(probs, classes, labels); !(math.Abs(got-want) <= 1e-12) {
				t.Errorf("%d classes, trial %d: %v, want %v", classes, trial, got, want)
			}
		}
	}
}

// naiveMixture is log((1/L) Σ_l Π_j N(y_j; f_lj, v)) summed directly in float64 (−Inf when every
// density underflows).
func naiveMixture(f, y []float32, v float64) float64 {
	J := len(y)
	L := len(f) / J
	s := 0.0
	for l := 0; l < L; l++ {
		p := 1.0
		for j := range y {
			d := float64(y[j]) - float64(f[l*J+j])
			p *= math.Exp(-d*d/(2*v)) / math.Sqrt(2*math.Pi*v)
		}
		s += p
	}
	return math.Log(s / float64(L))
}

func TestMixtureLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type tc struct {
		name string
		f, y []float32
		v    float64
		want float64
		// underflow: the naive sum must give −Inf (the case exercises log-sum-exp).
		underflow bool
	}
	var cases []tc
	for trial := 0; trial < 10; trial++ {
		L, J := 100, 1+trial%3
		v := 0.05 + rng.Float64()
		y := make([]float32, J)
		for j := range y {
			y[j] = float32(rng.NormFloat64())
		}
		f := make([]float32, L*J)
		for i := range f {
			f[i] = float32(rng.NormFloat64())
		}
		cases = append(cases, tc{name: "random", f: f, y: y, v: v, want: naiveMixture(f, y, v)})
	}
	// All L samples equal: the mixture is one Gaussian, log N(y; f, v) in closed form, here with
	// the target 1000 standard deviations away (the density is e^−500000).
	{
		f := make([]float32, 100)
		for i := range f {
			f[i] = 1000
		}
		cases = append(cases, tc{name: "one far Gaussian", f: f, y: []float32{0}, v: 1,
			want: -0.5*math.Log(2*math.Pi) - 1000*1000/2.0, underflow: true})
	}
	// Half the samples at distance 40, half at 41 with v = 1/2: log(½e^−1600 + ½e^−1681)/√π
	// = −1600 + log((1 + e^−81)/2) − ½ log π.
	{
		f := make([]float32, 100)
		for i := range f {
			f[i] = 40
			if i%2 == 1 {
				f[i] = 41
			}
		}
		cases = append(cases, tc{name: "two far components", f: f, y: []float32{0}, v: 0.5,
			want: -1600 + math.Log1p(math.Exp(-81)) - math.Log(2) - 0.5*math.Log(math.Pi), underflow: true})
	}
	// Two outputs, one sample near and the rest far: the near one carries the mixture,
	// log((1/L) N(y; f₁, vI)) = −log L − log(2πv) − |y − f₁|²/(2v) up to e^−(far terms).
	{
		L := 50
		f := make([]float32, 2*L)
		for i := range f {
			f[i] = 300
		}
		f[0], f[1] = 0.5, -0.25
		want := -math.Log(float64(L)) - math.Log(2*math.Pi*2) - (0.25+0.0625)/4
		cases = append(cases, tc{name: "one near sample of 50, two outputs", f: f, y: []float32{0, 0}, v: 2, want: want})
	}
	for _, c := range cases {
		got, err := MixtureLogLik(c.f, c.y, c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.IsInf(got, 0) || math.IsNaN(got) || math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if naive := naiveMixture(c.f, c.y, c.v); c.underflow && !math.IsInf(naive, -1) {
			t.Errorf("%s: the naive sum gives %v, not −Inf: the case does not underflow", c.name, naive)
		}
	}
	for _, bad := range []struct {
		name string
		f, y []float32
		v    float64
	}{{"ragged", []float32{1, 2, 3}, []float32{0, 0}, 1}, {"no targets", []float32{1}, nil, 1},
		{"no samples", nil, []float32{1}, 1}, {"zero variance", []float32{1}, []float32{1}, 0}} {
		if _, err := MixtureLogLik(bad.f, bad.y, bad.v); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

// TestSelectiveAtFractionOne: on all inputs the selective F1 and AUROC are the full metrics; on
// half, the metrics of the half with the lowest uncertainty, taken by hand.
func TestSelectiveAtFractionOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, classes := range []int{2, 4} {
		n := 60
		probs := make([]float32, n*classes)
		labels := make([]int, n)
		u := make([]float64, n)
		for i := range labels {
			labels[i] = rng.IntN(classes)
			s := float32(0)
			for c := 0; c < classes; c++ {
				probs[i*classes+c] = rng.Float32()
				s += probs[i*classes+c]
			}
			for c := 0; c < classes; c++ {
				probs[i*classes+c] /= s
			}
			u[i] = rng.Float64()
		}
		full, err := Classify(probs, classes, labels)
		if err != nil {
			t.Fatal(err)
		}
		f1 := SelectiveF1(u, probs, classes, labels, []float64{1, 0.5})
		auc := SelectiveAUROC(u, probs, classes, labels, []float64{1, 0.5})
		if f1[0] != full.F1 || auc[0] != float64(full.AUROC) {
			t.Errorf("%d classes, fraction 1: F1 %v AUROC %v, want %v %v", classes, f1[0], auc[0], full.F1, full.AUROC)
		}
		// The half: the 30 inputs below the median uncertainty.
		var hp []float32
		var hl []int
		for i := range labels {
			below := 0
			for j := range u {
				if u[j] < u[i] {
					below++
				}
			}
			if below < n/2 {
				hp = append(hp, probs[i*classes:(i+1)*classes]...)
				hl = append(hl, labels[i])
			}
		}
		half, err := Classify(hp, classes, hl)
		if err != nil {
			t.Fatal(err)
		}
		if f1[1] != half.F1 || auc[1] != float64(half.AUROC) {
			t.Errorf("%d classes, fraction 1/2: F1 %v AUROC %v, want %v %v", classes, f1[1], auc[1], half.F1, half.AUROC)
		}
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal([]Num{0.5, Num(math.NaN()), Num(math.Inf(1))})
	if err != nil || string(b) != "[0.5,null,null]" {
		t.Fatalf("Marshal: %s, %v", b, err)
	}
	var back []Num
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[0] != 0.5 || !math.IsNaN(float64(back[1])) {
		t.Errorf("Unmarshal: %v", back)
	}
}
