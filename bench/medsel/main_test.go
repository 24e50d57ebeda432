package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// defaults are the command's flag defaults at a size a test can afford.
func defaults() options {
	return options{data: "../data/breast_cancer_wisconsin.csv", hidden: "16", seeds: 2, search: 2, epochs: 3, stage1: 1, ramp: 1,
		batch: 16, mcSamples: 1, samples: 10, pretrainEpochs: 20, alphaLo: 0.01, alphaHi: 10, lrLo: 1e-6, lrHi: 5e-4,
		initLogVar: 2 * math.Log(1e-4), fScale: 1e-4}
}

// TestDraw checks that the search draws lie in their ranges, are log-uniform (the mean of log α
// is the middle of the log range within a 5-standard-error tolerance of 4000 draws), repeat for
// the same split and draw, and differ between splits.
func TestDraw(t *testing.T) {
	o := defaults()
	const n = 4000
	var sumA, sumL float64
	for k := 0; k < n; k++ {
		a, l := o.draw(0, k)
		if !(a >= o.alphaLo) || !(a <= o.alphaHi) || !(l >= o.lrLo) || !(l <= o.lrHi) {
			t.Fatalf("draw %d: α %g, η %g outside the ranges", k, a, l)
		}
		sumA += math.Log(a)
		sumL += math.Log(l)
	}
	for _, c := range []struct {
		name   string
		sum    float64
		lo, hi float64
	}{{"α", sumA, o.alphaLo, o.alphaHi}, {"η", sumL, o.lrLo, o.lrHi}} {
		width := math.Log(c.hi) - math.Log(c.lo)
		mid := math.Log(c.lo) + width/2
		se := width / math.Sqrt(12*n) // a uniform's standard deviation is width/√12
		if d := c.sum/n - mid; !(math.Abs(d) <= 5*se) {
			t.Errorf("%s: mean log %g, want %g ± %g", c.name, c.sum/n, mid, 5*se)
		}
	}
	a1, l1 := o.draw(3, 1)
	a2, l2 := o.draw(3, 1)
	a3, _ := o.draw(4, 1)
	if a1 != a2 || l1 != l2 || a1 == a3 {
		t.Errorf("draws: (%g, %g) then (%g, %g) for the same split and index, %g for another split", a1, l1, a2, l2, a3)
	}
}

func TestCell(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want string
	}{
		{[]float64{1, 3}, "2.000 ± 1.000"},
		{[]float64{1, math.NaN(), 3}, "2.000 ± 1.000 (2 of 3)"},
		{[]float64{math.NaN()}, "—"},
	} {
		if got := cell(c.v); got != c.want {
			t.Errorf("cell(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"no seeds", func(o *options) { o.seeds = 0 }, "≥ 1"},
		{"stage 1 is every epoch", func(o *options) { o.stage1 = o.epochs }, "-stage1"},
		{"empty range", func(o *options) { o.lrLo, o.lrHi = 1e-3, 1e-4 }, "ranges"},
		{"zero α", func(o *options) { o.alphaLo = 0 }, "ranges"},
		{"three classes", func(o *options) { o.data = "testdata/three.csv" }, "binary"},
		{"bad pair", func(o *options) { o.data = "fmnist:1,2,3" }, "two classes"},
		{"no file", func(o *options) { o.data = "testdata/none.csv" }, "none.csv"},
	} {
		o := defaults()
		c.edit(&o)
		err := run(o, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// TestRun runs the protocol on the breast-cancer data at a tiny size and checks the tables'
// shape and that each method's test accuracy is far above chance (the data are nearly
// linearly separable: a network that learned nothing would give 0.65).
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 10 small networks")
	}
	var out bytes.Buffer
	if err := run(defaults(), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"2 splits of breast_cancer_wisconsin.csv (342 train / 137 validation / 204 test)", "| accuracy |", "Table 3", "Table 12", "Table 13", "| 50 % |"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "| accuracy |") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, c := range cells[2:4] {
			var mean float64
			if _, err := fmt.Sscan(c, &mean); err != nil || !(mean >= 0.9) {
				t.Errorf("accuracy cell %q: want ≥ 0.9", c)
			}
		}
	}
}
