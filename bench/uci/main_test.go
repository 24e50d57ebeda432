package main

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/bench/internal/tabular"
	"github.com/edgebnn/edgebnn/train/data"
)

const bostonCSV = "../data/boston_housing.csv"

// TestSplitStandardise checks that a split partitions the data, is the same for the same seed and
// differs for another split index, and that the training split standardises to mean 0 and
// standard deviation 1 in every column.
func TestSplitStandardise(t *testing.T) {
	all, err := data.ReadCSVFile(bostonCSV, data.CSVOptions{Regression: true})
	if err != nil {
		t.Fatal(err)
	}
	if all.N != 506 || all.Dim != 13 {
		t.Fatalf("%d rows of %d features, want 506 of 13", all.N, all.Dim)
	}
	tr, te, err := split(all, 0.1, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 455 || te.N != 51 {
		t.Fatalf("split sizes %d/%d, want 455/51", tr.N, te.N)
	}
	sum := 0.0
	for _, d := range []*data.Dataset{tr, te} {
		for _, y := range d.Targets {
			sum += float64(y)
		}
	}
	want := 0.0
	for _, y := range all.Targets {
		want += float64(y)
	}
	if !(math.Abs(sum-want) <= 1e-3) {
		t.Errorf("the splits' targets sum to %g, the data's to %g", sum, want)
	}
	for _, tc := range []struct {
		s    uint64
		same bool
	}{{3, true}, {4, false}} {
		_, te2, err := split(all, 0.1, 0, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if same := te2.Targets[0] == te.Targets[0] && te2.Targets[1] == te.Targets[1] && te2.Targets[2] == te.Targets[2]; same != tc.same {
			t.Errorf("split %d's test set equals split 3's: %v, want %v", tc.s, same, tc.same)
		}
	}
	trS := tabular.Fit(tr).Apply(tr)
	st := tabular.Fit(trS)
	if len(st.XMean) == 0 || len(st.XSD) != len(st.XMean) {
		t.Fatalf("refit: %d feature means, %d sds", len(st.XMean), len(st.XSD))
	}
	for j := range st.XMean {
		if !(math.Abs(st.XMean[j]) <= 1e-5) || !(math.Abs(st.XSD[j]-1) <= 1e-5) {
			t.Errorf("feature %d: mean %g, sd %g after standardising", j, st.XMean[j], st.XSD[j])
		}
	}
	if !(math.Abs(st.YMean) <= 1e-5) || !(math.Abs(st.YSD-1) <= 1e-5) {
		t.Errorf("target: mean %g, sd %g after standardising", st.YMean, st.YSD)
	}
}

// TestMixture checks the Monte Carlo predictive log-likelihood against closed forms.
func TestMixture(t *testing.T) {
	gauss := func(y, m, v float64) float64 { return -0.5*math.Log(2*math.Pi*v) - (y-m)*(y-m)/(2*v) }
	for _, tc := range []struct {
		name     string
		f        []float64
		y, v     float64
		ll, mean float64
	}{
		{"one sample", []float64{2}, 3, 4, gauss(3, 2, 4), 2},
		{"equal samples", []float64{1, 1, 1}, 0, 1, gauss(0, 1, 1), 1},
		{"two samples", []float64{-1, 1}, 0.5, 0.25, math.Log(0.5*math.Exp(gauss(0.5, -1, 0.25)) + 0.5*math.Exp(gauss(0.5, 1, 0.25))), 0},
		{"far (log-sum-exp)", []float64{1000, 1001}, 0, 1, gauss(0, 1000, 1) + math.Log(0.5), 1000.5},
	} {
		ll, mean := mixture(tc.f, tc.y, tc.v)
		if !(math.Abs(ll-tc.ll) <= 1e-9*math.Max(1, math.Abs(tc.ll))) || !(math.Abs(mean-tc.mean) <= 1e-12) {
			t.Errorf("%s: got %g, %g, want %g, %g", tc.name, ll, mean, tc.ll, tc.mean)
		}
	}
	if got := meanSE([]float64{1, 2, 3}, "%.3f"); got != "2.000 ± 0.577" {
		t.Errorf("meanSE = %q", got)
	}
}

// TestRunSmoke runs every method for one epoch on one split and checks the table's rows.
func TestRunSmoke(t *testing.T) {
	o := options{csv: bostonCSV, splits: 1, epochs: 1, faEpochs: 1, lr: 0.01, sgdLR: 0.01, alpha: 1, samples: 8,
		testFrac: 0.1, work: t.TempDir(), methods: allMethods}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, m := range allMethods {
		if !strings.Contains(out.String(), "| "+m+" | -") {
			t.Errorf("no row with a finite log-likelihood for %s in\n%s", m, out.String())
		}
	}
	o.methods = []string{"nope"}
	if err := run(o, &out); err == nil {
		t.Error("an unknown method is not an error")
	}
}

// TestRunTrainSize runs FFG-U with both conditional KLs on 16 training points (β = 16/51 for the
// output layer): the header states 16 training points, both rows are finite, and with the whole
// split (β = 1 for every layer) the two methods score the same.
func TestRunTrainSize(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four small models")
	}
	o := options{csv: bostonCSV, splits: 1, epochs: 20, lr: 0.01, alpha: 1, samples: 8, testFrac: 0.1,
		work: t.TempDir(), methods: extraMethods, fixedPrecision: 7, trainSize: 16}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(16 train / 51 test)") {
		t.Errorf("header does not state 16 training points:\n%s", out.String())
	}
	for _, m := range extraMethods {
		if !strings.Contains(out.String(), "| "+m+" | -") {
			t.Errorf("no row with a finite log-likelihood for %s in\n%s", m, out.String())
		}
	}
	o.trainSize, o.epochs = 0, 1
	out.Reset()
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	a, b := rows[len(rows)-2], rows[len(rows)-1]
	if _, ra, _ := strings.Cut(a, "ffg_u |"); !strings.HasPrefix(b, "| ffg_u-fs |") || !strings.HasSuffix(b, ra) {
		t.Errorf("N = 455: the rows differ:\n%s\n%s", a, b)
	}
	o.trainSize = 1000
	if err := run(o, &out); err == nil || !strings.Contains(err.Error(), "-train-size 1000") {
		t.Errorf("-train-size 1000: error %v", err)
	}
}

// TestMedian: odd and even counts, unsorted input left as it was.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := slices.Clone(tc.x)
		if got := median(tc.x); got != tc.want || !slices.Equal(in, tc.x) {
			t.Errorf("median(%v) = %v (input now %v), want %v", in, got, tc.x, tc.want)
		}
	}
}
