package bfvi

import (
	"fmt"

	"github.com/edgebnn/edgebnn/train/eval"
)

// KLRow is one line of a KL-versus-degree table.
type KLRow struct {
	// Method is "BF-VI" or "Gaussian-VI".
	Method string
	// Degree is M (0 for Gaussian VI).
	Degree int
	// KL holds KL(q‖p) by quadrature for every run.
	KL []float64
	// Mean and SE are the mean over runs and its standard error (sd/√runs; 0 for one run).
	Mean, SE float64
}

// KLvsDegree fits a 1-D model with BF-VI for every degree and with mean-field Gaussian VI, runs
// times each (run r uses seed cfg.Seed + r), and returns KL(q‖p) against the normalised posterior
// logPost (KLQuadrature with 4000 intervals): paper 002's Figures 2–3, lower panels. Rows follow
// degrees, then one Gaussian-VI row.
func KLvsDegree(m Model, logPost LogDensity1D, degrees []int, runs int, cfg TrainConfig) ([]KLRow, error) {
	if m == nil || logPost == nil {
		return nil, fmt.Errorf("bfvi: KL vs degree needs a model and its posterior density")
	}
	if m.Dim() != 1 {
		return nil, fmt.Errorf("bfvi: KL vs degree needs a 1-D model, got dimension %d", m.Dim())
	}
	if runs < 1 {
		return nil, fmt.Errorf("bfvi: KL vs degree: %d runs", runs)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var rows []KLRow
	do := func(method string, deg int) error {
		row := KLRow{Method: method, Degree: deg}
		for r := 0; r < runs; r++ {
			c := cfg
			c.Seed = cfg.Seed + uint64(r)
			var q *MeanField
			var err error
			if deg == 0 {
				q, _, err = FitGaussianVI(m, c)
			} else {
				q, _, err = FitBFVI(m, deg, c)
			}
			if err != nil {
				return fmt.Errorf("bfvi: KL vs degree, %s M=%d run %d: %w", method, deg, r, err)
			}
			kl, err := KLQuadrature(q.Coords[0], logPost, 4000)
			if err != nil {
				return fmt.Errorf("bfvi: KL vs degree, %s M=%d run %d: %w", method, deg, r, err)
			}
			row.KL = append(row.KL, kl)
		}
		row.Mean, row.SE = meanSE(row.KL)
		rows = append(rows, row)
		return nil
	}
	for _, d := range degrees {
		if d < 1 || d > MaxDegree {
			return nil, fmt.Errorf("bfvi: KL vs degree: degree %d out of range [1, %d]", d, MaxDegree)
		}
		if err := do("BF-VI", d); err != nil {
			return nil, err
		}
	}
	if err := do("Gaussian-VI", 0); err != nil {
		return nil, err
	}
	return rows, nil
}

// meanSE is eval.MeanSE.
func meanSE(x []float64) (mean, se float64) { return eval.MeanSE(x) }
