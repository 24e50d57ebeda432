package runtime_test

import (
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestPredictorSamples: Model.PredictorSamples is the K the Predictor made with the same options
// draws, also where the policy's K gives way: Options.Mean on an ensemble draws each member
// once, a deterministic model draws once.
func TestPredictorSamples(t *testing.T) {
	conf := 0.5
	ens, singles, _ := buildEnsemble(t, ensMLPSpec(runtime.Classification, 8), 3)
	for _, c := range []struct {
		name   string
		m      *runtime.Model
		policy int // the policy's K
		opts   runtime.Options
		want   int
	}{
		{"ensemble of 8, policy K 2", ens, 2, runtime.Options{}, 2},
		{"ensemble of 8, policy K 2, Mean", ens, 2, runtime.Options{Mean: true}, 8},
		{"ensemble of 8, no policy K", ens, 0, runtime.Options{}, 8},
		{"ensemble of 8, K 5", ens, 2, runtime.Options{Samples: 5}, 5},
		{"deterministic, policy K 32", singles[0], 32, runtime.Options{}, 1},
		{"deterministic, K 7", singles[0], 0, runtime.Options{Samples: 7}, 1},
	} {
		m, err := c.m.WithDeployment(nil, &runtime.Policy{Version: 1, MinConfidence: &conf, Samples: c.policy})
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.NewPredictor(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, k := p.Options().Samples, m.PredictorSamples(c.opts); got != c.want || k != c.want {
			t.Errorf("%s: the predictor draws K = %d, PredictorSamples says %d; want %d", c.name, got, k, c.want)
		}
		p.Close()
	}
}
