package train

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// Toy1DSummary measures the in-between uncertainty of a 1-D regression model (paper 003, J.1):
// the epistemic standard deviation at x = 0 (between the two training clusters) and its mean
// over the training inputs.
type Toy1DSummary struct {
	EpistemicSDAt0       float64 `json:"epistemic_sd_at_0"`
	EpistemicSDTrainMean float64 `json:"epistemic_sd_train_mean"`
	// Ratio is EpistemicSDAt0 / EpistemicSDTrainMean (0 when the latter is 0).
	Ratio      float64 `json:"ratio"`
	TestRMSE   float64 `json:"grid_rmse"`
	TotalSDAt0 float64 `json:"total_sd_at_0"`
}

// Toy1D computes Toy1DSummary for a model with one input and one output.
func Toy1D(m *runtime.Model, train *data.Dataset, opt runtime.Options) (*Toy1DSummary, error) {
	if m.InputSize() != 1 || m.OutputSize() != 1 || m.Task() != runtime.Regression {
		return nil, fmt.Errorf("train: Toy1D needs a 1-input, 1-output regression model")
	}
	zero := &data.Dataset{Name: "x=0", N: 1, Dim: 1, Shape: []int{1}, X: []float32{0}, Targets: []float32{0}, Outputs: 1}
	p0, err := eval.Predict(m, zero, opt, 1)
	if err != nil {
		return nil, err
	}
	pt, err := eval.Predict(m, train, opt, 0)
	if err != nil {
		return nil, err
	}
	s := &Toy1DSummary{EpistemicSDAt0: math.Sqrt(float64(p0.EpistemicVar[0])), TotalSDAt0: math.Sqrt(float64(p0.Var[0]))}
	for _, v := range pt.EpistemicVar {
		s.EpistemicSDTrainMean += math.Sqrt(float64(v))
	}
	s.EpistemicSDTrainMean /= float64(len(pt.EpistemicVar))
	if s.EpistemicSDTrainMean > 0 {
		s.Ratio = s.EpistemicSDAt0 / s.EpistemicSDTrainMean // 0 for a deterministic model
	}
	grid := data.Toy1DGrid(201, -2, 2)
	pg, err := eval.Predict(m, grid, opt, 0)
	if err != nil {
		return nil, err
	}
	r, err := eval.Regress(pg.Mean, pg.Var, grid.Targets)
	if err != nil {
		return nil, err
	}
	s.TestRMSE = r.RMSE
	return s, nil
}

// LoadEvalData loads the test set (and the OOD set: held-out classes or the ood key's) that cfg
// describes, without building a network.
func LoadEvalData(cfg Config) (test, ood *data.Dataset, err error) {
	if err := cfg.validateData(); err != nil {
		return nil, nil, err
	}
	t := &Trainer{Config: cfg, evalOnly: true}
	if err := t.loadData(); err != nil {
		return nil, nil, err
	}
	return t.Test, t.OOD, nil
}
