package data

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadIDXRecords: IDXLimits.Records returns the first records exactly as a full read's
// leading bytes, checks the header as before, and stops reading (what lies past the records,
// including bytes beyond the declared data, is not looked at).
func TestReadIDXRecords(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	full := idxBytes([]uint32{4, 3}, data)
	for _, tc := range []struct {
		name     string
		in       []byte
		records  int64
		wantDims []int
		want     []byte
		err      string
	}{
		{"none asked: all", full, 0, []int{4, 3}, data, ""},
		{"first", full, 1, []int{1, 3}, data[:3], ""},
		{"first three", full, 3, []int{3, 3}, data[:9], ""},
		{"exactly all", full, 4, []int{4, 3}, data, ""},
		{"more than there are", full, 9, []int{4, 3}, data, ""},
		{"trailing bytes past the head unread", append(bytes.Clone(full), 99), 2, []int{2, 3}, data[:6], ""},
		{"trailing bytes of a full read", append(bytes.Clone(full), 99), 4, nil, nil, "more than the 12 bytes"},
		{"truncated inside the head", idxBytes([]uint32{4, 3}, data[:5]), 2, nil, nil, "5 bytes, the header declares 6"},
		{"header still checked", idxBytes([]uint32{1 << 16, 1 << 16}, nil), 1, nil, nil, "exceed the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dims, got, err := ReadIDXLimits(bytes.NewReader(tc.in), IDXLimits{Records: tc.records})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(dims, tc.wantDims) || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %v %v %v, want %v %v", dims, got, err, tc.wantDims, tc.want)
			}
		})
	}
}

// TestFashionMNISTHead: the head of a split, gzipped or not, equals the full read's first
// examples; FashionMNISTLabels equals the full read's labels.
func TestFashionMNISTHead(t *testing.T) {
	const n, side = 7, 3
	img := make([]byte, n*side*side)
	for i := range img {
		img[i] = byte(i * 37)
	}
	lab := []byte{3, 1, 4, 1, 5, 9, 2}
	for _, gz := range []bool{false, true} {
		dir := t.TempDir()
		write := func(name string, b []byte) {
			if gz {
				writeGz(t, filepath.Join(dir, name+".gz"), b)
			} else {
				writeIDX(t, filepath.Join(dir, name), b)
			}
		}
		write("train-images-idx3-ubyte", idxBytes([]uint32{n, side, side}, img))
		write("train-labels-idx1-ubyte", idxBytes([]uint32{n}, lab))
		full, err := FashionMNIST(dir, "train")
		if err != nil {
			t.Fatal(err)
		}
		labels, err := FashionMNISTLabels(dir, "train")
		if err != nil || !reflect.DeepEqual(labels, full.Labels) {
			t.Fatalf("gz %v: labels %v, %v; want %v", gz, labels, err, full.Labels)
		}
		for _, k := range []int{0, 1, 4, n, n + 3} {
			d, err := FashionMNISTHead(dir, "train", k)
			if err != nil {
				t.Fatalf("gz %v, head %d: %v", gz, k, err)
			}
			want := full.Head(k) // all of it for k = 0 or k ≥ n
			if d.N != want.N || !reflect.DeepEqual(d.X, want.X) || !reflect.DeepEqual(d.Labels, want.Labels) || !reflect.DeepEqual(d.ClassNames, full.ClassNames) {
				t.Errorf("gz %v, head %d: %d examples, labels %v; want %d, %v", gz, k, d.N, d.Labels, want.N, want.Labels)
			}
		}
	}
	// A label outside the ten classes is refused by FashionMNISTLabels too, naming the file.
	dir := t.TempDir()
	writeIDX(t, filepath.Join(dir, "t10k-labels-idx1-ubyte"), idxBytes([]uint32{2}, []byte{1, 10}))
	writeIDX(t, filepath.Join(dir, "t10k-images-idx3-ubyte"), idxBytes([]uint32{2, 1, 1}, []byte{0, 0}))
	if _, err := FashionMNISTLabels(dir, "test"); err == nil || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte: label 10 of example 1") {
		t.Errorf("bad label: %v", err)
	}
}

func writeIDX(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
