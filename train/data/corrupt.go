package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// corruptions are the names Corrupt takes, in table order. Their severity parameters (levels 1–5):
//
//   - gaussian_noise: x + N(0, c²), c = 0.04, 0.06, 0.08, 0.09, 0.10 (CIFAR-10-C, Hendrycks &
//     Dietterich 2019).
//   - shot_noise: Poisson(c·x)/c, c = 500, 250, 100, 75, 50 (CIFAR-10-C).
//   - impulse_noise: salt-and-pepper, a fraction c = 0.01, 0.02, 0.03, 0.05, 0.07 of the pixels set
//     to 0 or 1 with equal probability (CIFAR-10-C; MNIST-C, Mu & Gilmer 2019, has impulse noise
//     at one severity).
//   - gaussian_blur: a Gaussian filter of standard deviation σ = 0.4, 0.6, 0.7, 0.8, 1.0 pixels
//     (CIFAR-10-C's 32×32 levels used unchanged on 28×28), edges reflected.
//   - contrast: (x − m)·c + m, m the image's mean, c = 0.75, 0.5, 0.4, 0.3, 0.15 (CIFAR-10-C).
//   - brightness: x + c, c = 0.05, 0.1, 0.15, 0.2, 0.3 (CIFAR-10-C adds c to HSV value; on a
//     grey image that is the pixel value).
//   - rotation: by ±a degrees (sign at random), a = 10, 20, 30, 40, 50, bilinear, zero outside.
//     MNIST-C rotates at one severity; the five-level ladder is ours.
//   - translation: by ±s pixels along each axis (signs at random), s = 1, 2, 3, 4, 5, zero fill.
//     MNIST-C translates at one severity; the ladder is ours.
//   - elastic: Simard et al. (2003) elastic distortion as in MNIST-C and CIFAR-10-C: a uniform
//     [−1, 1] displacement field per axis smoothed by a normalised Gaussian of σ = 4 pixels and
//     scaled by α = 8, 14, 20, 27, 34 (Simard's 34 at level 5, a displacement of ≈ 1.4 pixels
//     rms; the lower levels are ours), bilinear, zero outside.
//
// Every result is clipped to [0, 1]. Severity 0 is the identity.
var corruptions = []string{"gaussian_noise", "shot_noise", "impulse_noise", "gaussian_blur", "contrast",
	"brightness", "rotation", "translation", "elastic"}

// MaxSeverity is the highest corruption severity.
const MaxSeverity = 5

// Corruptions returns the names Corrupt takes, in table order (a new slice: callers may modify it).
func Corruptions() []string { return slices.Clone(corruptions) }

// corruptionLevels are the parameters c of severities 1–5 (see Corruptions).
var corruptionLevels = map[string][MaxSeverity]float64{
	"gaussian_noise": {0.04, 0.06, 0.08, 0.09, 0.10},
	"shot_noise":     {500, 250, 100, 75, 50},
	"impulse_noise":  {0.01, 0.02, 0.03, 0.05, 0.07},
	"gaussian_blur":  {0.4, 0.6, 0.7, 0.8, 1.0},
	"contrast":       {0.75, 0.5, 0.4, 0.3, 0.15},
	"brightness":     {0.05, 0.1, 0.15, 0.2, 0.3},
	"rotation":       {10, 20, 30, 40, 50},
	"translation":    {1, 2, 3, 4, 5},
	"elastic":        {8, 14, 20, 27, 34},
}

// elasticSigma is the elastic distortion's smoothing σ in pixels (Simard et al. 2003).
const elasticSigma = 4

// ParseCorruption parses "CORRUPTION:SEVERITY" (the part of data fmnist-c:… after the prefix).
func ParseCorruption(s string) (name string, severity int, err error) {
	name, sev, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, fmt.Errorf("corruption %q: want CORRUPTION:SEVERITY", s)
	}
	if !slices.Contains(corruptions, name) {
		return "", 0, fmt.Errorf("corruption %q is not one of %s", name, strings.Join(corruptions, ", "))
	}
	severity, err = strconv.Atoi(sev)
	if err != nil || severity < 0 || severity > MaxSeverity {
		return "", 0, fmt.Errorf("corruption %s: severity %q is not an integer in [0, %d]", name, sev, MaxSeverity)
	}
	return name, severity, nil
}

// Corrupt returns a copy of d, a set of one-channel images with values in [0, 1], with every
// image corrupted by name at severity (0–5). Image i draws its randomness from PCG(seed, i), so
// the result depends only on (seed, i, the image) and not on the order or the other images.
func Corrupt(d *Dataset, name string, severity int, seed uint64) (*Dataset, error) {
	levels, ok := corruptionLevels[name]
	if !ok {
		return nil, fmt.Errorf("corrupt: %q is not one of %s", name, strings.Join(corruptions, ", "))
	}
	if severity < 0 || severity > MaxSeverity {
		return nil, fmt.Errorf("corrupt: severity %d outside [0, %d]", severity, MaxSeverity)
	}
	if len(d.Shape) != 3 || d.Shape[0] != 1 {
		return nil, fmt.Errorf("corrupt: data %s has example shape %v, want one-channel images [1 H W]", d.Name, d.Shape)
	}
	out := *d
	out.Name = fmt.Sprintf("%s-c:%s:%d", d.Name, name, severity)
	out.X = slices.Clone(d.X)
	if severity == 0 {
		return &out, nil
	}
	c := levels[severity-1]
	h, w := d.Shape[1], d.Shape[2]
	for i := 0; i < d.N; i++ {
		img := out.X[i*d.Dim : (i+1)*d.Dim]
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		corruptImage(img, h, w, name, c, rng)
		for j, v := range img {
			img[j] = min(max(v, 0), 1)
		}
	}
	return &out, nil
}

// corruptImage applies one corruption with parameter c to img (h×w, row-major) in place.
func corruptImage(img []float32, h, w int, name string, c float64, rng *rand.Rand) {
	switch name {
	case "gaussian_noise":
		for j, v := range img {
			img[j] = float32(float64(v) + c*rng.NormFloat64())
		}
	case "shot_noise":
		for j, v := range img {
			img[j] = float32(poisson(float64(v)*c, rng) / c)
		}
	case "impulse_noise":
		for j := range img {
			if rng.Float64() < c {
				img[j] = float32(rng.IntN(2))
			}
		}
	case "gaussian_blur":
		blur(img, h, w, c)
	case "contrast":
		m := 0.0
		for _, v := range img {
			m += float64(v)
		}
		m /= float64(len(img))
		for j, v := range img {
			img[j] = float32((float64(v)-m)*c + m)
		}
	case "brightness":
		for j, v := range img {
			img[j] = float32(float64(v) + c)
		}
	case "rotation":
		a := c
		if rng.IntN(2) == 0 {
			a = -a
		}
		rotate(img, h, w, a)
	case "translation":
		sy, sx := c, c
		if rng.IntN(2) == 0 {
			sy = -sy
		}
		if rng.IntN(2) == 0 {
			sx = -sx
		}
		translate(img, h, w, sy, sx)
	case "elastic":
		uy, ux := make([]float32, h*w), make([]float32, h*w)
		for j := range uy {
			uy[j], ux[j] = float32(2*rng.Float64()-1), float32(2*rng.Float64()-1)
		}
		elastic(img, h, w, c, uy, ux)
	}
}

// rotate rotates img (h×w) by degrees about its centre ((h−1)/2, (w−1)/2): output pixel (y, x)
// is img sampled bilinearly at the centre + R·((y, x) − centre), R the rotation by the angle,
// zero outside. (Positive degrees turn the picture clockwise as displayed, rows downward; it
// equals scipy.ndimage.rotate(img, −degrees, reshape=False, order=1, mode="grid-constant").)
func rotate(img []float32, h, w int, degrees float64) {
	sin, cos := math.Sincos(degrees * math.Pi / 180)
	cy, cx := float64(h-1)/2, float64(w-1)/2
	warp(img, h, w, func(y, x int) (float64, float64) {
		dy, dx := float64(y)-cy, float64(x)-cx
		return cy + cos*dy - sin*dx, cx + sin*dy + cos*dx
	})
}

// translate moves img (h×w) by sy rows down and sx columns right, zero fill.
func translate(img []float32, h, w int, sy, sx float64) {
	warp(img, h, w, func(y, x int) (float64, float64) { return float64(y) - sy, float64(x) - sx })
}

// elastic distorts img (h×w) by the displacement field alpha·G(uy), alpha·G(ux), G the
// normalised Gaussian filter of σ = elasticSigma (edges reflected) and uy, ux the raw fields
// (uniform in [−1, 1]; overwritten): output pixel (y, x) is img sampled bilinearly at
// (y + dy, x + dx), zero outside.
func elastic(img []float32, h, w int, alpha float64, uy, ux []float32) {
	blur(uy, h, w, elasticSigma)
	blur(ux, h, w, elasticSigma)
	warp(img, h, w, func(y, x int) (float64, float64) {
		return float64(y) + alpha*float64(uy[y*w+x]), float64(x) + alpha*float64(ux[y*w+x])
	})
}

// poisson draws a Poisson variate of mean lambda (Knuth's product method below 30, a rounded
// normal approximation above).
func poisson(lambda float64, rng *rand.Rand) float64 {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
	}
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// blur filters img (h×w) with a separable Gaussian of standard deviation sigma, truncated at
// 4σ, edges reflected.
func blur(img []float32, h, w int, sigma float64) {
	r := int(math.Ceil(4 * sigma))
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := range k {
		d := float64(i - r)
		k[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	reflect := func(i, n int) int {
		for i < 0 || i >= n {
			if i < 0 {
				i = -i - 1
			}
			if i >= n {
				i = 2*n - i - 1
			}
		}
		return i
	}
	tmp := make([]float64, h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			s := 0.0
			for i, kv := range k {
				s += kv * float64(img[y*w+reflect(x+i-r, w)])
			}
			tmp[y*w+x] = s
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			s := 0.0
			for i, kv := range k {
				s += kv * tmp[reflect(y+i-r, h)*w+x]
			}
			img[y*w+x] = float32(s)
		}
	}
}

// warp replaces img (h×w) by img sampled bilinearly at src(y, x) for every output pixel (y, x),
// zero outside the image.
func warp(img []float32, h, w int, src func(y, x int) (float64, float64)) {
	in := slices.Clone(img)
	at := func(y, x int) float64 {
		if y < 0 || y >= h || x < 0 || x >= w {
			return 0
		}
		return float64(in[y*w+x])
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			sy, sx := src(y, x)
			y0, x0 := math.Floor(sy), math.Floor(sx)
			fy, fx := sy-y0, sx-x0
			iy, ix := int(y0), int(x0)
			img[y*w+x] = float32((1-fy)*((1-fx)*at(iy, ix)+fx*at(iy, ix+1)) + fy*((1-fx)*at(iy+1, ix)+fx*at(iy+1, ix+1)))
		}
	}
}
