package convert

import (
	"fmt"
	"math"
	"strings"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/quant"
	"github.com/edgebnn/edgebnn/runtime"
)

// MaxAbsParameter bounds the magnitude of every value read from a
// checkpoint (1e15). A posterior mean, a pre-softplus scale or a weight
// beyond it is not a trained value: the runtime squares and sums such
// values (Z Zᵀ, the Cholesky factors, the sampled weights), which then
// overflow float32 and make every prediction NaN.
const MaxAbsParameter = runtime.MaxAbsParameter

// scaleKind says what a tensor's values must satisfy besides being finite.
type scaleKind int

const (
	anyValue    scaleKind = iota
	positive              // a standard deviation: > 0
	nonNegative           // a variance: ≥ 0
)

// tensorScale classifies a tensor by its name. The underscored posterior
// scales of bayesianize (_weight_sd, _inducing_sd, _lamda, _d_row, …) are
// stored before softplus and may take any finite value; the priors'
// standard deviations and the variances are stored as they are used.
func tensorScale(name string) scaleKind {
	switch {
	case strings.HasSuffix(name, "prior_weight_sd"), strings.HasSuffix(name, "prior_bias_sd"):
		return positive
	case strings.HasSuffix(name, "running_var"), name == "fa.psi" || strings.HasSuffix(name, ".fa.psi"):
		return nonNegative
	}
	return anyValue
}

// checkValues validates every value of tensor name: finite, within
// MaxAbsParameter, and positive (or non-negative) where it is a scale (or
// a variance). The error names the tensor and the first bad element.
func checkValues(name string, v []float32) error {
	kind := tensorScale(name)
	for i, x := range v {
		f := float64(x)
		var why string
		switch {
		case math.IsNaN(f):
			why = "is NaN"
		case math.IsInf(f, 0):
			why = fmt.Sprintf("is %g", x)
		case math.Abs(f) > MaxAbsParameter:
			why = fmt.Sprintf("is %g, beyond ±%g", x, MaxAbsParameter)
		case kind == positive && !(f > 0):
			why = fmt.Sprintf("is %g, but a standard deviation must be positive", x)
		case kind == nonNegative && f < 0:
			why = fmt.Sprintf("is %g, but a variance must be non-negative", x)
		default:
			continue
		}
		return fmt.Errorf("convert: tensor %s: element %d %s", clip.Q(name), i, why)
	}
	return nil
}

// checkF16Range reports the first value of tensor name outside the fp16
// range, for a tensor about to be stored as fp16 without AllowClamp.
func checkF16Range(name string, v []float32) error {
	for i, x := range v {
		if !quant.InF16Range(x) {
			return fmt.Errorf("convert: tensor %s: element %d is %g, outside the fp16 range (it would round to ±Inf; --allow-clamp, Options.AllowClamp, clamps it to ±%d; or keep f32)", clip.Q(name), i, x, quant.MaxF16)
		}
	}
	return nil
}
