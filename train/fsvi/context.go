package fsvi

import (
	"errors"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/csvrecords"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/train/data"
)

// Context distributions (the config key context).
const (
	// RandomMonochrome draws images whose every value is one grey level, uniform between the
	// smallest and largest value of the training inputs (paper 004's p_{X_C} for Fashion-MNIST
	// and CIFAR-10). For feature vectors every feature gets the same value.
	RandomMonochrome = "random-monochrome"
	// Uniform draws every feature independently and uniformly from the training inputs' range of
	// that feature widened by the margin (a fraction of the range) on each side.
	Uniform = "uniform"
	// Corrupted takes random training inputs and corrupts them: images are shifted by up to 4
	// pixels (zero padding, as RandomCrop(padding=4)), flipped horizontally with probability ½
	// and given a random brightness and contrast factor in [0.5, 1.5] (the reference code's
	// context_transform, without blur and solarisation); feature vectors get Gaussian noise of
	// each feature's standard deviation.
	Corrupted = "corrupted"
	// DataPrefix names a file of context inputs: data:PATH, a CSV file of numbers (an optional
	// header row) whose every row is one input in the training data's scale and layout (C×H×W
	// for images); inputs are drawn uniformly with replacement.
	DataPrefix = "data:"
	// Digits draws scikit-learn's bundled 8×8 digits (data.Digits: Debian's python3-sklearn),
	// upsampled to the training images' size: a second data set as the context, the stand-in for
	// paper 004's KMNIST-context row. digits:PATH reads another copy of digits.csv(.gz). Needs
	// square one-channel training images.
	Digits = "digits"
)

// MaxContextFileBytes bounds a data:PATH context file.
const MaxContextFileBytes = 1 << 30

// CheckContext checks a context spec without reading any file.
func CheckContext(spec string) error {
	switch {
	case spec == RandomMonochrome, spec == Uniform, spec == Corrupted:
		return nil
	case strings.HasPrefix(spec, DataPrefix) && len(spec) > len(DataPrefix):
		return nil
	case spec == Digits || strings.HasPrefix(spec, Digits+":") && len(spec) > len(Digits)+1:
		return nil
	}
	return fmt.Errorf("context %q is not random-monochrome, uniform, corrupted, digits[:PATH] or data:PATH", spec)
}

// Sampler draws context inputs. It holds no random state: every Sample takes the generator.
type Sampler struct {
	kind       string
	shape      []int
	dim        int
	lo, hi     []float32 // per-feature range (uniform, widened)
	gmin, gmax float32   // range of every training value (random-monochrome)
	sd         []float32 // per-feature standard deviation (corrupted feature vectors)
	pool       []float32 // candidate inputs (corrupted: the training inputs; data:PATH: the file's)
}

// NewSampler prepares the context distribution spec for inputs like train's. margin widens the
// uniform distribution's ranges by that fraction of each range on each side.
func NewSampler(spec string, train *data.Dataset, margin float64) (*Sampler, error) {
	if err := CheckContext(spec); err != nil {
		return nil, err
	}
	if train == nil || train.N < 1 || train.Dim < 1 {
		return nil, errors.New("fsvi: context: no training inputs")
	}
	if !(margin >= 0) || math.IsInf(margin, 0) {
		return nil, fmt.Errorf("fsvi: context margin %g must be finite and ≥ 0", margin)
	}
	s := &Sampler{kind: spec, shape: append([]int(nil), train.Shape...), dim: train.Dim}
	s.lo, s.hi = make([]float32, s.dim), make([]float32, s.dim)
	mean, sq := make([]float64, s.dim), make([]float64, s.dim)
	copy(s.lo, train.Row(0))
	copy(s.hi, train.Row(0))
	for i := 0; i < train.N; i++ {
		for j, v := range train.Row(i) {
			s.lo[j], s.hi[j] = min(s.lo[j], v), max(s.hi[j], v)
			mean[j] += float64(v)
			sq[j] += float64(v) * float64(v)
		}
	}
	s.gmin, s.gmax = s.lo[0], s.hi[0]
	s.sd = make([]float32, s.dim)
	for j := range s.lo {
		s.gmin, s.gmax = min(s.gmin, s.lo[j]), max(s.gmax, s.hi[j])
		m := mean[j] / float64(train.N)
		s.sd[j] = float32(math.Sqrt(max(0, sq[j]/float64(train.N)-m*m)))
		w := float32(margin) * (s.hi[j] - s.lo[j])
		s.lo[j] -= w
		s.hi[j] += w
	}
	switch {
	case spec == Corrupted:
		s.pool = train.X
	case strings.HasPrefix(spec, DataPrefix):
		var err error
		if s.pool, err = readContextCSV(strings.TrimPrefix(spec, DataPrefix), s.dim); err != nil {
			return nil, err
		}
	case spec == Digits || strings.HasPrefix(spec, Digits+":"):
		path := strings.TrimPrefix(strings.TrimPrefix(spec, Digits), ":")
		if path == "" {
			path = data.DefaultDigitsPath
		}
		sh := s.shape
		if len(sh) != 3 || sh[0] != 1 || sh[1] != sh[2] {
			return nil, fmt.Errorf("fsvi: context %s needs square one-channel training images, not shape %v", spec, sh)
		}
		d, err := data.Digits(path, sh[1])
		if err != nil {
			return nil, fmt.Errorf("fsvi: context %s (apt-get install python3-sklearn provides %s): %w", spec, data.DefaultDigitsPath, err)
		}
		s.pool = d.X
	}
	return s, nil
}

// Kind returns the context spec.
func (s *Sampler) Kind() string { return s.kind }

// Shape returns one context input's shape.
func (s *Sampler) Shape() []int { return s.shape }

// Sample draws m context inputs into dst (resized; returned), m×Dim values, with rng.
func (s *Sampler) Sample(rng *rand.Rand, m int, dst []float32) []float32 {
	dst = append(dst[:0], make([]float32, m*s.dim)...)
	for n := 0; n < m; n++ {
		x := dst[n*s.dim : (n+1)*s.dim]
		switch {
		case s.kind == RandomMonochrome:
			v := s.gmin + float32(rng.Float64())*(s.gmax-s.gmin)
			for j := range x {
				x[j] = v
			}
		case s.kind == Uniform:
			for j := range x {
				x[j] = s.lo[j] + float32(rng.Float64())*(s.hi[j]-s.lo[j])
			}
		case s.kind == Corrupted:
			i := rng.IntN(len(s.pool) / s.dim)
			s.corrupt(rng, s.pool[i*s.dim:(i+1)*s.dim], x)
		default: // data:PATH, digits
			i := rng.IntN(len(s.pool) / s.dim)
			copy(x, s.pool[i*s.dim:(i+1)*s.dim])
		}
	}
	return dst
}

// corrupt writes a corrupted copy of src to x.
func (s *Sampler) corrupt(rng *rand.Rand, src, x []float32) {
	if len(s.shape) != 3 {
		for j := range x {
			x[j] = src[j] + s.sd[j]*float32(rng.NormFloat64())
		}
		return
	}
	c, h, w := s.shape[0], s.shape[1], s.shape[2]
	dy, dx := rng.IntN(9)-4, rng.IntN(9)-4
	flip := rng.IntN(2) == 1
	bright := 0.5 + rng.Float64()
	contrast := 0.5 + rng.Float64()
	for ch := 0; ch < c; ch++ {
		plane := x[ch*h*w : (ch+1)*h*w]
		var mean float64
		for i := 0; i < h; i++ {
			for j := 0; j < w; j++ {
				si, sj := i+dy, j+dx
				if flip {
					sj = w - 1 - j + dx
				}
				var v float32
				if si >= 0 && si < h && sj >= 0 && sj < w {
					v = src[ch*h*w+si*w+sj]
				}
				v *= float32(bright)
				plane[i*w+j] = v
				mean += float64(v)
			}
		}
		mean /= float64(h * w)
		for k, v := range plane {
			plane[k] = float32(mean + contrast*(float64(v)-mean))
		}
	}
}

// readContextCSV reads a CSV file of context inputs, dim numbers a row (a header row is skipped).
func readContextCSV(path string, dim int) ([]float32, error) {
	f, err := readlimit.Open(path, MaxContextFileBytes)
	if err != nil {
		return nil, fmt.Errorf("fsvi: context: %w", err)
	}
	defer f.Close()
	r := csvrecords.New(f, path, csvrecords.Limits{MaxBytes: MaxContextFileBytes})
	var out []float32
	for first := true; ; first = false {
		rec, line, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fsvi: context: %w", err)
		}
		if first && csvrecords.IsHeaderRow(rec) {
			continue
		}
		if len(rec) != dim {
			return nil, fmt.Errorf("fsvi: context %s line %d: %d values, the inputs have %d", path, line, len(rec), dim)
		}
		for _, f := range rec {
			v, err := csvrecords.ParseFinite(f)
			if err != nil {
				return nil, fmt.Errorf("fsvi: context %s line %d: %w", path, line, err)
			}
			if math.Abs(float64(v)) > data.MaxAbsValue { // the training data's bound
				return nil, fmt.Errorf("fsvi: context %s line %d: %s is outside ±%.0e (float32 arithmetic overflows on values this large in training: rescale the column)",
					path, line, csvrecords.QuotePrefix(f), data.MaxAbsValue)
			}
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fsvi: context %s: no inputs", path)
	}
	return out, nil
}
