package data

import (
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestUpsampleBilinear(t *testing.T) {
	cases := []struct {
		name       string
		src        []float32
		h, w, H, W int
		want       []float32
	}{
		// PIL's Image.resize((4, 4), BILINEAR) of the float image [[0, 1], [2, 3]] (and
		// PyTorch's interpolate with align_corners=False) give this.
		{"2x2 to 4x4", []float32{0, 1, 2, 3}, 2, 2, 4, 4, []float32{
			0, 0.25, 0.75, 1,
			0.5, 0.75, 1.25, 1.5,
			1.5, 1.75, 2.25, 2.5,
			2, 2.25, 2.75, 3,
		}},
		{"constant stays constant", []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 2, 3, 3, 5, []float32{
			0.5, 0.5, 0.5, 0.5, 0.5,
			0.5, 0.5, 0.5, 0.5, 0.5,
			0.5, 0.5, 0.5, 0.5, 0.5,
		}},
		{"same size is the identity", []float32{1, 2, 3, 4}, 2, 2, 2, 2, []float32{1, 2, 3, 4}},
		{"one pixel", []float32{7}, 1, 1, 2, 3, []float32{7, 7, 7, 7, 7, 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UpsampleBilinear(tc.src, tc.h, tc.w, tc.H, tc.W)
			if len(got) != len(tc.want) {
				t.Fatalf("%d values, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !(math.Abs(float64(got[i]-tc.want[i])) <= 1e-6) {
					t.Fatalf("value %d = %g, want %g (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

// digitsRows is a two-row digits CSV: an all-zero image labelled 3 and a ramp labelled 7.
func digitsRows() string {
	var b strings.Builder
	for i := 0; i < 64; i++ {
		b.WriteString("0,")
	}
	b.WriteString("3\n")
	for i := 0; i < 64; i++ {
		b.WriteString([]string{"0", "4", "8", "16"}[i%4] + ",")
	}
	b.WriteString("7\n")
	return b.String()
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDigitsFiles(t *testing.T) {
	row := func(pix string, label string) string { return strings.Repeat(pix+",", 64) + label + "\n" }
	cases := []struct {
		name    string
		content []byte
		size    int
		wantN   int
		wantErr string
	}{
		{"plain", []byte(digitsRows()), 28, 2, ""},
		{"gzip", gzipped(t, digitsRows()), 28, 2, ""},
		{"other size", []byte(digitsRows()), 16, 2, ""},
		{"blank lines skipped", []byte("\n" + digitsRows() + "\n\n"), 28, 2, ""},
		{"empty", nil, 28, 0, "no rows"},
		{"too few values", []byte(digitsRows() + "1,2,3\n"), 28, 0, "line 3: 3 values, want 65"},
		{"pixel above 16", []byte(row("17", "1")), 28, 0, "line 1: pixel 0 is \"17\", want a number in [0, 16]"},
		{"negative pixel", []byte(row("-1", "1")), 28, 0, "pixel 0"},
		{"not a number", []byte(row("x", "1")), 28, 0, "pixel 0 is \"x\""},
		{"label 10", []byte(row("1", "10")), 28, 0, "line 1: label \"10\" is not a digit"},
		{"fractional label", []byte(row("1", "2.5")), 28, 0, "label \"2.5\""},
		{"bad gzip", []byte{0x1f, 0x8b, 1, 2, 3}, 28, 0, "gzip"},
		{"size 0", []byte(digitsRows()), 0, 0, "image size 0"},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := Digits(path, tc.size)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("case %d: error %v, want one naming %s and saying %q", i, err, path, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			if d.N != tc.wantN || d.Dim != tc.size*tc.size || !slices.Equal(d.Shape, []int{1, tc.size, tc.size}) || d.Classes != 10 {
				t.Fatalf("N %d dim %d shape %v classes %d", d.N, d.Dim, d.Shape, d.Classes)
			}
			if !slices.Equal(d.Labels, []int{3, 7}) {
				t.Fatalf("labels %v, want [3 7]", d.Labels)
			}
			for _, v := range d.Row(0) {
				if v != 0 {
					t.Fatalf("the all-zero image upsampled has a value %g", v)
				}
			}
			lo, hi := slices.Min(d.Row(1)), slices.Max(d.Row(1))
			// The ramp's columns are 0, 0.25, 0.5, 1 repeated; bilinear stays within them.
			if !(lo >= 0) || !(hi <= 1) || !(hi >= 0.5) {
				t.Fatalf("ramp image values in [%g, %g], want within [0, 1] and reaching above 0.5", lo, hi)
			}
		})
	}
	if _, err := Digits(filepath.Join(dir, "absent.csv.gz"), 28); err == nil || !strings.Contains(err.Error(), "absent.csv.gz") {
		t.Fatalf("missing file: error %v, want one naming the file", err)
	}
}

// TestDigitsSklearn reads the real file of Debian's python3-sklearn. Reference values: PIL's
// Image.fromarray(x/16, "F").resize((28, 28), Image.BILINEAR) of the file's first row.
func TestDigitsSklearn(t *testing.T) {
	if _, err := os.Stat(DefaultDigitsPath); err != nil {
		t.Skipf("scikit-learn's digits are not installed (%v); apt-get install python3-sklearn provides %s", err, DefaultDigitsPath)
	}
	d, err := Digits(DefaultDigitsPath, 28)
	if err != nil {
		t.Fatal(err)
	}
	if d.Scale != 1.0/16 {
		t.Errorf("scale %g, want 1/16 (the file's 0–16 values to [0, 1])", d.Scale)
	}
	if d.N != 1797 || d.Dim != 784 || !slices.Equal(d.Shape, []int{1, 28, 28}) {
		t.Fatalf("N %d dim %d shape %v, want 1797 images of 1×28×28", d.N, d.Dim, d.Shape)
	}
	if d.Labels[0] != 0 || d.Labels[1] != 1 || d.Labels[d.N-1] != 8 {
		t.Fatalf("labels %d, %d, …, %d; the file's are 0, 1, …, 8", d.Labels[0], d.Labels[1], d.Labels[d.N-1])
	}
	if lo, hi := slices.Min(d.X), slices.Max(d.X); !(lo >= 0) || !(hi <= 1) || !(hi >= 0.9) {
		t.Fatalf("values in [%g, %g], want within [0, 1] (reaching near 1)", lo, hi)
	}
	for _, p := range []struct {
		i, j int
		want float64
	}{{0, 0, 0}, {5, 10, 0.8504464030265808}, {14, 14, 0}, {20, 7, 0.5583546161651611}, {10, 20, 0.5602678656578064}, {27, 27, 0}} {
		if got := float64(d.Row(0)[p.i*28+p.j]); !(math.Abs(got-p.want) <= 1e-5) {
			t.Errorf("first image (%d, %d) = %g, PIL gives %g", p.i, p.j, got, p.want)
		}
	}
	var sum float64
	for _, v := range d.Row(0) {
		sum += float64(v)
	}
	if !(math.Abs(sum-225.09375) <= 1e-3) {
		t.Errorf("first image sums to %g, PIL's to 225.09375", sum)
	}
	again, err := Digits(DefaultDigitsPath, 28)
	if err != nil || !slices.Equal(again.X, d.X) || !slices.Equal(again.Labels, d.Labels) {
		t.Fatalf("a second read differs (error %v)", err)
	}
}

func TestShufflePixels(t *testing.T) {
	const dim = 12
	d := &Dataset{Name: "t", N: 2, Dim: dim, Shape: []int{1, 3, 4}, Classes: 10, Labels: []int{4, 9}, Scale: 1.0 / 255}
	for k := 0; k < dim; k++ {
		d.X = append(d.X, float32(k))
	}
	for k := 0; k < dim; k++ {
		d.X = append(d.X, float32(100+2*k))
	}
	orig := slices.Clone(d.X)
	cases := []struct {
		name     string
		a, b     uint64
		wantSame bool
	}{
		{"same seed", 7, 7, true},
		{"other seed", 7, 8, false},
		{"fixed seed", ShuffledPixelsSeed, ShuffledPixelsSeed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, s2 := ShufflePixels(d, tc.a), ShufflePixels(d, tc.b)
			if !slices.Equal(d.X, orig) {
				t.Fatal("the input was modified")
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if s.N != 2 || s.Dim != dim || !slices.Equal(s.Shape, d.Shape) || !slices.Equal(s.Labels, d.Labels) || s.Scale != d.Scale {
				t.Fatalf("N %d dim %d shape %v labels %v scale %g", s.N, s.Dim, s.Shape, s.Labels, s.Scale)
			}
			if slices.Equal(s.X, d.X) {
				t.Fatal("pixels not shuffled")
			}
			for n := 0; n < 2; n++ {
				got, want := slices.Clone(s.Row(n)), slices.Clone(d.Row(n))
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("example %d: values %v are not a permutation of %v", n, s.Row(n), d.Row(n))
				}
			}
			for k := 0; k < dim; k++ { // one permutation for every example
				if s.Row(1)[k] != 100+2*s.Row(0)[k] {
					t.Fatalf("position %d: examples permuted differently (%g, %g)", k, s.Row(0)[k], s.Row(1)[k])
				}
			}
			if slices.Equal(s.X, s2.X) != tc.wantSame {
				t.Fatalf("seeds %d and %d: same output %v, want %v", tc.a, tc.b, !tc.wantSame, tc.wantSame)
			}
		})
	}
}

// TestDigitsValueBound: the upsampled size comes from other data's header (an IDX file), so the
// rows stop at a bound on the values — 1797 digits at 4096×4096 would be 120 GB.
func TestDigitsValueBound(t *testing.T) {
	rows := strings.Repeat(strings.Repeat("1,", 64)+"1\n", 5)
	if _, err := readDigits(strings.NewReader(rows), 64, 0, 4*64*64); err == nil || !strings.Contains(err.Error(), "line 5: 5 rows upsampled to 64×64 exceed 16384 values") {
		t.Fatalf("5 rows of 64×64 under a bound of 4: %v", err)
	}
	if d, err := readDigits(strings.NewReader(rows), 64, 0, 5*64*64); err != nil || d.N != 5 {
		t.Fatalf("5 rows within the bound: %v", err)
	}
}
