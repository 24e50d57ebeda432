package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveAUROC counts ordered pairs directly.
func naiveAUROC(in, out []float64) float64 {
	s := 0.0
	for _, o := range out {
		for _, i := range in {
			switch {
			case o > i:
				s++
			case o == i:
				s += 0.5
			}
		}
	}
	return s / float64(len(in)*len(out))
}

// naiveAP computes average precision by thresholding at every distinct score.
func naiveAP(in, out []float64) float64 {
	var th []float64
	seen := map[float64]bool{}
	for _, v := range append(append([]float64{}, in...), out...) {
		if !seen[v] {
			seen[v] = true
			th = append(th, v)
		}
	}
	// descending thresholds
	for i := range th {
		for j := i + 1; j < len(th); j++ {
			if th[j] > th[i] {
				th[i], th[j] = th[j], th[i]
			}
		}
	}
	ap, prevR := 0.0, 0.0
	for _, t := range th {
		tp, fp := 0.0, 0.0
		for _, o := range out {
			if o >= t {
				tp++
			}
		}
		for _, i := range in {
			if i >= t {
				fp++
			}
		}
		r := tp / float64(len(out))
		ap += (r - prevR) * tp / (tp + fp)
		prevR = r
	}
	return ap
}

func TestAUROCAndAUPR(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name    string
		in, out []float64
		auroc   float64
	}{
		{"separated", []float64{0, 1, 2}, []float64{3, 4}, 1},
		{"reversed", []float64{3, 4}, []float64{0, 1, 2}, 0},
		{"all tied", []float64{1, 1}, []float64{1, 1, 1}, 0.5},
	}
	// random cases with ties (integer scores)
	for k := 0; k < 5; k++ {
		var in, out []float64
		for i := 0; i < 40; i++ {
			in = append(in, float64(rng.IntN(10)))
		}
		for i := 0; i < 25; i++ {
			out = append(out, float64(rng.IntN(10)+2))
		}
		cases = append(cases, struct {
			name    string
			in, out []float64
			auroc   float64
		}{"random", in, out, naiveAUROC(in, out)})
	}
	for _, c := range cases {
		if got := AUROC(c.in, c.out); !(math.Abs(got-c.auroc) <= 1e-12) {
			t.Errorf("%s: AUROC %v, want %v", c.name, got, c.auroc)
		}
		if got, want := AUPR(c.in, c.out), naiveAP(c.in, c.out); !(math.Abs(got-want) <= 1e-12) {
			t.Errorf("%s: AUPR %v, want %v", c.name, got, want)
		}
	}
	if !math.IsNaN(AUROC(nil, []float64{1})) {
		t.Error("AUROC of an empty class should be NaN")
	}
}

func TestClassify(t *testing.T) {
	probs := []float32{
		0.7, 0.2, 0.1, // y=0 correct, conf .7
		0.1, 0.6, 0.3, // y=2 wrong, conf .6
		0.05, 0.05, 0.9, // y=2 correct, conf .9
		0.5, 0.5, 0, // y=1: tie → class 0 (first max), wrong, conf .5
	}
	labels := []int{0, 2, 2, 1}
	c, err := Classify(probs, 3, labels)
	if err != nil {
		t.Fatal(err)
	}
	wantNLL := -(math.Log(0.7) + math.Log(0.3) + math.Log(0.9) + math.Log(0.5)) / 4
	wantBrier := ((0.09 + 0.04 + 0.01) + (0.01 + 0.36 + 0.49) + (0.0025 + 0.0025 + 0.01) + (0.25 + 0.25)) / 4
	// ECE with 15 bins: each input alone in its bin: |acc − conf| averaged.
	wantECE := (math.Abs(1-0.7) + math.Abs(0-0.6) + math.Abs(1-0.9) + math.Abs(0-0.5)) / 4
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"accuracy", c.Accuracy, 0.5}, {"nll", c.NLL, wantNLL}, {"brier", c.Brier, wantBrier}, {"ece", c.ECE, wantECE}} {
		if !(math.Abs(x.got-x.want) <= 1e-6) {
			t.Errorf("%s = %v, want %v", x.name, x.got, x.want)
		}
	}
	if _, err := Classify(probs, 3, []int{0, 1, 2, 3}); err == nil {
		t.Error("label 3 of 3 classes accepted")
	}
	if _, err := Classify(probs[:5], 3, labels); err == nil {
		t.Error("short probabilities accepted")
	}
}

func TestECEBins(t *testing.T) {
	// Two inputs in the same bin: |mean acc − mean conf|.
	ece, bins := ECE([]float64{0.95, 0.99, 0.0}, []bool{true, false, false}, 15)
	want := (2.0/3)*math.Abs(0.5-0.97) + (1.0/3)*0
	if !(math.Abs(ece-want) <= 1e-12) {
		t.Errorf("ECE %v, want %v", ece, want)
	}
	if bins[14].Count != 2 || bins[0].Count != 1 {
		t.Errorf("bin counts %d (last) and %d (first), want 2 and 1", bins[14].Count, bins[0].Count)
	}
}

func TestSelective(t *testing.T) {
	u := []float64{0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5, 0.55}
	correct := []bool{true, false, true, false, true, false, true, true, false, true}
	got := Selective(u, correct, []float64{1, 0.5, 0.1})
	// sorted by u: .1 T, .2 T, .3 T, .4 T, .5 F, .55 T, .6 T, .7 F, .8 F, .9 F
	want := []float64{6.0 / 10, 4.0 / 5, 1}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= 1e-12) {
			t.Errorf("fraction %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestRegress(t *testing.T) {
	r, err := Regress([]float32{0, 1}, []float32{1, 4}, []float32{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	wantNLL := (0.5*(math.Log(2*math.Pi)+1) + 0.5*math.Log(2*math.Pi*4)) / 2
	if !(math.Abs(r.RMSE-math.Sqrt(0.5)) <= 1e-7) || !(math.Abs(r.NLL-wantNLL) <= 1e-6) {
		t.Errorf("got %+v, want rmse %v nll %v", r, math.Sqrt(0.5), wantNLL)
	}
}

func TestCombine(t *testing.T) {
	a := &Predictions{N: 1, Classes: 2, Probs: []float32{1, 0}, Entropy: []float64{0}}
	b := &Predictions{N: 1, Classes: 2, Probs: []float32{0, 1}, Entropy: []float64{0}}
	p, err := Combine([]*Predictions{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(p.MutualInfo[0]-math.Log(2)) <= 1e-6) || !(math.Abs(p.Entropy[0]-math.Log(2)) <= 1e-6) {
		t.Errorf("disagreeing members: MI %v entropy %v, want log 2", p.MutualInfo[0], p.Entropy[0])
	}
}

func TestMeanSE(t *testing.T) {
	// 1, 2, 3, 4: mean 2.5, sample variance 5/3, standard error √(5/3)/2.
	if m, se := MeanSE([]float64{1, 2, 3, 4}); m != 2.5 || !(math.Abs(se-math.Sqrt(5.0/3)/2) <= 1e-15) {
		t.Errorf("MeanSE = %v ± %v", m, se)
	}
	if m, se := MeanSE([]float64{7}); m != 7 || se != 0 {
		t.Errorf("one value: %v ± %v", m, se)
	}
	if m, se := MeanSE(nil); !math.IsNaN(m) || !math.IsNaN(se) {
		t.Errorf("no values: %v ± %v", m, se)
	}
}

// TestFormatMeanSE: the cell of 1, 2, 3, 4 is 2.50 ± 0.65 (√(5/3)/2 = 0.6455), of one value the
// value alone, of none a dash.
func TestFormatMeanSE(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		verb string
		want string
	}{
		{[]float64{1, 2, 3, 4}, "%.2f", "2.50 ± 0.65"},
		{[]float64{1, 2, 3, 4}, "%.3f %%", "2.500 % ± 0.645 %"},
		{[]float64{7}, "%.1f", "7.0"},
		{nil, "%.1f", "—"},
	} {
		if got := FormatMeanSE(c.x, c.verb); got != c.want {
			t.Errorf("FormatMeanSE(%v, %q) = %q, want %q", c.x, c.verb, got, c.want)
		}
	}
}

// TestCombineMD2: members' probabilities [1, 0] and [0, 1] about p̄ = [½, ½]: MD² = 2 classes ×
// ((½)² + (½)²)/2 = ½; with members that have MD² of their own (0.1 and 0.3, as many samples
// each) their mean adds: 0.7.
func TestCombineMD2(t *testing.T) {
	for _, c := range []struct {
		name string
		md2  [2][]float64
		want float64
	}{{"deterministic members", [2][]float64{nil, nil}, 0.5}, {"sampled members", [2][]float64{{0.1}, {0.3}}, 0.7}} {
		a := &Predictions{N: 1, Classes: 2, Probs: []float32{1, 0}, Entropy: []float64{0}, MD2: c.md2[0]}
		b := &Predictions{N: 1, Classes: 2, Probs: []float32{0, 1}, Entropy: []float64{0}, MD2: c.md2[1]}
		p, err := Combine([]*Predictions{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(p.MD2[0]-c.want) <= 1e-9) {
			t.Errorf("%s: MD² %v, want %v", c.name, p.MD2[0], c.want)
		}
	}
}
