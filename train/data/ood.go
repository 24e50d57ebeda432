package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// DefaultDigitsPath is where Debian's python3-sklearn package keeps scikit-learn's bundled 8×8
// handwritten digits (load_digits' data: 1797 rows of 64 pixel values 0–16 and the label).
const DefaultDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

// Digits' limits: the real file is 265 kB uncompressed (57 kB gzipped) with 1797 rows.
const (
	digitsMaxBytes = 64 << 20
	// digitsMaxRows bounds the rows read (36 times the real file's): the 8×8 images are kept
	// until the rows are counted, 256 bytes a row.
	digitsMaxRows = 1 << 16
	// digitsMaxGzipRatio bounds the decompressed size over the compressed file's (the real file
	// compresses 4.6 times; a file of identical rows, a decompression bomb, 250 times).
	digitsMaxGzipRatio = 64
	digitsSide         = 8
	digitsMaxValue     = 16
)

// ShuffledPixelsSeed is the fixed seed of the pixel permutation of the "fmnist-shuffled" OOD
// set, so that every model is scored on the same images whatever its run's seed.
const ShuffledPixelsSeed = 20221128

// Digits reads scikit-learn's digits.csv or digits.csv.gz (gzip is recognised by its magic
// bytes; no header; each row 64 pixel values in [0, 16], row-major 8×8, then the label 0–9) and
// returns the images upsampled to size×size by bilinear interpolation (UpsampleBilinear), the
// values divided by 16 so that they lie in [0, 1] as Fashion-MNIST's: 1797 examples of shape
// [1, size, size], labels the digits (10 classes), Scale 1/16. It is the stand-in for MNIST as an
// out-of-distribution set for Fashion-MNIST models (size 28). Errors name the file, and for a
// bad row its line and what is wrong.
func Digits(path string, size int) (*Dataset, error) {
	return DigitsHead(path, size, 0)
}

// DigitsHead is Digits reading only the first n rows (n ≤ 0: every row): reading, and the
// decompression of a gzipped file, stop after them, and only they are upsampled. A file of more
// than 65536 rows, or a gzipped one that decompresses to more than 64 times its size, is an
// error.
func DigitsHead(path string, size, n int) (*Dataset, error) {
	if size < 1 || size > 1<<12 {
		return nil, fmt.Errorf("digits %s: image size %d outside [1, 4096]", path, size)
	}
	raw, err := readlimit.ReadFile(path, digitsMaxBytes)
	if err != nil {
		return nil, fmt.Errorf("digits: %w", err)
	}
	var r io.Reader = bytes.NewReader(raw)
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("digits %s: gzip: %w", path, err)
		}
		defer zr.Close()
		maxText := min(digitsMaxBytes, digitsMaxGzipRatio*int64(len(raw)))
		r = readlimit.Reader(zr, fmt.Sprintf("%s (decompressed, at most %d times its %d bytes)", path, digitsMaxGzipRatio, len(raw)), maxText)
	}
	d, err := readDigits(r, size, n, digitsMaxValues)
	if err != nil {
		return nil, fmt.Errorf("digits %s: %w", path, err)
	}
	d.Name = "digits:" + path
	d.Scale = 1.0 / digitsMaxValue
	return d, nil
}

// digitsMaxValues bounds the upsampled digits' values (1 GiB of float32).
const digitsMaxValues = 1 << 28

// readDigits parses the rows of a digits CSV (see Digits) — the first limit rows (limit ≤ 0:
// all of them, at most digitsMaxRows) — and upsamples them, at most maxValues values in all.
// The 8×8 images are kept until the rows are counted, then upsampled into one slice of the
// exact size.
func readDigits(r io.Reader, size, limit int, maxValues int64) (*Dataset, error) {
	const cols = digitsSide*digitsSide + 1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	d := &Dataset{Dim: size * size, Shape: []int{1, size, size}, Classes: 10}
	var src []float32 // the 8×8 images, divided by digitsMaxValue
	line := 0
	for (limit <= 0 || d.N < limit) && sc.Scan() {
		if sc.Err() != nil {
			break // a read error (past the size limit): the last token is a partial line
		}
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if d.N >= digitsMaxRows {
			return nil, fmt.Errorf("line %d: more than %d rows", line, digitsMaxRows)
		}
		if int64(d.N+1)*int64(size)*int64(size) > maxValues {
			// The size comes from the data the digits stand beside (an IDX header): 1797 rows at
			// 4096×4096 would be 120 GB.
			return nil, fmt.Errorf("line %d: %d rows upsampled to %d×%d exceed %d values", line, d.N+1, size, size, maxValues)
		}
		fields := strings.Split(text, ",")
		if len(fields) != cols {
			return nil, fmt.Errorf("line %d: %d values, want %d (64 pixels and the label)", line, len(fields), cols)
		}
		for i, f := range fields[:cols-1] {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(v >= 0 && v <= digitsMaxValue) {
				return nil, fmt.Errorf("line %d: pixel %d is %q, want a number in [0, %d]", line, i, f, digitsMaxValue)
			}
			src = append(src, float32(v/digitsMaxValue))
		}
		lab := strings.TrimSpace(fields[cols-1])
		y, err := strconv.ParseFloat(lab, 64)
		if err != nil || y != math.Trunc(y) || y < 0 || y > 9 {
			return nil, fmt.Errorf("line %d: label %q is not a digit 0–9", line, lab)
		}
		d.Labels = append(d.Labels, int(y))
		d.N++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if d.N == 0 {
		return nil, fmt.Errorf("no rows")
	}
	const px = digitsSide * digitsSide
	d.X = make([]float32, d.N*d.Dim)
	for i := 0; i < d.N; i++ {
		upsampleInto(d.X[i*d.Dim:(i+1)*d.Dim], src[i*px:(i+1)*px], digitsSide, digitsSide, size, size)
	}
	return d, nil
}

// UpsampleBilinear resizes the h×w row-major image src to H×W by bilinear interpolation with
// half-pixel centres (PyTorch's interpolate(mode="bilinear", align_corners=False), PIL's
// bilinear resize when enlarging): output pixel (i, j) samples the input at
// ((i+½)·h/H − ½, (j+½)·w/W − ½), clamped to the input's extent, so the output's values lie
// within the input's range.
func UpsampleBilinear(src []float32, h, w, H, W int) []float32 {
	out := make([]float32, H*W)
	upsampleInto(out, src, h, w, H, W)
	return out
}

// upsampleInto is UpsampleBilinear writing into out (H×W values).
func upsampleInto(out, src []float32, h, w, H, W int) {
	coord := func(o, n, N int) (int, int, float64) {
		x := (float64(o)+0.5)*float64(n)/float64(N) - 0.5
		x = math.Max(0, math.Min(x, float64(n-1)))
		lo := int(math.Floor(x))
		hi := min(lo+1, n-1)
		return lo, hi, x - float64(lo)
	}
	for i := 0; i < H; i++ {
		y0, y1, fy := coord(i, h, H)
		for j := 0; j < W; j++ {
			x0, x1, fx := coord(j, w, W)
			top := float64(src[y0*w+x0])*(1-fx) + float64(src[y0*w+x1])*fx
			bot := float64(src[y1*w+x0])*(1-fx) + float64(src[y1*w+x1])*fx
			out[i*W+j] = float32(top*(1-fy) + bot*fy)
		}
	}
}

// ShufflePixels returns a copy of d with the values of every example permuted by one
// permutation of [0, Dim) drawn from seed (the same for all examples), labels kept: images with
// Fashion-MNIST's pixel statistics and none of its structure, an out-of-distribution set that is
// not a class of it ("fmnist-shuffled" uses ShuffledPixelsSeed).
func ShufflePixels(d *Dataset, seed uint64) *Dataset {
	perm := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)).Perm(d.Dim)
	out := *d
	out.Name = fmt.Sprintf("%s[pixels shuffled, seed %d]", d.Name, seed)
	out.Shape = append([]int(nil), d.Shape...)
	out.Labels = append([]int(nil), d.Labels...)
	out.Targets = append([]float32(nil), d.Targets...)
	if d.Targets == nil {
		out.Targets = nil
	}
	if d.Labels == nil {
		out.Labels = nil
	}
	out.X = make([]float32, len(d.X))
	for n := 0; n < d.N; n++ {
		row, dst := d.Row(n), out.X[n*d.Dim:(n+1)*d.Dim]
		for k, p := range perm {
			dst[k] = row[p]
		}
	}
	return &out
}
