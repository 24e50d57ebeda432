// Package quant converts model tensors from float32 to IEEE binary16 (fp16) for storage and
// measures what that costs in accuracy.
//
// Rounding is to nearest, ties to even (github.com/x448/float16, the same conversion the model
// file writer uses), so the values Quantize reports on are exactly the values a reader decodes.
// Values of magnitude OverflowF16 = 65520 or more would become ±Inf (those between the largest
// finite fp16 value, MaxF16 = 65504, and 65520 round to ±MaxF16): that is an error unless the
// caller allows clamping, in which case they are clamped to ±MaxF16 and counted.
//
// Not every tensor should be stored in fp16; KeepF32 is the documented default policy.
package quant

import (
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"
)

// MaxF16 is the largest finite binary16 value.
const MaxF16 = 65504

// OverflowF16 is the smallest magnitude that rounds to an infinite binary16 value: the midpoint
// of MaxF16 and 2¹⁶, where ties-to-even goes to the even neighbour, 2¹⁶ (= ±Inf).
const OverflowF16 = 65520

// InF16Range reports whether x rounds to a finite binary16 value: |x| < OverflowF16.
func InF16Range(x float32) bool { return x > -OverflowF16 && x < OverflowF16 }

// MinNormalF16 is the smallest positive normal binary16 value, 2⁻¹⁴. Below it fp16 has fewer
// significant bits, so relative errors are only reported for values at least this large.
const MinNormalF16 = 1.0 / 16384

// SmallTensor is the element count below which KeepF32 keeps a tensor in float32: halving a
// tensor this small saves at most 2·SmallTensor bytes, about what the 64-byte section alignment
// of the model file costs anyway.
const SmallTensor = 64

// f32Suffixes are the state_dict name endings of tensors that stay float32 by default, with the
// reason reported by KeepF32.
var f32Suffixes = []struct{ suffix, reason string }{
	{"._d_row", "inducing D_r (softplus parameter, sets Ψ_r's diagonal)"},
	{"._d_col", "inducing D_c (softplus parameter, sets Ψ_c's diagonal)"},
	{"._lamda", "inducing λ (scalar)"},
	{".inducing_mean", "statistics of q(U)"},
	{"._inducing_sd", "statistics of q(U)"},
	{"._inducing_scale_tril", "statistics of q(U)"},
	{"._inducing_row_scale_tril", "statistics of q(U)"},
	{"._inducing_col_scale_tril", "statistics of q(U)"},
	{".running_mean", "BatchNorm running statistics"},
	{".running_var", "BatchNorm running statistics"},
}

// KeepF32 is the default precision policy for a model converted to fp16. It reports whether the
// tensor called name (a state_dict key such as "layer1.0.conv1.z_row") with n elements stays
// float32, and why:
//
//   - small tensors (fewer than SmallTensor elements), where fp16 saves nothing worth having;
//   - an inducing layer's D_r, D_c (_d_row, _d_col) and λ (_lamda): few values that enter
//     Cholesky factorisations and the noise scale through a softplus;
//   - the statistics of q(U): inducing_mean, _inducing_sd and the scale_tril tensors, which the
//     KL divergence and every weight sample depend on directly;
//   - BatchNorm running_mean and running_var (running_var near zero is badly resolved in fp16).
//
// Everything else — Z_r and Z_c (z_row, z_col), plain and FFG weights and biases, BatchNorm
// affine parameters, FFG prior buffers, factor-analysis tensors — is stored as fp16. Bernstein
// flow parameters (.bf_weight, .bf_bias) pass this policy too; convert then stores them in fp16
// only where its accuracy gate on the flows' quantiles allows (convert.BernsteinGate).
func KeepF32(name string, n int) (bool, string) {
	if n < SmallTensor {
		return true, fmt.Sprintf("small (%d < %d elements)", n, SmallTensor)
	}
	for _, s := range f32Suffixes {
		if strings.HasSuffix(name, s.suffix) || name == s.suffix[1:] {
			return true, s.reason
		}
	}
	return false, ""
}

// quSuffixes are the q(U) statistics, which KeepF32Compact stores as fp16.
var quSuffixes = []string{".inducing_mean", "._inducing_sd", "._inducing_scale_tril", "._inducing_row_scale_tril", "._inducing_col_scale_tril"}

// KeepF32Compact is a smaller alternative to KeepF32: it also stores the statistics of q(U)
// (inducing_mean, _inducing_sd and the scale_tril tensors) as fp16, keeping only small tensors,
// D, λ and BatchNorm running statistics in float32. The relative rounding error of those
// statistics (≤ 2⁻¹¹) is far below their posterior spread; use it when size matters most (for
// a ResNet-50 they are about 0.44 M values, 1.7 MB in float32).
func KeepF32Compact(name string, n int) (bool, string) {
	for _, s := range quSuffixes {
		if strings.HasSuffix(name, s) && n >= SmallTensor {
			return false, ""
		}
	}
	return KeepF32(name, n)
}

// Policy decides which tensors stay float32 in an fp16 model; KeepF32 and KeepF32Compact are
// policies.
type Policy func(name string, n int) (keep bool, reason string)

// PolicyByName returns the policy called "default" (KeepF32, also for "") or "compact"
// (KeepF32Compact).
func PolicyByName(name string) (Policy, error) {
	switch name {
	case "", "default":
		return KeepF32, nil
	case "compact":
		return KeepF32Compact, nil
	}
	return nil, fmt.Errorf("quant: fp16 policy %q is not default or compact", name)
}

// Report describes the conversion of one tensor to fp16.
type Report struct {
	// Name is the tensor's name.
	Name string `json:"name"`
	// Elements is the number of values.
	Elements int `json:"elements"`
	// MaxAbsErr is max |x − fp16(x)| over all values (after clamping, if any, so a clamped value
	// contributes |x − ±MaxF16|).
	MaxAbsErr float64 `json:"max_abs_err"`
	// MaxRelErr is max |x − fp16(x)| / |x| over the values with |x| ≥ MinNormalF16.
	MaxRelErr float64 `json:"max_rel_err"`
	// OutOfRange counts values with |x| ≥ OverflowF16, which would round to ±Inf (clamped when
	// allowed).
	OutOfRange int `json:"out_of_range,omitempty"`
	// Clamped reports whether out-of-range values were clamped.
	Clamped bool `json:"clamped,omitempty"`
	// Underflows counts non-zero values that become zero in fp16.
	Underflows int `json:"underflows,omitempty"`
}

// Round returns x rounded to the nearest binary16 value (ties to even) and widened back to
// float32. Values of magnitude OverflowF16 or more round to ±Inf.
func Round(x float32) float32 { return float16.Fromfloat32(x).Float32() }

// Quantize prepares data (the tensor called name) for fp16 storage and measures the rounding
// error. It returns the values to hand to the writer: data itself, or, when allowClamp is set and
// some values would round to ±Inf (InF16Range), a copy with those values clamped to ±MaxF16. NaN or infinite inputs are
// errors, and so are out-of-range values when allowClamp is false.
func Quantize(name string, data []float32, allowClamp bool) ([]float32, Report, error) {
	rep := Report{Name: name, Elements: len(data)}
	out := data
	for i, x := range data {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, rep, fmt.Errorf("quant: tensor %q: value %d is %g", name, i, x)
		}
		if !InF16Range(x) {
			rep.OutOfRange++
		}
	}
	if rep.OutOfRange > 0 {
		if !allowClamp {
			return nil, rep, fmt.Errorf("quant: tensor %q: %d values lie outside the fp16 range (|x| ≥ %d rounds to ±Inf; allow clamping to store them as ±%d)",
				name, rep.OutOfRange, OverflowF16, MaxF16)
		}
		rep.Clamped = true
		out = make([]float32, len(data))
		for i, x := range data {
			out[i] = float32(math.Max(-MaxF16, math.Min(MaxF16, float64(x))))
		}
	}
	for i, x := range data {
		q := float64(Round(out[i]))
		d := math.Abs(float64(x) - q)
		rep.MaxAbsErr = math.Max(rep.MaxAbsErr, d)
		if a := math.Abs(float64(x)); a >= MinNormalF16 {
			rep.MaxRelErr = math.Max(rep.MaxRelErr, d/a)
		}
		if x != 0 && q == 0 {
			rep.Underflows++
		}
	}
	return out, rep, nil
}
