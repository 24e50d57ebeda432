package main

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// refMFGDir is where tensorchiefs/bfvi keeps the saved draws of its mean-field Gaussian fit of the
// toy regression (R/eval_regression_2D.R reads them), relative to a checkout of that repository.
const refMFGDir = "R/runs/regression_2D/MF_GAUSS_VI"

// refMFGFiles are the four files of that run: one CSV column each (with a header line) for the
// intercept μ₀, σ and log q, two for (β₁, β₂), one row per draw.
var refMFGFiles = []struct {
	name string
	cols int
}{
	{"2D_MFG_intercept_samples.csv.gz", 1},
	{"2D_MFG_w_samples.csv.gz", 2},
	{"2D_MFG_sigma_samples.csv.gz", 1},
	{"2D_MFG_qs_samples.csv.gz", 1},
}

// needRefSamples reports whether -ref names a checkout of tensorchiefs/bfvi with the saved draws.
func needRefSamples(o options) error {
	if o.refDir == "" {
		return errors.New("-ref names no checkout of tensorchiefs/bfvi (its " + refMFGDir + " draws)")
	}
	for _, f := range refMFGFiles {
		if _, err := os.Stat(filepath.Join(o.refDir, refMFGDir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// refDraws are the reference run's draws: θ = (μ₀, β₁, β₂, σ) and the log q it saved with each.
type refDraws struct {
	theta [][4]float64
	logQ  []float64
}

// maxRefDraws bounds what readRefDraws accepts (the run saved 100 000).
const maxRefDraws = 10_000_000

// readRefColumns reads a gzipped CSV of cols numeric columns after one header line.
func readRefColumns(path string, cols int) ([][]float64, error) {
	// Checked before opening: opening a FIFO for reading would block until a writer comes.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(io.LimitReader(zr, 1<<30))
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: no header line", path)
	}
	var rows [][]float64
	for line := 2; sc.Scan(); line++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(fields) != cols {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, len(fields), cols)
		}
		row := make([]float64, cols)
		for j, s := range fields {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: field %d is %q, not a finite number", path, line, j+1, s)
			}
			row[j] = v
		}
		if len(rows) == maxRefDraws {
			return nil, fmt.Errorf("%s: more than %d draws", path, maxRefDraws)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// readRefDraws reads the four files under dir and checks that they describe the same draws.
func readRefDraws(dir string) (*refDraws, error) {
	cols := make([][][]float64, len(refMFGFiles))
	for i, f := range refMFGFiles {
		c, err := readRefColumns(filepath.Join(dir, f.name), f.cols)
		if err != nil {
			return nil, err
		}
		if len(c) == 0 || (i > 0 && len(c) != len(cols[0])) {
			return nil, fmt.Errorf("%s: %d draws, %s has %d", f.name, len(c), refMFGFiles[0].name, len(cols[0]))
		}
		cols[i] = c
	}
	d := &refDraws{theta: make([][4]float64, len(cols[0])), logQ: make([]float64, len(cols[0]))}
	for s := range d.theta {
		sd := cols[2][s][0]
		if !(sd > 0) {
			return nil, fmt.Errorf("%s: draw %d: σ = %g is not positive", refMFGFiles[2].name, s+1, sd)
		}
		d.theta[s] = [4]float64{cols[0][s][0], cols[1][s][0], cols[1][s][1], sd}
		d.logQ[s] = cols[3][s][0]
	}
	return d, nil
}

// logRatios returns log p − log q for every draw, with q's saved log density taken as a density in
// ρ = softplus⁻¹(σ), the reference's parameterisation: against the reference script's target
// (bfvi.LinReg.ReferenceSigma, no Jacobian) or the model's posterior in ρ (with it). shift pairs
// draw s with the log q of draw (s·shift + 1) mod n instead (shift 0: its own).
func (d *refDraws) logRatios(reference bool, shift int) []float64 {
	m := bfvi.PaperLinReg()
	m.ReferenceSigma = reference
	n := len(d.theta)
	out := make([]float64, n)
	x := make([]float64, 4)
	for s, th := range d.theta {
		x[0], x[1], x[2], x[3] = th[0], th[1], th[2], f64.SoftplusInv(th[3])
		q := d.logQ[s]
		if shift > 0 {
			q = d.logQ[(s*shift+1)%n]
		}
		out[s] = m.LogJoint(x, nil) - q
	}
	return out
}

// logMeanExp is log((1/n) Σ exp(v)).
func logMeanExp(v []float64) float64 { return floats.LogSumExp(v) - math.Log(float64(len(v))) }

// linRegLogEvidence is the toy regression's log evidence by 1-D quadrature: given σ, (μ₀, β₁, β₂)
// ~ N(0, 10² I) integrates out in closed form, y | σ ~ N(0, σ²I + 100·XXᵀ) with X = [1 x₁ x₂];
// the remaining integral over u = log σ, u ~ N(0.5, 1), is a midpoint sum on [−12, 8]. With
// reference set it is the reference script's target's normalising constant instead: its
// density in ρ lacks the Jacobian σ′(ρ) = 1 − e^{−σ}, i.e. the integrand carries 1/(1 − e^{−σ}).
func linRegLogEvidence(reference bool) (float64, error) {
	x1, x2, y := bfvi.PaperLinRegData()
	n := len(y)
	X := mat.NewDense(n, 3, nil)
	for i := range y {
		X.Set(i, 0, 1)
		X.Set(i, 1, x1[i])
		X.Set(i, 2, x2[i])
	}
	var xxt mat.SymDense
	xxt.SymOuterK(100, X)
	yv := mat.NewVecDense(n, append([]float64(nil), y...))
	const lo, hi, steps = -12.0, 8.0, 20000
	h := (hi - lo) / steps
	terms := make([]float64, 0, steps)
	for k := 0; k < steps; k++ {
		u := lo + (float64(k)+0.5)*h
		sd := math.Exp(u)
		c := mat.NewSymDense(n, nil)
		c.CopySym(&xxt)
		for i := 0; i < n; i++ {
			c.SetSym(i, i, c.At(i, i)+sd*sd)
		}
		var ch mat.Cholesky
		if !ch.Factorize(c) {
			return 0, fmt.Errorf("toy regression evidence: covariance not positive definite at σ = %g", sd)
		}
		var a mat.VecDense
		if err := ch.SolveVecTo(&a, yv); err != nil {
			return 0, err
		}
		lv := -0.5*mat.Dot(yv, &a) - 0.5*ch.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)
		lv += -0.5*(u-0.5)*(u-0.5) - 0.5*math.Log(2*math.Pi)
		if reference {
			lv -= math.Log(-math.Expm1(-sd))
		}
		terms = append(terms, lv+math.Log(h))
	}
	return floats.LogSumExp(terms), nil
}

// runLinRegRefSamples computes k̂ of the reference repository's own mean-field Gaussian fit of the
// toy regression from the draws and log q it saved (tensorchiefs/bfvi, R/runs/regression_2D/
// MF_GAUSS_VI, 100 000 draws; R/eval_regression_2D.R computes k̂ the same way with loo::psis):
// whether the paper's 1.34 for that family is what its saved run gives.
func runLinRegRefSamples(o options) (string, error) {
	d, err := readRefDraws(filepath.Join(o.refDir, refMFGDir))
	if err != nil {
		return "", err
	}
	n := len(d.theta)
	if o.quick {
		n = min(n, 2000)
		d.theta, d.logQ = d.theta[:n], d.logQ[:n]
	}
	counts := []int{1000, 10000, n}
	if n < 10000 {
		counts = []int{n / 2, n}
	}
	var s strings.Builder
	s.WriteString("### Toy regression: k̂ of the reference repository's saved mean-field Gaussian run\n\n")
	fmt.Fprintf(&s, "tensorchiefs/bfvi keeps the draws of its mean-field Gaussian fit and their log q (%s, %d draws; "+
		"R/eval_regression_2D.R computes k̂ from such log ratios with loo::psis). log q taken as a density in "+
		"ρ = softplus⁻¹(σ), the reference's parameterisation; the target either the reference script's (no "+
		"Jacobian of σ) or the model's posterior in ρ; k̂ of the first N draws (paper 002: 1.34; ours, 5 seeds: "+
		"0.91 ± 0.04, 0.94 ± 0.04 on the reference script's target). \"Mispaired\": each draw's log ratio "+
		"formed with another draw's log q.\n\n", refMFGDir, n)
	s.WriteString("| target | pairing |")
	for _, c := range counts {
		fmt.Fprintf(&s, " k̂, N = %d |", c)
	}
	s.WriteString(" log evidence, importance-sampled (all draws) | log evidence, quadrature |\n|---|---|" +
		strings.Repeat("---:|", len(counts)+2) + "\n")
	for _, reference := range []bool{true, false} {
		exact, err := linRegLogEvidence(reference)
		if err != nil {
			return "", err
		}
		for _, shift := range []int{0, 7919} {
			lr := d.logRatios(reference, shift)
			label := map[bool]string{true: "reference script's", false: "model (with the Jacobian)"}[reference]
			pair := map[bool]string{true: "own log q", false: "mispaired"}[shift == 0]
			fmt.Fprintf(&s, "| %s | %s |", label, pair)
			for _, c := range counts {
				k, err := bfvi.ParetoK(lr[:c])
				if err != nil {
					return "", fmt.Errorf("k̂ of %d draws: %w", c, err)
				}
				fmt.Fprintf(&s, " %.2f |", k)
			}
			fmt.Fprintf(&s, " %.3f | %.3f |\n", logMeanExp(lr), exact)
		}
	}
	col := func(j int) []float64 {
		c := make([]float64, len(d.theta))
		for i, t := range d.theta {
			c[i] = t[j]
		}
		return c
	}
	mu0, b1, b2, sd := col(0), col(1), col(2), col(3)
	fmt.Fprintf(&s, "\nThe saved draws against a mean-field Gaussian in (μ₀, β₁, β₂): correlations (it would have none) "+
		"μ₀–β₁ %.3f, μ₀–β₂ %.3f, β₁–β₂ %.3f, β₁–σ %.3f; excess kurtosis (a Gaussian marginal has 0) μ₀ %.2f, "+
		"β₁ %.2f, β₂ %.2f.\n", stat.Correlation(mu0, b1, nil), stat.Correlation(mu0, b2, nil),
		stat.Correlation(b1, b2, nil), stat.Correlation(b1, sd, nil),
		stat.ExKurtosis(mu0, nil), stat.ExKurtosis(b1, nil), stat.ExKurtosis(b2, nil))
	return s.String(), nil
}
