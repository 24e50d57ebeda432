package main

import (
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// writeRefDraws writes draws in the reference run's four files under dir; each row of cols is
// (μ₀, β₁, β₂, σ, log q).
func writeRefDraws(t *testing.T, dir string, rows [][5]float64) {
	t.Helper()
	header := []string{"b", "w1,w2", "b", "qs"}
	for i, f := range refMFGFiles {
		var sb strings.Builder
		sb.WriteString(header[i] + "\n")
		for _, r := range rows {
			switch i {
			case 0:
				fmt.Fprintf(&sb, "%.17g\n", r[0])
			case 1:
				fmt.Fprintf(&sb, "%.17g,%.17g\n", r[1], r[2])
			case 2:
				fmt.Fprintf(&sb, "%.17g\n", r[3])
			case 3:
				fmt.Fprintf(&sb, "%.17g\n", r[4])
			}
		}
		writeOne(t, filepath.Join(dir, f.name), sb.String())
	}
}

// TestRefSamplesEvidence: draws from a known q in (μ₀, β₁, β₂, ρ), written in the
// reference run's format with their exact log q, give an importance-sampled log evidence that
// agrees with linRegLogEvidence's quadrature (which integrates (μ₀, β₁, β₂) out in closed form
// and never calls the model's LogJoint) for both targets, within 4 standard errors of the
// estimate — a check of the reader, of the σ ↔ ρ parameterisation and of the quadrature. Draws
// paired with other draws' log q must give a larger k̂.
func TestRefSamplesEvidence(t *testing.T) {
	dir := t.TempDir()
	// q: a 4-dimensional Student-t (ν = 4) whose (μ₀, β₁, β₂) block is 1.5² times the exact
	// conditional posterior covariance at σ = 1.2 — the posterior is a narrow ridge (β₁ and β₂ are
	// correlated −0.99: the two predictors are nearly collinear) that an axis-aligned q misses — and
	// ρ independent with scale 1.
	x1, x2, _ := bfvi.PaperLinRegData()
	X := mat.NewDense(len(x1), 3, nil)
	for i := range x1 {
		X.Set(i, 0, 1)
		X.Set(i, 1, x1[i])
		X.Set(i, 2, x2[i])
	}
	var prec mat.SymDense
	prec.SymOuterK(1/(1.2*1.2), X.T())
	for i := 0; i < 3; i++ {
		prec.SetSym(i, i, prec.At(i, i)+0.01)
	}
	var pc mat.Cholesky
	if !pc.Factorize(&prec) {
		t.Fatal("posterior precision not positive definite")
	}
	var cov mat.SymDense
	if err := pc.InverseTo(&cov); err != nil {
		t.Fatal(err)
	}
	full := mat.NewSymDense(4, nil)
	for i := 0; i < 3; i++ {
		for j := i; j < 3; j++ {
			full.SetSym(i, j, 2.25*cov.At(i, j))
		}
	}
	full.SetSym(3, 3, 1)
	var ch mat.Cholesky
	if !ch.Factorize(full) {
		t.Fatal("proposal covariance not positive definite")
	}
	var L mat.TriDense
	ch.LTo(&L)
	r := rand.New(rand.NewPCG(1, 2))
	const nu, dim = 4.0, 4.0
	mean := [4]float64{-0.5, -0.35, -0.1, 0.8}
	logc := lgamma((nu+dim)/2) - lgamma(nu/2) - dim/2*math.Log(nu*math.Pi) - 0.5*ch.LogDet()
	rows := make([][5]float64, 200000)
	for i := range rows {
		chi2 := 0.0
		for k := 0; k < int(nu); k++ {
			e := r.NormFloat64()
			chi2 += e * e
		}
		var e [4]float64
		q2 := 0.0
		for j := range e {
			e[j] = r.NormFloat64() * math.Sqrt(nu/chi2)
			q2 += e[j] * e[j]
		}
		var z [4]float64
		for j := range z {
			z[j] = mean[j]
			for k := 0; k <= j; k++ {
				z[j] += L.At(j, k) * e[k]
			}
		}
		lq := logc - (nu+dim)/2*math.Log1p(q2/nu)
		rows[i] = [5]float64{z[0], z[1], z[2], f64.Softplus(z[3]), lq}
	}
	writeRefDraws(t, dir, rows)
	d, err := readRefDraws(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, reference := range []bool{true, false} {
		lr := d.logRatios(reference, 0)
		est := logMeanExp(lr)
		// the estimate's standard error on the log scale: sd(w)/(√n·mean(w)), w = exp(lr − max)
		mx := math.Inf(-1)
		for _, v := range lr {
			mx = math.Max(mx, v)
		}
		s1, s2 := 0.0, 0.0
		for _, v := range lr {
			w := math.Exp(v - mx)
			s1 += w
			s2 += w * w
		}
		n := float64(len(lr))
		m := s1 / n
		se := math.Sqrt((s2/n-m*m)/n) / m
		exact, err := linRegLogEvidence(reference)
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(est-exact) <= 4*se+1e-3) {
			t.Errorf("reference target %v: importance-sampled log evidence %.4f (s.e. %.4f), quadrature %.4f", reference, est, se, exact)
		}
		t.Logf("reference target %v: importance-sampled %.4f ± %.4f, quadrature %.4f", reference, est, se, exact)
	}
}

// TestRefSamplesBadInput: the reader names the file and what is wrong.
func TestRefSamplesBadInput(t *testing.T) {
	good := [][5]float64{{0, 1, 2, 1, -3}, {0.5, 1, 2, 2, -4}}
	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"missing file", func(dir string) { os.Remove(filepath.Join(dir, refMFGFiles[3].name)) }, "2D_MFG_qs_samples.csv.gz"},
		{"not gzip", func(dir string) { os.WriteFile(filepath.Join(dir, refMFGFiles[0].name), []byte("b\n1\n"), 0o644) }, "2D_MFG_intercept_samples.csv.gz"},
		{"row counts", func(dir string) {
			writeOne(t, filepath.Join(dir, refMFGFiles[2].name), "b\n1\n")
		}, "1 draws"},
		{"NaN", func(dir string) { writeOne(t, filepath.Join(dir, refMFGFiles[0].name), "b\nNaN\n1\n") }, "not a finite number"},
		{"fields", func(dir string) { writeOne(t, filepath.Join(dir, refMFGFiles[1].name), "w1,w2\n1\n2\n") }, "1 fields, want 2"},
		{"sigma", func(dir string) { writeOne(t, filepath.Join(dir, refMFGFiles[2].name), "b\n1\n-2\n") }, "σ = -2 is not positive"},
		{"empty", func(dir string) { writeOne(t, filepath.Join(dir, refMFGFiles[0].name), "") }, "no header line"},
		{"directory", func(dir string) {
			p := filepath.Join(dir, refMFGFiles[1].name)
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, "not a regular file"},
	} {
		dir := t.TempDir()
		writeRefDraws(t, dir, good)
		tc.edit(dir)
		_, err := readRefDraws(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if err := needRefSamples(options{}); err == nil {
		t.Error("needRefSamples accepted no -ref")
	}
}

// writeOne writes text gzipped to path.
func writeOne(t *testing.T, path, text string) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(fh)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}
