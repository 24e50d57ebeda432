package bnn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// TestFFGTrainingSampling: an FFG layer's training outputs have the closed-form moments
// whichever way it samples — mean x·μ + μ_b, variance Σ x²σ² + σ_b² — and the two ways differ
// only in how two inputs of one batch covary: with the local reparameterisation (bayesianize's
// default) not at all, with local_reparameterization false (one W and b per pass) by Σ x₁x₂σ² + σ_b².
// Tolerances: 5 standard errors of N passes (var·√(2/N) for a variance, √((1+ρ²)/N)·σ₁σ₂ for a
// covariance).
func TestFFGTrainingSampling(t *testing.T) {
	const dIn, n = 3, 4000
	x := []float64{0.8, -1.2, 0.5, 0.6, -1.0, 0.8} // two inputs of one batch
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local_reparameterization=%v", local), func(t *testing.T) {
			nodes, err := convert.MLP([]int{dIn, 1}, "relu")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := bnnconfig.Parse(fmt.Appendf(nil, `{"inference": "ffg", "init_sd": 0.4, "local_reparameterization": %v}`, local))
			if err != nil {
				t.Fatal(err)
			}
			spec, inits, err := bnn.SpecFromNodes(nodes, cfg, []int{dIn}, runtime.Classification, 0)
			if err != nil {
				t.Fatal(err)
			}
			net, err := bnn.New[float64](spec, inits, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			var wm, bm []float64
			var sd float64
			for _, p := range net.Params() {
				switch {
				case strings.HasSuffix(p.Name, ".weight_mean"):
					wm = p.Value
				case strings.HasSuffix(p.Name, ".bias_mean"):
					bm = p.Value
				case strings.HasSuffix(p.Name, "._weight_sd"):
					sd = math.Log1p(math.Exp(p.Value[0]))
				}
			}
			if wm == nil || bm == nil || sd == 0 {
				t.Fatal("no weight_mean, bias_mean or _weight_sd")
			}
			var mean, vars [2]float64
			cov := sd * sd // the bias's share of the whole-weight covariance
			for j := range 2 {
				mean[j], vars[j] = bm[0], sd*sd
				for i := range dIn {
					mean[j] += x[j*dIn+i] * wm[i]
					vars[j] += x[j*dIn+i] * x[j*dIn+i] * sd * sd
				}
				if local {
					vars[j] += 1e-6 // bayesianize's EPS in the output variance
				}
			}
			for i := range dIn {
				cov += x[i] * x[dIn+i] * sd * sd
			}
			if local {
				cov = 0
			}
			tp := autodiff.NewTape[float64]()
			var s1, s2 [2]float64
			var s12 float64
			for k := range n {
				tp.Reset()
				net.Seed(1, int64(k))
				out := net.Forward(tp, tp.Const(x, 2, dIn), true).Value()
				for j := range 2 {
					d := out[j] - mean[j]
					s1[j] += d
					s2[j] += d * d
				}
				s12 += (out[0] - mean[0]) * (out[1] - mean[1])
			}
			for j := range 2 {
				if m, se := s1[j]/n, math.Sqrt(vars[j]/n); !(math.Abs(m) <= 5*se) {
					t.Errorf("input %d: mean off by %.4g, standard error %.4g", j, m, se)
				}
				if v, se := s2[j]/n, vars[j]*math.Sqrt(2.0/n); !(math.Abs(v-vars[j]) <= 5*se) {
					t.Errorf("input %d: variance %.5g, want %.5g ± %.2g", j, v, vars[j], se)
				}
			}
			rho := cov / math.Sqrt(vars[0]*vars[1])
			if c, se := s12/n, math.Sqrt((1+rho*rho)/n*vars[0]*vars[1]); !(math.Abs(c-cov) <= 5*se) {
				t.Errorf("covariance of the two inputs %.5g, want %.5g ± %.2g", c, cov, se)
			}
		})
	}
}
