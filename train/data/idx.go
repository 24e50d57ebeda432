package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// DefaultFashionMNISTDir is where Debian-style installs keep the Fashion-MNIST IDX files.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Default IDX limits (IDXLimits fields left zero take these).
const (
	// DefaultIDXMaxElements bounds the product of an IDX file's dimensions: 256 Mi values
	// (Fashion-MNIST's training images are 47 Mi).
	DefaultIDXMaxElements = 1 << 28
	// DefaultIDXMaxGzipRatio bounds how many times larger than its compressed file a gzipped
	// IDX file may declare its data: real image and label files compress 2 to 10 times;
	// deflate reaches about 1000, as a decompression bomb does.
	DefaultIDXMaxGzipRatio = 64
)

// IDXLimits bound what the IDX readers accept, so that a hostile header or a decompression
// bomb is an error after bounded memory and time. A zero field takes its default.
type IDXLimits struct {
	// MaxElements bounds the product of the dimensions (DefaultIDXMaxElements).
	MaxElements int64
	// MaxDataBytes, when positive, bounds the data the header may declare; the file readers
	// derive it from the file's size (the size itself, or MaxGzipRatio times it for gzip).
	MaxDataBytes int64
	// MaxGzipRatio bounds a gzipped file's declared data size over its compressed size
	// (DefaultIDXMaxGzipRatio).
	MaxGzipRatio int64
	// Records, when positive, reads only the first Records records (slices along the first
	// dimension): the reader stops there, so the rest of the file is neither read, decompressed
	// nor checked, and the returned first dimension is min(Records, the declared one). The
	// header is checked in full as without it.
	Records int64
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l IDXLimits) WithDefaults() IDXLimits {
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultIDXMaxElements
	}
	if l.MaxGzipRatio <= 0 {
		l.MaxGzipRatio = DefaultIDXMaxGzipRatio
	}
	return l
}

// ErrIDXTooLarge is wrapped by the IDX readers' errors for headers that declare more data than
// the limits allow.
var ErrIDXTooLarge = errors.New("more data than the limit")

// idxChunk is how much ReadIDXLimits reads at a time when it cannot trust the declared size.
const idxChunk = 1 << 20

// ReadIDX decodes an IDX file (the MNIST format: a zero word, a type byte 0x08 for unsigned bytes,
// the number of dimensions, big-endian u32 sizes, then the data) with the default IDXLimits.
// Only unsigned-byte data is supported. It returns the sizes and the raw bytes.
func ReadIDX(r io.Reader) ([]int, []byte, error) {
	return ReadIDXLimits(r, IDXLimits{})
}

// ReadIDXLimits is ReadIDX within lim: a header declaring more than lim.MaxElements values
// (or lim.MaxDataBytes bytes) is refused before anything is allocated, the data is read in
// chunks (a header that lies costs no more memory than the data really there), no more than
// the declared data is decompressed, and data beyond it is an error — unless lim.Records asks
// for the first records only, when reading stops after them.
func ReadIDXLimits(r io.Reader, lim IDXLimits) ([]int, []byte, error) {
	lim = lim.WithDefaults()
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, fmt.Errorf("idx header: %w", err)
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, nil, fmt.Errorf("idx header: bad magic % x", hdr)
	}
	if hdr[2] != 0x08 {
		return nil, nil, fmt.Errorf("idx header: element type 0x%02x is not unsigned byte (0x08)", hdr[2])
	}
	nd := int(hdr[3])
	if nd < 1 || nd > 4 {
		return nil, nil, fmt.Errorf("idx header: %d dimensions (want 1 to 4)", nd)
	}
	dims := make([]int, nd)
	total := int64(1)
	for i := range dims {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, nil, fmt.Errorf("idx header: dimension %d: %w", i, err)
		}
		v := int64(binary.BigEndian.Uint32(b[:]))
		dims[i] = int(v)
		if v == 0 {
			return nil, nil, fmt.Errorf("idx header: dimension %d is 0", i)
		}
		if v > lim.MaxElements || total*v > lim.MaxElements {
			return nil, nil, fmt.Errorf("idx header: dimensions %v exceed the limit of %d values: %w", dims[:i+1], lim.MaxElements, ErrIDXTooLarge)
		}
		total *= v
	}
	if lim.MaxDataBytes > 0 && total > lim.MaxDataBytes {
		return nil, nil, fmt.Errorf("idx header: dimensions %v declare %d bytes of data; the file can hold at most %d: %w", dims, total, lim.MaxDataBytes, ErrIDXTooLarge)
	}
	head := lim.Records > 0 && lim.Records < int64(dims[0])
	if head {
		total = total / int64(dims[0]) * lim.Records
		dims[0] = int(lim.Records)
	}
	buf := make([]byte, 0, min(total, idxChunk))
	for int64(len(buf)) < total {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(total, 2*int64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, nil, fmt.Errorf("idx data: %d bytes, the header declares %d (dimensions %v): %w", len(buf), total, dims, io.ErrUnexpectedEOF)
			}
			return nil, nil, fmt.Errorf("idx data: %w", err)
		}
	}
	if head {
		return dims, buf, nil
	}
	var extra [1]byte
	if n, err := io.ReadFull(r, extra[:]); n > 0 {
		return nil, nil, fmt.Errorf("idx data: more than the %d bytes the header declares (dimensions %v)", total, dims)
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("idx data: %w", err)
	}
	return dims, buf, nil
}

// readIDXFile reads path, gunzipping it when it ends in .gz, within the default limits and
// those derived from the file's size. Only regular files are read.
func readIDXFile(path string) ([]int, []byte, error) {
	return readIDXFileLimits(path, IDXLimits{})
}

func readIDXFileLimits(path string, lim IDXLimits) ([]int, []byte, error) {
	lim = lim.WithDefaults()
	// The largest file that can hold MaxElements values: a header, the data, and deflate's
	// worst-case overhead for gzip.
	maxFile := 64 + lim.MaxElements + lim.MaxElements/64 + 1<<20
	f, err := readlimit.Open(path, maxFile)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var r io.Reader = bufio.NewReaderSize(readlimit.Reader(f, path, maxFile), 1<<20)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
		lim.MaxDataBytes = fi.Size() * lim.MaxGzipRatio
	} else {
		lim.MaxDataBytes = fi.Size()
	}
	dims, b, err := ReadIDXLimits(r, lim)
	if err != nil && errors.Is(err, ErrIDXTooLarge) && strings.HasSuffix(path, ".gz") {
		return nil, nil, fmt.Errorf("%s: %w (a gzipped IDX file may hold at most %d times its %d bytes)", path, err, lim.MaxGzipRatio, fi.Size())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return dims, b, nil
}

// findIDX returns dir/base.gz or dir/base, whichever exists.
func findIDX(dir, base string) (string, error) {
	for _, p := range []string{filepath.Join(dir, base+".gz"), filepath.Join(dir, base)} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("fashion-mnist: no %s[.gz] in %s: %w", base, dir, os.ErrNotExist)
}

// FashionMNIST loads the "train" or "test" split of Fashion-MNIST from dir (IDX files, gzipped
// or not, with the standard names train-images-idx3-ubyte etc.). Pixels are scaled to [0, 1]
// with no other normalisation (as the bayesianize fixtures were trained); images are 1×28×28.
func FashionMNIST(dir, split string) (*Dataset, error) {
	return FashionMNISTHead(dir, split, 0)
}

// FashionMNISTHead is FashionMNIST reading only the split's first n examples (n ≤ 0: all):
// the files are decompressed no further than those (IDXLimits.Records), which saves a run on a
// few hundred examples the second it would spend on the 47 MB of the training images.
func FashionMNISTHead(dir, split string, n int) (*Dataset, error) {
	ip, lp, err := fashionMNISTPaths(dir, split)
	if err != nil {
		return nil, err
	}
	d, err := loadIDXPair(ip, lp, "fashion-mnist/"+split, 10, int64(max(n, 0)))
	if err != nil {
		return nil, err
	}
	d.ClassNames = FashionMNISTClasses()
	return d, nil
}

// FashionMNISTLabels returns the labels of a Fashion-MNIST split in file order, reading only its
// labels file (a few tens of kilobytes), so that a caller can decide how many examples to load
// with FashionMNISTHead before reading any image.
func FashionMNISTLabels(dir, split string) ([]int, error) {
	_, lp, err := fashionMNISTPaths(dir, split)
	if err != nil {
		return nil, err
	}
	ldims, lab, err := readIDXFile(lp)
	if err != nil {
		return nil, err
	}
	return checkLabels(lp, ldims, lab, 10)
}

// FashionMNISTFiles returns every file FashionMNIST may read from dir ("" is
// DefaultFashionMNISTDir): both splits' images and labels, gzipped or not. A command that writes
// files checks that none of its outputs is one of them.
func FashionMNISTFiles(dir string) []string {
	if dir == "" {
		dir = DefaultFashionMNISTDir
	}
	var out []string
	for _, split := range []string{"train", "t10k"} {
		for _, kind := range []string{"-images-idx3-ubyte", "-labels-idx1-ubyte"} {
			out = append(out, filepath.Join(dir, split+kind), filepath.Join(dir, split+kind+".gz"))
		}
	}
	return out
}

// fashionMNISTPaths returns the image and label files of a split in dir.
func fashionMNISTPaths(dir, split string) (images, labels string, err error) {
	prefix := map[string]string{"train": "train", "test": "t10k"}[split]
	if prefix == "" {
		return "", "", fmt.Errorf("fashion-mnist: split %q is not train or test", split)
	}
	if images, err = findIDX(dir, prefix+"-images-idx3-ubyte"); err != nil {
		return "", "", err
	}
	if labels, err = findIDX(dir, prefix+"-labels-idx1-ubyte"); err != nil {
		return "", "", err
	}
	return images, labels, nil
}

// FashionMNISTClasses returns Fashion-MNIST's class names, by label.
func FashionMNISTClasses() []string {
	return []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
}

// loadIDXPair reads an image file and its labels, the first records examples only when records
// is positive.
func loadIDXPair(imagePath, labelPath, name string, classes int, records int64) (*Dataset, error) {
	lim := IDXLimits{Records: records}
	idims, img, err := readIDXFileLimits(imagePath, lim)
	if err != nil {
		return nil, err
	}
	ldims, lab, err := readIDXFileLimits(labelPath, lim)
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 || len(ldims) != 1 || idims[0] != ldims[0] {
		return nil, fmt.Errorf("%s: image dims %v (%s) do not match label dims %v (%s)", name, idims, imagePath, ldims, labelPath)
	}
	labels, err := checkLabels(labelPath, ldims, lab, classes)
	if err != nil {
		return nil, err
	}
	n, h, w := idims[0], idims[1], idims[2]
	d := &Dataset{Name: name, N: n, Dim: h * w, Shape: []int{1, h, w}, Classes: classes,
		X: make([]float32, n*h*w), Labels: labels, Scale: 1.0 / 255}
	for i, v := range img {
		d.X[i] = float32(v) / 255
	}
	return d, nil
}

// checkLabels converts an IDX label file's bytes to labels, refusing any outside [0, classes).
func checkLabels(path string, dims []int, lab []byte, classes int) ([]int, error) {
	if len(dims) != 1 {
		return nil, fmt.Errorf("%s: labels have dimensions %v, want one", path, dims)
	}
	labels := make([]int, len(lab))
	for i, v := range lab {
		if int(v) >= classes {
			return nil, fmt.Errorf("%s: label %d of example %d outside [0, %d)", path, v, i, classes)
		}
		labels[i] = int(v)
	}
	return labels, nil
}

// ErrNoData is wrapped by loaders when a data set's files are absent.
var ErrNoData = errors.New("data set not found")
