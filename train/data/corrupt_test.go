package data

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// blobs returns n 28×28 images: a random bright rectangle on a dark background with noise, a
// stand-in for Fashion-MNIST's centred objects.
func blobs(n int) *Dataset {
	const h, w = 28, 28
	rng := rand.New(rand.NewPCG(7, 7))
	d := &Dataset{Name: "blobs", N: n, Dim: h * w, Shape: []int{1, h, w}, X: make([]float32, n*h*w),
		Labels: make([]int, n), Classes: 1}
	for i := 0; i < n; i++ {
		y0, x0 := 4+rng.IntN(6), 4+rng.IntN(6)
		y1, x1 := 18+rng.IntN(6), 18+rng.IntN(6)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				v := 0.05 * rng.Float64()
				if y >= y0 && y < y1 && x >= x0 && x < x1 {
					v = 0.5 + 0.4*rng.Float64()
				}
				d.X[i*h*w+y*w+x] = float32(v)
			}
		}
	}
	return d
}

// meanAbsChange is the mean |a − b| over all values.
func meanAbsChange(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(float64(a[i] - b[i]))
	}
	return s / float64(len(a))
}

// TestCorrupt checks every corruption: severity 0 is the identity, the same seed gives the same
// images and another seed (for the random ones) different images, pixels stay in [0, 1], the
// input is not modified, and the mean absolute change grows strictly with severity.
func TestCorrupt(t *testing.T) {
	d := blobs(40)
	orig := slices.Clone(d.X)
	random := map[string]bool{"gaussian_noise": true, "shot_noise": true, "impulse_noise": true,
		"rotation": true, "translation": true, "elastic": true}
	for _, name := range Corruptions() {
		t.Run(name, func(t *testing.T) {
			c0, err := Corrupt(d, name, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c0.X, d.X) {
				t.Error("severity 0 changes the images")
			}
			prev := 0.0
			for s := 1; s <= MaxSeverity; s++ {
				a, err := Corrupt(d, name, s, 1)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := Corrupt(d, name, s, 1)
				if !slices.Equal(a.X, b.X) {
					t.Errorf("severity %d: the same seed gives different images", s)
				}
				if o, _ := Corrupt(d, name, s, 2); random[name] && slices.Equal(a.X, o.X) {
					t.Errorf("severity %d: seeds 1 and 2 give the same images", s)
				}
				for j, v := range a.X {
					if !(v >= 0 && v <= 1) {
						t.Fatalf("severity %d: pixel %d is %v", s, j, v)
					}
				}
				m := meanAbsChange(a.X, d.X)
				if !(m > prev) {
					t.Errorf("severity %d: mean absolute change %.5f, not above severity %d's %.5f", s, m, s-1, prev)
				}
				prev = m
				if a.N != d.N || a.Labels[0] != d.Labels[0] {
					t.Errorf("severity %d: N %d, labels changed", s, a.N)
				}
			}
			if !slices.Equal(d.X, orig) {
				t.Error("Corrupt modified its input")
			}
		})
	}
}

// TestCorruptOrderIndependent checks that image i's corruption depends on (seed, i) only: a
// subset's first image is corrupted as in the whole set when it is the whole set's first.
func TestCorruptOrderIndependent(t *testing.T) {
	d := blobs(5)
	head := d.Head(1)
	for _, name := range Corruptions() {
		a, _ := Corrupt(d, name, 3, 9)
		b, err := Corrupt(head, name, 3, 9)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.X[:d.Dim], b.X) {
			t.Errorf("%s: image 0 differs between the set and its head", name)
		}
	}
}

// TestParseCorruption checks the CORRUPTION:SEVERITY syntax and Corrupt's argument errors.
func TestParseCorruption(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		sev  int
		ok   bool
	}{
		{"gaussian_noise:3", "gaussian_noise", 3, true},
		{"elastic:0", "elastic", 0, true},
		{"elastic:5", "elastic", 5, true},
		{"elastic:6", "", 0, false},
		{"elastic:-1", "", 0, false},
		{"fog:2", "", 0, false},
		{"contrast", "", 0, false},
		{"contrast:x", "", 0, false},
	} {
		name, sev, err := ParseCorruption(tc.in)
		if (err == nil) != tc.ok || name != tc.name || sev != tc.sev {
			t.Errorf("ParseCorruption(%q) = %q, %d, %v", tc.in, name, sev, err)
		}
	}
	if _, err := Corrupt(blobs(1), "fog", 1, 0); err == nil {
		t.Error("unknown corruption: no error")
	}
	tab := &Dataset{Name: "tab", N: 1, Dim: 3, Shape: []int{3}, X: []float32{0, 0, 0}, Labels: []int{0}, Classes: 1}
	if _, err := Corrupt(tab, "contrast", 1, 0); err == nil {
		t.Error("tabular data: no error")
	}
}

// scipyFixture is testdata/corrupt_scipy.json (scripts/corrupt_scipy_fixture.py): geometric
// corruptions of a fixed image computed with scipy.ndimage.
type scipyFixture struct {
	SciPy string    `json:"scipy"`
	H, W  int       `json:"-"`
	Image []float32 `json:"image"`
	Cases []struct {
		Kind   string    `json:"kind"`
		Params []float64 `json:"params"`
		UY     []float32 `json:"uy"`
		UX     []float32 `json:"ux"`
		Want   []float64 `json:"want"`
	} `json:"cases"`
}

// TestCorruptMatchesSciPy checks rotation, translation, the elastic distortion and the Gaussian
// blur against scipy.ndimage (rotate with reshape=False, shift, gaussian_filter with reflected
// edges, map_coordinates; bilinear, zero fill) on the same image and, for elastic, the same raw
// displacement fields: every pixel within 1e-5. The fixture's rotation angle is the negative of
// ours: scipy turns the picture counter-clockwise as displayed for a positive angle.
func TestCorruptMatchesSciPy(t *testing.T) {
	raw, err := os.ReadFile("testdata/corrupt_scipy.json")
	if err != nil {
		t.Fatal(err)
	}
	var f scipyFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	const h, w = 28, 28
	if len(f.Image) != h*w || len(f.Cases) == 0 {
		t.Fatalf("fixture: image of %d values, %d cases", len(f.Image), len(f.Cases))
	}
	for _, c := range f.Cases {
		t.Run(fmt.Sprintf("%s%v", c.Kind, c.Params), func(t *testing.T) {
			img := slices.Clone(f.Image)
			switch c.Kind {
			case "rotation":
				rotate(img, h, w, c.Params[0])
			case "translation":
				translate(img, h, w, c.Params[0], c.Params[1])
			case "blur":
				blur(img, h, w, c.Params[0])
			case "elastic":
				elastic(img, h, w, c.Params[0], slices.Clone(c.UY), slices.Clone(c.UX))
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
			if len(c.Want) != len(img) {
				t.Fatalf("fixture: %d expected pixels for a %d-pixel image", len(c.Want), len(img))
			}
			worst, at := 0.0, 0
			for i, want := range c.Want {
				if d := math.Abs(float64(img[i]) - want); d > worst || math.IsNaN(d) && !math.IsNaN(worst) {
					worst, at = d, i
				}
			}
			if !(worst <= 1e-5) {
				t.Errorf("max |ours − scipy %s| = %.3g at pixel (%d, %d): %.6f, scipy %.6f",
					f.SciPy, worst, at/w, at%w, img[at], c.Want[at])
			}
			if mc := meanAbsChange(img, f.Image); !(mc >= 1e-3) {
				t.Errorf("the image hardly changes (mean |Δ| %.2g): the case tests nothing", mc)
			}
		})
	}
}
