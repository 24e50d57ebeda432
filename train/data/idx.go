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
)

// DefaultFashionMNISTDir is where Debian-style installs keep the Fashion-MNIST IDX files.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// maxIDXElements bounds what ReadIDX allocates for one file (a hostile header must not make it
// allocate without limit).
const maxIDXElements = 1 << 30

// ReadIDX decodes an IDX file (the MNIST format: a zero word, a type byte 0x08 for unsigned bytes,
// the number of dimensions, big-endian u32 sizes, then the data). Only unsigned-byte data is
// supported. It returns the sizes and the raw bytes.
func ReadIDX(r io.Reader) ([]int, []byte, error) {
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
	total := 1
	for i := range dims {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, nil, fmt.Errorf("idx header: dimension %d: %w", i, err)
		}
		v := binary.BigEndian.Uint32(b[:])
		if v > maxIDXElements || (v > 0 && uint64(total)*uint64(v) > maxIDXElements) {
			return nil, nil, fmt.Errorf("idx header: dimensions too large")
		}
		dims[i] = int(v)
		total *= int(v)
	}
	buf := make([]byte, total)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, nil, fmt.Errorf("idx data (%d bytes expected): %w", total, err)
	}
	return dims, buf, nil
}

// readIDXFile reads path, gunzipping it when it ends in .gz.
func readIDXFile(path string) ([]int, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	dims, b, err := ReadIDX(r)
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
	prefix := map[string]string{"train": "train", "test": "t10k"}[split]
	if prefix == "" {
		return nil, fmt.Errorf("fashion-mnist: split %q is not train or test", split)
	}
	ip, err := findIDX(dir, prefix+"-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	lp, err := findIDX(dir, prefix+"-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	return loadIDXPair(ip, lp, "fashion-mnist/"+split, 10)
}

func loadIDXPair(imagePath, labelPath, name string, classes int) (*Dataset, error) {
	idims, img, err := readIDXFile(imagePath)
	if err != nil {
		return nil, err
	}
	ldims, lab, err := readIDXFile(labelPath)
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 || len(ldims) != 1 || idims[0] != ldims[0] {
		return nil, fmt.Errorf("%s: image dims %v do not match label dims %v", name, idims, ldims)
	}
	n, h, w := idims[0], idims[1], idims[2]
	d := &Dataset{Name: name, N: n, Dim: h * w, Shape: []int{1, h, w}, Classes: classes,
		X: make([]float32, n*h*w), Labels: make([]int, n)}
	for i, v := range img {
		d.X[i] = float32(v) / 255
	}
	for i, v := range lab {
		if int(v) >= classes {
			return nil, fmt.Errorf("%s: label %d of example %d outside [0, %d)", labelPath, v, i, classes)
		}
		d.Labels[i] = int(v)
	}
	return d, nil
}

// ErrNoData is wrapped by loaders when a data set's files are absent.
var ErrNoData = errors.New("data set not found")
