package main

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/bench/internal/sevtab"
	"github.com/edgebnn/edgebnn/train/data"
)

func TestMeanSE(t *testing.T) {
	for _, c := range []struct {
		x        []float64
		mean, se float64
	}{
		{[]float64{1, 2, 3}, 2, 1 / math.Sqrt(3)}, // sd 1
		{[]float64{5, 5}, 5, 0},
		{[]float64{0.5, 1.5, 2.5, 3.5}, 2, math.Sqrt(5.0/3) / 2},
	} {
		m, se := meanSE(c.x)
		if !(math.Abs(m-c.mean) <= 1e-12) || !(math.Abs(se-c.se) <= 1e-12) {
			t.Errorf("meanSE(%v) = %g, %g, want %g, %g", c.x, m, se, c.mean, c.se)
		}
	}
	if m, se := meanSE([]float64{4}); m != 4 || !math.IsNaN(se) {
		t.Errorf("one value: %g ± %g, want 4 ± NaN", m, se)
	}
	if got := cell([]float64{0.1, 0.2, 0.3}, 100, "%.2f"); got != "20.00 ± 5.77" {
		t.Errorf("cell = %q", got)
	}
}

// TestSeverityMean: the corruption average at a severity is the plain mean over the nine
// corruptions, severity 0 the clean number.
func TestSeverityMean(t *testing.T) {
	r := &result{Clean: metrics{Accuracy: 0.9}, Corrupt: map[string]metrics{}}
	want := 0.0
	for i, c := range data.Corruptions() {
		for s := 1; s <= data.MaxSeverity; s++ {
			r.Corrupt[sevtab.Key(c, s)] = metrics{Accuracy: float64(10*s + i)}
		}
		want += float64(30 + i)
	}
	want /= float64(len(data.Corruptions()))
	acc := func(m metrics) float64 { return m.Accuracy }
	if got := severityMean(r, 3, acc); !(math.Abs(got-want) <= 1e-12) {
		t.Errorf("severity 3: %g, want %g", got, want)
	}
	if got := severityMean(r, 0, acc); got != 0.9 {
		t.Errorf("severity 0: %g, want the clean 0.9", got)
	}
	if r.complete(true) || r.complete(false) {
		t.Error("a result without OOD numbers is complete")
	}
	r.OOD = map[string]map[string]float64{}
	for _, set := range oodSets {
		r.OOD[set] = map[string]float64{"entropy": 0.8, "mi": 0.7, "maxprob": 0.8}
	}
	if !r.complete(true) || !r.complete(false) {
		t.Error("a result with every OOD and corruption number is not complete")
	}
	delete(r.Corrupt, sevtab.Key(data.Corruptions()[0], data.MaxSeverity))
	if r.complete(true) {
		t.Error("a result without one corruption is complete with the corruptions")
	}
	if !r.complete(false) {
		t.Error("a result without one corruption is not complete without them")
	}
}

// TestModelCaption: -model names the network in the first table's caption (the MLP's caption as
// before the flag), and an unknown -model is refused before any model is loaded.
func TestModelCaption(t *testing.T) {
	for _, c := range []struct {
		model, want string
	}{
		{"mlp", "U versus W on Fashion-MNIST (MLP 784-256-256-5, classes 0–4, 6 epochs; mean ± s.e. over the seeds, 3 per method"},
		{"resnet", "U versus W on Fashion-MNIST (residual CNN of bench/configs/fmnist_resnet5_arch.json: conv stem, two BasicBlocks with BatchNorm, linear 32→5, classes 0–4, 6 epochs;"},
	} {
		var b strings.Builder
		tables(&b, allMethods, networks[c.model], nil, 3, 5, 10, 6, 1000, true)
		if !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("-model %s: caption %q, want it to start %q", c.model, strings.SplitN(b.String(), "\n", 2)[0], c.want)
		}
	}
	var b strings.Builder
	tables(&b, allMethods, networks["resnet"], nil, 3, 5, 10, 6, 1000, false)
	if out := b.String(); !strings.Contains(out, "(corruptions not evaluated: -no-corrupt)") || strings.Contains(out, "Fashion-MNIST-C") {
		t.Errorf("-no-corrupt: the corruption tables are printed, or the note is not:\n%s", out)
	}
	err := run([]string{"-model", "cnn", "-dir", t.TempDir()}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "mlp or resnet") {
		t.Errorf("-model cnn: error %v, want one naming mlp and resnet", err)
	}
}

// TestSelectMethods: -methods picks rows by key, keeps the table's order whatever the list's,
// and refuses an unknown key or an empty list, naming the flag.
func TestSelectMethods(t *testing.T) {
	for _, c := range []struct {
		list string
		want []string // keys; nil: an error
	}{
		{defaultMethods, []string{"det", "ensw", "ffgw", "ffgu", "fcgu", "ensembleu5"}},
		{"vifa, faem,det", []string{"det", "faem", "vifa"}},
		{"swag,swag", []string{"swag"}},
		{"det,ffgx", nil},
		{"", nil},
		{" , ", nil},
	} {
		ms, err := selectMethods(c.list)
		if c.want == nil {
			if err == nil || !strings.Contains(err.Error(), "-methods") {
				t.Errorf("%q: error %v, want one naming -methods", c.list, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.list, err)
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Key)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: methods %v, want %v", c.list, got, c.want)
		}
	}
	if err := run([]string{"-methods", "det,nope", "-dir", t.TempDir()}, io.Discard); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("run -methods det,nope: error %v, want one naming the unknown method", err)
	}
}

// TestReuse: a cached evaluation is kept per part — the clean and OOD numbers whatever the
// corruptions' state, the corruption numbers only for the run's -corrupt-limit — and dropped
// whole for another sampling seed, test limit or number of samples.
func TestReuse(t *testing.T) {
	allOOD := func() map[string]map[string]float64 {
		m := map[string]map[string]float64{}
		for _, set := range oodSets {
			m[set] = map[string]float64{"entropy": 0.8, "mi": 0.7, "maxprob": 0.8}
		}
		return m
	}
	first := sevtab.Key(data.Corruptions()[0], 1)
	n := len(data.Corruptions()) * data.MaxSeverity // 45 corrupted sets
	for _, c := range []struct {
		name    string
		cached  result
		corrupt bool
		kept    bool // any of it kept
		clean   bool // the clean and OOD numbers kept (cleanComplete)
		missing int  // corrupted sets to evaluate
		limit   int  // the kept result's CorruptLimit
	}{
		{"a -no-corrupt run's cache, now with corruptions",
			result{Seed: 42, Samples: 10, CorruptLimit: 1000, OOD: allOOD()}, true, true, true, n, 1000},
		{"one corrupted set done, same limit",
			result{Seed: 42, Samples: 10, CorruptLimit: 1000, OOD: allOOD(), Corrupt: map[string]metrics{first: {Accuracy: 0.5}}}, true, true, true, n - 1, 1000},
		{"corruptions at another limit: dropped, the clean numbers kept",
			result{Seed: 42, Samples: 10, CorruptLimit: 2000, OOD: allOOD(), Corrupt: map[string]metrics{first: {Accuracy: 0.5}}}, true, true, true, n, 1000},
		{"another limit without corruptions: kept as they are",
			result{Seed: 42, Samples: 10, CorruptLimit: 2000, OOD: allOOD(), Corrupt: map[string]metrics{first: {Accuracy: 0.5}}}, false, true, true, n - 1, 2000},
		{"corruptions only (no OOD numbers): the clean sets to evaluate",
			result{Seed: 42, Samples: 10, CorruptLimit: 1000, Corrupt: map[string]metrics{first: {Accuracy: 0.5}}}, true, true, false, n - 1, 1000},
		{"one OOD set only", result{Seed: 42, Samples: 10, CorruptLimit: 1000,
			OOD: map[string]map[string]float64{"classes": {"entropy": 0.8, "mi": 0.7, "maxprob": 0.8}}}, true, true, false, n, 1000},
		{"another seed", result{Seed: 1, Samples: 10, CorruptLimit: 1000, OOD: allOOD()}, true, false, false, 0, 0},
		{"another number of samples", result{Seed: 42, Samples: 8, CorruptLimit: 1000, OOD: allOOD()}, true, false, false, 0, 0},
		{"another test limit", result{Seed: 42, Samples: 10, CorruptLimit: 1000, TestLimit: 200, OOD: allOOD()}, true, false, false, 0, 0},
	} {
		r := c.cached
		got := reuse(&r, 42, 10, 1000, 0, c.corrupt)
		if (got != nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", c.name, got != nil, c.kept)
			continue
		}
		if got == nil {
			continue
		}
		if got.cleanComplete() != c.clean || len(got.missing()) != c.missing || got.CorruptLimit != c.limit {
			t.Errorf("%s: clean kept %v, %d corrupted sets missing, limit %d; want %v, %d, %d",
				c.name, got.cleanComplete(), len(got.missing()), got.CorruptLimit, c.clean, c.missing, c.limit)
		}
		if got.OOD == nil || got.Corrupt == nil {
			t.Errorf("%s: a nil map kept (the evaluation writes into both)", c.name)
		}
	}
	if reuse(nil, 42, 10, 1000, 0, true) != nil {
		t.Error("no cache: something kept")
	}
}

// TestSeverity5Cells: the per-corruption table at severity 5 prints mean ± s.e. over the seeds of
// accuracy and ECE (two seeds: accuracy 40 and 60 %, ECE 4 and 6 % in every corruption → mean
// 50, s.e. 10; mean 5, s.e. 1), and the mean alone for one seed.
func TestSeverity5Cells(t *testing.T) {
	res := func(acc, ece float64) *result {
		r := &result{Corrupt: map[string]metrics{}}
		for _, c := range data.Corruptions() {
			for s := 1; s <= data.MaxSeverity; s++ {
				r.Corrupt[sevtab.Key(c, s)] = metrics{Accuracy: acc, ECE: ece}
			}
		}
		return r
	}
	det, other := allMethods[0], allMethods[2]
	entries := []*entry{{Method: det, Seed: 1, Res: res(0.4, 0.04)}, {Method: det, Seed: 2, Res: res(0.6, 0.06)},
		{Method: other, Seed: 1, Res: res(0.7, 0.03)}}
	var b strings.Builder
	tables(&b, []method{det, other}, networks["mlp"], entries, 2, 5, 10, 6, 1000, true)
	_, table, ok := strings.Cut(b.String(), "Per corruption at severity 5: accuracy % / ECE % (mean ± s.e. over seeds).")
	if !ok {
		t.Fatalf("no per-corruption table:\n%s", b.String())
	}
	for _, want := range []string{"| " + det.Name + strings.Repeat(" | 50.0 ± 10.0 / 5.0 ± 1.0", len(data.Corruptions())) + " |",
		"| " + other.Name + strings.Repeat(" | 70.0 / 3.0", len(data.Corruptions())) + " |"} {
		if !strings.Contains(table, want) {
			t.Errorf("want the row %q in:\n%s", want, table)
		}
	}
}
