package fsvi

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

func imageData() *data.Dataset {
	d := &data.Dataset{Name: "img", N: 2, Dim: 2 * 3 * 3, Shape: []int{2, 3, 3}, Classes: 2, Labels: []int{0, 1}}
	d.X = make([]float32, d.N*d.Dim)
	for i := range d.X {
		d.X[i] = float32(i%7) / 6 // values in [0, 1], both ends present
	}
	return d
}

func TestSamplerRandomMonochrome(t *testing.T) {
	s, err := NewSampler(RandomMonochrome, imageData(), 0.5)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Sample(rand.New(rand.NewPCG(1, 2)), 50, nil)
	if len(x) != 50*18 {
		t.Fatalf("%d values, want %d", len(x), 50*18)
	}
	distinct := map[float32]bool{}
	for n := 0; n < 50; n++ {
		img := x[n*18 : (n+1)*18]
		for _, v := range img {
			if v != img[0] {
				t.Fatalf("image %d is not monochrome: %v", n, img)
			}
		}
		if !(img[0] >= 0) || !(img[0] <= 1) { // the margin does not apply to random-monochrome
			t.Fatalf("image %d grey level %g outside the data's [0, 1]", n, img[0])
		}
		distinct[img[0]] = true
	}
	if len(distinct) < 45 {
		t.Errorf("only %d distinct grey levels in 50 images", len(distinct))
	}
}

func TestSamplerUniformMargin(t *testing.T) {
	d := data.Toy1D(100, 3) // inputs in [−1, −0.7] ∪ [0.5, 1]
	s, err := NewSampler(Uniform, d, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Sample(rand.New(rand.NewPCG(1, 2)), 2000, nil)
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	// The data spans about [−1, 1]; widened by half the range on each side: about [−2, 2].
	if !(lo >= -2.01) || !(hi <= 2.01) || !(lo <= -1.9) || !(hi >= 1.9) {
		t.Errorf("uniform context spans [%g, %g], want about [−2, 2]", lo, hi)
	}
}

func TestSamplerCorruptedAndFile(t *testing.T) {
	d := imageData()
	s, err := NewSampler(Corrupted, d, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Sample(rand.New(rand.NewPCG(5, 6)), 20, nil)
	if len(x) != 20*18 {
		t.Fatalf("%d values", len(x))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ctx.csv")
	row := strings.Repeat("0.5,", 17) + "0.25\n"
	if err := os.WriteFile(path, []byte(strings.Repeat("a,", 17)+"b\n"+row+row), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = NewSampler(DataPrefix+path, d, 0)
	if err != nil {
		t.Fatal(err)
	}
	x = s.Sample(rand.New(rand.NewPCG(5, 6)), 3, nil)
	if x[17] != 0.25 || x[0] != 0.5 || x[35] != 0.25 {
		t.Errorf("file context %v", x[:18])
	}
	if err := os.WriteFile(path, []byte("1,2,3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSampler(DataPrefix+path, d, 0); err == nil || !strings.Contains(err.Error(), "3 values") {
		t.Errorf("wrong width: error %v", err)
	}
	if err := CheckContext("gaussian"); err == nil {
		t.Error("CheckContext accepted gaussian")
	}
}

// TestSamplerDigits: the digits context draws the upsampled digits (data.Digits) of the file,
// and refuses non-square or multi-channel images and a missing file.
func TestSamplerDigits(t *testing.T) {
	var sb strings.Builder
	for r := 0; r < 2; r++ {
		for j := 0; j < 64; j++ {
			fmt.Fprintf(&sb, "%d,", (j+5*r)%17)
		}
		fmt.Fprintf(&sb, "%d\n", r)
	}
	path := filepath.Join(t.TempDir(), "digits.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	train := &data.Dataset{Name: "img", N: 1, Dim: 16, Shape: []int{1, 4, 4}, Classes: 2, Labels: []int{0}, X: make([]float32, 16)}
	s, err := NewSampler(Digits+":"+path, train, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := data.Digits(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Sample(rand.New(rand.NewPCG(3, 4)), 20, nil)
	seen := map[int]bool{}
	for n := 0; n < 20; n++ {
		got := x[n*16 : (n+1)*16]
		match := -1
		for i := 0; i < want.N; i++ {
			if slices.Equal(got, want.Row(i)) {
				match = i
			}
		}
		if match < 0 {
			t.Fatalf("context input %d %v is none of the upsampled digits", n, got)
		}
		seen[match] = true
	}
	if len(seen) != 2 {
		t.Errorf("20 draws used %d of the 2 digits", len(seen))
	}
	if _, err := NewSampler(Digits+":"+path, imageData(), 0); err == nil || !strings.Contains(err.Error(), "square one-channel") {
		t.Errorf("two-channel 3×3 images: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "none.csv")
	if _, err := NewSampler(Digits+":"+missing, train, 0); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("missing file: %v", err)
	}
	if err := CheckContext("digits:"); err == nil {
		t.Error("CheckContext accepted digits: without a path")
	}
}

// TestContextFileValueBound: a context file's values lie within the training data's
// ±data.MaxAbsValue, like a CSV data set's: beyond it is an error naming the file, line and value.
func TestContextFileValueBound(t *testing.T) {
	d := &data.Dataset{Name: "toy", N: 2, Dim: 1, Shape: []int{1}, X: []float32{0, 1}}
	path := filepath.Join(t.TempDir(), "ctx.csv")
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"1e15", true}, {"-1e15", true}, {"1.0001e15", false}, {"-3e38", false}} {
		if err := os.WriteFile(path, []byte("x\n1\n"+tc.value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewSampler(DataPrefix+path, d, 0)
		if tc.ok != (err == nil) {
			t.Errorf("%s: NewSampler = %v", tc.value, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), path+" line 3: \""+tc.value+"\" is outside ±1e+15")) {
			t.Errorf("%s: error %v does not name the file, line and value", tc.value, err)
		}
	}
}
