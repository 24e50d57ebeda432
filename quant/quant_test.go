package quant

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// refRound rounds x to binary16 with float64 arithmetic: the spacing of fp16 values around x is
// 2^(e−10) for normal values (e = floor(log2|x|), e ≥ −14) and 2^−24 for subnormals, and ties go
// to even multiples of the spacing.
func refRound(x float64) float64 {
	if x == 0 {
		return x
	}
	a := math.Abs(x)
	e := math.Floor(math.Log2(a))
	if e < -14 {
		e = -14
	}
	ulp := math.Ldexp(1, int(e)-10)
	r := math.RoundToEven(a/ulp) * ulp
	if r > MaxF16 {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

func TestRoundMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	cases := []float32{0, 1, -1, 65504, 65519, 65520, 1.0 / 3, 0.1, 1e-8, 5.96e-8, 6.1e-5, 2049, 2051, 4097}
	for i := 0; i < n; i++ {
		cases = append(cases, float32(rng.NormFloat64()*math.Pow(10, float64(rng.Intn(12)-8))))
	}
	for _, x := range cases {
		want := refRound(float64(x))
		if got := float64(Round(x)); got != want && !(math.IsInf(got, 0) && math.IsInf(want, 0)) {
			t.Fatalf("Round(%g) = %g, reference %g", x, got, want)
		}
	}
}

func TestQuantizeReport(t *testing.T) {
	tests := []struct {
		name       string
		data       []float32
		clamp      bool
		wantErr    string
		wantAbs    float64
		wantRel    float64
		outOfRange int
		underflows int
	}{
		{name: "exact", data: []float32{0, 1, -2, 0.5, 1024}, wantAbs: 0, wantRel: 0},
		// 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds to even, i.e. 1.
		{name: "tie", data: []float32{1 + 1.0/2048}, wantAbs: 1.0 / 2048, wantRel: (1.0 / 2048) / (1 + 1.0/2048)},
		{name: "underflow", data: []float32{1e-9}, wantAbs: 1e-9, underflows: 1},
		{name: "range", data: []float32{70000}, wantErr: "outside the fp16 range"},
		{name: "clamp", data: []float32{70000, -1e6}, clamp: true, wantAbs: 1e6 - 65504, wantRel: (1e6 - 65504) / 1e6, outOfRange: 2},
		{name: "nan", data: []float32{float32(math.NaN())}, wantErr: "is NaN"},
		{name: "inf", data: []float32{float32(math.Inf(-1))}, clamp: true, wantErr: "is -Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := Quantize("x.z_row", tc.data, tc.clamp)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "x.z_row") {
					t.Fatalf("err = %v, want %q naming the tensor", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !(math.Abs(rep.MaxAbsErr-tc.wantAbs) <= 1e-6*math.Max(1, tc.wantAbs)) {
				t.Errorf("MaxAbsErr = %g, want %g", rep.MaxAbsErr, tc.wantAbs)
			}
			if !(math.Abs(rep.MaxRelErr-tc.wantRel) <= 1e-9) {
				t.Errorf("MaxRelErr = %g, want %g", rep.MaxRelErr, tc.wantRel)
			}
			if rep.OutOfRange != tc.outOfRange || rep.Underflows != tc.underflows {
				t.Errorf("out of range %d underflows %d, want %d %d", rep.OutOfRange, rep.Underflows, tc.outOfRange, tc.underflows)
			}
			for _, v := range out {
				if !(math.Abs(float64(v)) <= MaxF16) {
					t.Errorf("value %g left outside the range", v)
				}
			}
		})
	}
}

// TestRelativeErrorBound: for normal fp16 values round-to-nearest has relative error ≤ 2^−11.
func TestRelativeErrorBound(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	data := make([]float32, 10000)
	for i := range data {
		data[i] = float32(rng.NormFloat64() * 10)
	}
	_, rep, err := Quantize("w", data, false)
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.MaxRelErr <= math.Ldexp(1, -11)) || rep.MaxRelErr == 0 {
		t.Errorf("max relative error %g, want in (0, 2^-11]", rep.MaxRelErr)
	}
}

func TestKeepF32Policy(t *testing.T) {
	tests := []struct {
		name string
		n    int
		keep bool
	}{
		{"1.z_row", 1000, false},
		{"1.z_col", 1000, false},
		{"1._d_row", 1000, true},
		{"1._d_col", 1000, true},
		{"1._lamda", 1, true},
		{"layer1.0.conv1.inducing_mean", 4096, true},
		{"layer1.0.conv1._inducing_sd", 4096, true},
		{"fc._inducing_scale_tril", 5000, true},
		{"bn1.running_mean", 512, true},
		{"bn1.running_var", 512, true},
		{"bn1.weight", 512, false},
		{"0.weight_mean", 512, false},
		{"0.prior_weight_sd", 512, false},
		{"0.bias", 10, true},
		{"fa.factors", 1000, false},
	}
	for _, tc := range tests {
		if got, why := KeepF32(tc.name, tc.n); got != tc.keep || (got && why == "") {
			t.Errorf("KeepF32(%q, %d) = %v %q, want %v", tc.name, tc.n, got, why, tc.keep)
		}
	}
}

func TestKeepF32Compact(t *testing.T) {
	tests := []struct {
		name string
		n    int
		keep bool
	}{
		{"l.inducing_mean", 4096, false},
		{"l._inducing_sd", 4096, false},
		{"l._inducing_scale_tril", 300, false},
		{"l.inducing_mean", 40, true},
		{"l._d_row", 4096, true},
		{"l._lamda", 1, true},
		{"bn.running_var", 512, true},
		{"l.z_row", 4096, false},
	}
	for _, tc := range tests {
		if got, _ := KeepF32Compact(tc.name, tc.n); got != tc.keep {
			t.Errorf("KeepF32Compact(%q, %d) = %v, want %v", tc.name, tc.n, got, tc.keep)
		}
	}
	if _, err := PolicyByName("bogus"); err == nil {
		t.Error("unknown policy accepted")
	}
}
