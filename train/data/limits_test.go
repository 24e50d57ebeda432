package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/csvrecords"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

func TestReadIDXLimits(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		lim  IDXLimits
		want string
	}{
		{"huge first dimension", idxBytes([]uint32{0xffffffff, 28, 28}, nil), IDXLimits{}, "exceed the limit"},
		{"huge product", idxBytes([]uint32{1 << 16, 1 << 16}, nil), IDXLimits{}, "exceed the limit"},
		{"over a custom limit", idxBytes([]uint32{10, 10}, make([]byte, 100)), IDXLimits{MaxElements: 99}, "exceed the limit"},
		{"more than the file holds", idxBytes([]uint32{1000, 28, 28}, make([]byte, 10)), IDXLimits{MaxDataBytes: 10}, "at most 10"},
		{"zero dimension", idxBytes([]uint32{0, 28}, nil), IDXLimits{}, "dimension 0 is 0"},
		{"truncated", idxBytes([]uint32{3, 3}, make([]byte, 8)), IDXLimits{}, "8 bytes, the header declares 9"},
		{"trailing data", idxBytes([]uint32{3}, make([]byte, 4)), IDXLimits{}, "more than the 3 bytes"},
		{"lying header, little data", idxBytes([]uint32{1 << 14, 1 << 14}, make([]byte, 5)), IDXLimits{}, "5 bytes, the header declares"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadIDXLimits(bytes.NewReader(tc.in), tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (strings.Contains(tc.want, "at most") || strings.Contains(tc.want, "exceed")) != errors.Is(err, ErrIDXTooLarge) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// writeGzZeros writes path: a gzipped IDX header for dims followed by n zero bytes.
func writeGzZeros(t testing.TB, path string, dims []uint32, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	zw, _ := gzip.NewWriterLevel(bw, gzip.BestCompression)
	zw.Write(idxBytes(dims, nil))
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(zero)))
		zw.Write(zero[:k])
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// bombCases build IDX files that a careless reader would expand or allocate without bound.
var bombCases = []struct {
	name string
	make func(t testing.TB, dir string)
	want string
}{
	{"gzip bomb declaring its size", func(t testing.TB, dir string) {
		// 4096 images of 256×256 zeros: 256 MiB (the element limit) from a file of 250 KiB.
		writeGzZeros(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), []uint32{4096, 256, 256}, 1<<28)
	}, "at most 64 times its"},
	{"gzip bomb behind a small header", func(t testing.TB, dir string) {
		// The header declares 10 images; 1 GiB of zeros follows.
		writeGzZeros(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), []uint32{10, 28, 28}, 1<<30)
	}, "more than the 7840 bytes"},
	{"huge header", func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "train-images-idx3-ubyte"), idxBytes([]uint32{0xffffffff, 0xffffffff, 28}, nil), 0o644)
	}, "exceed the limit"},
	{"huge header within the element limit", func(t testing.TB, dir string) {
		os.WriteFile(filepath.Join(dir, "train-images-idx3-ubyte"), idxBytes([]uint32{300000, 28, 28}, make([]byte, 100)), 0o644)
	}, "the file can hold at most 116"},
}

const bombEnv = "EDGEBNN_IDX_BOMB_DIR"

// TestIDXBombsBounded runs FashionMNIST on each bomb in a fresh process (this test binary,
// re-executed) and asserts an error within 10 s and a peak RSS (VmHWM) of at most 256 MB.
func TestIDXBombsBounded(t *testing.T) {
	if dir := os.Getenv(bombEnv); dir != "" {
		_, err := FashionMNIST(dir, "train")
		testutil.ChildExit(fmt.Sprint(err))
	}
	testutil.SkipWithoutPeakRSS(t)
	for _, bc := range bombCases {
		t.Run(bc.name, func(t *testing.T) {
			dir := t.TempDir()
			bc.make(t, dir)
			os.WriteFile(filepath.Join(dir, "train-labels-idx1-ubyte"), idxBytes([]uint32{10}, make([]byte, 10)), 0o644)
			child := testutil.RunChild(t, "TestIDXBombsBounded", bombEnv+"="+dir)
			t.Logf("%s: %v, peak RSS %.1f MB: %s", bc.name, child.Wall.Round(time.Millisecond), float64(child.PeakRSS)/1e6, child.Result)
			if !strings.Contains(child.Result, bc.want) {
				t.Errorf("error %q, want %q", child.Result, bc.want)
			}
			if child.PeakRSS < 0 || child.PeakRSS > 256<<20 {
				t.Errorf("peak RSS %d bytes (limit 256 MiB)", child.PeakRSS)
			}
			if child.Wall > 10*time.Second {
				t.Errorf("took %v (limit 10 s)", child.Wall)
			}
		})
	}
}

func TestReadCSVHeaderAndRows(t *testing.T) {
	cases := []struct {
		name, in string
		opt      CSVOptions
		want     string // "" : accepted
		n        int
	}{
		{"header of names", "x,y,label\n1,2,0\n3,4,1\n", CSVOptions{}, "", 2},
		{"no header", "1,2,0\n3,4,1\n", CSVOptions{}, "", 2},
		{"byte order mark", "\ufeff1,2,0\n3,4,1\n", CSVOptions{}, "", 2},
		{"malformed first row is an error", "1,abc,0\n3,4,1\n", CSVOptions{}, "line 1 column 2", 0},
		{"NaN first row is an error", "NaN,2,0\n3,4,1\n", CSVOptions{}, "line 1 column 1", 0},
		{"Inf in a later row", "x,y,l\n1,2,0\n+Inf,4,1\n", CSVOptions{}, "line 3 column 1", 0},
		{"explicit header with numbers", "1,2,label\n3,4,1\n", CSVOptions{Header: true}, "", 1},
		{"blank lines keep line numbers", "x,y,l\n\n1,2,0\n\n3,q,1\n", CSVOptions{}, "line 5 column 2", 0},
		{"ragged", "1,2,0\n3,4\n", CSVOptions{}, "line 2 has 2 fields", 0},
		{"header only", "x,y,l\n", CSVOptions{}, "no data rows", 0},
		{"empty", "", CSVOptions{}, "empty", 0},
		{"float32 overflow", "1e39,2,0\n", CSVOptions{}, "line 1 column 1", 0},
		{"regression target NaN", "1,2\n3,NaN\n", CSVOptions{Regression: true}, "line 2 column 2", 0},
		{"long line", "1,2," + strings.Repeat("9", 200) + "\n", CSVOptions{Limits: CSVLimits{MaxLineBytes: 100}}, "line 1: longer than 100 bytes", 0},
		{"long line later", "1,2,3\n1,2," + strings.Repeat("9", 200) + "\n", CSVOptions{Limits: CSVLimits{MaxLineBytes: 100}}, "line 2: longer than 100 bytes", 0},
		{"too many rows", "1,2\n3,4\n5,6\n", CSVOptions{Limits: CSVLimits{MaxRows: 2}}, "more than 2 rows", 0},
		{"too many bytes", "1,2\n3,4\n5,6\n", CSVOptions{Limits: CSVLimits{MaxBytes: 5}}, "too large", 0},
		{"too many columns", "1,2,3,4\n", CSVOptions{Limits: CSVLimits{MaxColumns: 3}}, "line 1: more than 3 fields", 0},
		{"long bad value quoted short", "1," + strings.Repeat("z", 1000) + ",0\n", CSVOptions{}, `"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"…`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ReadCSV(strings.NewReader(tc.in), "t.csv", tc.opt)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d.N != tc.n {
					t.Fatalf("%d rows, want %d", d.N, tc.n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.csv") {
				t.Fatalf("error %v, want %q and the file", err, tc.want)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

// TestCSVRecordsHugeLine: a line of 64 MiB without a newline fails after reading little more
// than the line limit.
func TestCSVRecordsHugeLine(t *testing.T) {
	r := &countingReader{r: io.LimitReader(repeatReader('7'), 64<<20)}
	recs := csvrecords.New(r, "big.csv", CSVLimits{MaxLineBytes: 1 << 20})
	_, _, err := recs.Next()
	if err == nil || !strings.Contains(err.Error(), "line 1: longer than") {
		t.Fatalf("error %v", err)
	}
	if r.n > 4<<20 {
		t.Fatalf("read %d bytes before failing", r.n)
	}
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// FuzzReadIDX: any bytes give dims and data that agree, or an error; never a panic.
func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes([]uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(idxBytes([]uint32{1, 2, 2}, []byte{0, 255, 7, 8}))
	f.Add(idxBytes([]uint32{0xffffffff}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		dims, data, err := ReadIDXLimits(bytes.NewReader(b), IDXLimits{MaxElements: 1 << 16})
		if err != nil {
			return
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		if n != len(data) || len(data) > len(b) {
			t.Fatalf("dims %v, %d bytes of data from %d", dims, len(data), len(b))
		}
		// The first records of a file that reads in full are the full read's leading bytes.
		for _, r := range []int{1, dims[0] / 2} {
			hd, head, err := ReadIDXLimits(bytes.NewReader(b), IDXLimits{MaxElements: 1 << 16, Records: int64(r)})
			if r == 0 {
				continue
			}
			if err != nil || hd[0] != r || !slices.Equal(hd[1:], dims[1:]) || !bytes.Equal(head, data[:len(data)/dims[0]*r]) {
				t.Fatalf("first %d of dims %v: dims %v, %d bytes, %v", r, dims, hd, len(head), err)
			}
		}
	})
}

// FuzzReadCSV: any text gives a valid data set or an error naming the file; never a panic.
func FuzzReadCSV(f *testing.F) {
	f.Add("x,y,label\n1,2,cat\n3,4,dog\n", false, false)
	f.Add("0.5,1,2\n1.5,3,4\n", true, false)
	f.Add("1,abc,0\n", false, true)
	f.Add("\"a\nb\",1\n2,3\n", false, false)
	f.Fuzz(func(t *testing.T, in string, regression, header bool) {
		opt := CSVOptions{Regression: regression, Header: header, Limits: CSVLimits{MaxLineBytes: 256, MaxRows: 64, MaxColumns: 16}}
		d, err := ReadCSV(strings.NewReader(in), "f.csv", opt)
		if err != nil {
			if !strings.Contains(err.Error(), "f.csv") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.X {
			if v != v {
				t.Fatal("NaN accepted")
			}
		}
		if d.N > 64 {
			t.Fatalf("%d rows past MaxRows", d.N)
		}
	})
}
