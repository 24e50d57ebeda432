package train

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// writeFakeFashionMNIST writes a Fashion-MNIST directory of 2×2 images: n examples per split,
// labels drawn at random (so that the trained and held-out classes interleave).
func writeFakeFashionMNIST(t *testing.T, dir string, n map[string]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	for prefix, k := range n {
		for _, f := range []struct {
			suffix string
			dims   []uint32
			size   int
		}{{"-images-idx3-ubyte", []uint32{uint32(k), 2, 2}, 4 * k}, {"-labels-idx1-ubyte", []uint32{uint32(k)}, k}} {
			var b bytes.Buffer
			b.Write([]byte{0, 0, 8, byte(len(f.dims))})
			for _, d := range f.dims {
				binary.Write(&b, binary.BigEndian, d)
			}
			for range f.size {
				if len(f.dims) == 1 {
					b.WriteByte(byte(rng.IntN(10)))
				} else {
					b.WriteByte(byte(rng.IntN(256)))
				}
			}
			if err := os.WriteFile(filepath.Join(dir, prefix+f.suffix), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFashionMNISTReadsOnlyTheHead: the data a run trains and tests on, read only as far as its
// limits need (Trainer.fashionMNIST), equals the whole splits read, selected and cut as the
// configuration says — for every combination of limits, trained classes and OOD set, and for
// LoadEvalData's test and OOD sets.
func TestFashionMNISTReadsOnlyTheHead(t *testing.T) {
	dir := t.TempDir()
	writeFakeFashionMNIST(t, dir, map[string]int{"train": 300, "t10k": 120})
	fullTrain, err := data.FashionMNIST(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	fullTest, err := data.FashionMNIST(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		trainLim, testLim int
		classes, ood      string
	}{
		{"everything", 0, 0, "", ""},
		{"heads", 50, 20, "", ""},
		{"heads past the end", 1000, 500, "", ""},
		{"classes, whole", 0, 0, "0-4", ""},
		{"classes and held-out heads", 40, 10, "0-4", ""},
		{"one rare class", 20, 5, "7", "classes"},
		{"classes with more asked than there are", 200, 100, "0-4", ""},
		{"shuffled-pixel OOD", 30, 15, "", "fmnist-shuffled"},
		{"classes, shuffled-pixel OOD", 30, 15, "2,6", "fmnist-shuffled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Data, c.DataDir, c.TrainLimit, c.TestLimit, c.Classes, c.OOD = "fmnist", dir, tc.trainLim, tc.testLim, tc.classes, tc.ood
			tr := &Trainer{Config: c}
			if err := tr.loadData(); err != nil {
				t.Fatal(err)
			}
			wantTrain, wantTest, wantOOD := fullTrain, fullTest, (*data.Dataset)(nil)
			if tc.classes != "" {
				cs, err := data.ParseClasses(tc.classes)
				if err != nil {
					t.Fatal(err)
				}
				if wantTrain, err = fullTrain.SelectClasses(cs, true); err != nil {
					t.Fatal(err)
				}
				if wantTest, err = fullTest.SelectClasses(cs, true); err != nil {
					t.Fatal(err)
				}
				if wantOOD, err = fullTest.SelectClasses(data.Complement(cs, 10), false); err != nil {
					t.Fatal(err)
				}
			}
			if tc.ood == "fmnist-shuffled" {
				wantOOD = data.ShufflePixels(fullTest, data.ShuffledPixelsSeed)
			}
			wantTrain, wantTest = wantTrain.Head(tc.trainLim), wantTest.Head(tc.testLim)
			if wantOOD != nil {
				wantOOD = wantOOD.Head(tc.testLim)
			}
			same(t, "train", tr.Train, wantTrain)
			same(t, "test", tr.Test, wantTest)
			same(t, "ood", tr.OOD, wantOOD)
			test, ood, err := LoadEvalData(c)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "eval test", test, wantTest)
			same(t, "eval ood", ood, wantOOD)
		})
	}
}

// TestFashionMNISTHeadStopsReading: with limits, a gzipped training image file cut off after
// the examples the run uses still loads (the rest is never decompressed), and without limits
// it is an error.
func TestFashionMNISTHeadStopsReading(t *testing.T) {
	dir := t.TempDir()
	writeFakeFashionMNIST(t, dir, map[string]int{"train": 300, "t10k": 50})
	path := filepath.Join(dir, "train-images-idx3-ubyte")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(b)
	zw.Close()
	// Random pixels do not compress: half the stream holds about 150 of the 300 images.
	if err := os.WriteFile(path+".gz", gz.Bytes()[:gz.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Data, c.DataDir, c.TrainLimit, c.TestLimit = "fmnist", dir, 50, 10
	tr := &Trainer{Config: c}
	if err := tr.loadData(); err != nil || tr.Train.N != 50 {
		t.Fatalf("train_limit 50 of a file cut after about 150: %v", err)
	}
	c.TrainLimit = 0
	tr = &Trainer{Config: c}
	if err := tr.loadData(); err == nil {
		t.Fatal("a truncated file read in full was accepted")
	}
}

func same(t *testing.T, what string, got, want *data.Dataset) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
		return
	}
	if got.N != want.N || got.Classes != want.Classes || !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.X, want.X) {
		t.Errorf("%s: %d examples of %d classes, labels %v…; want %d of %d, %v…", what, got.N, got.Classes, got.Labels[:min(8, got.N)], want.N, want.Classes, want.Labels[:min(8, want.N)])
	}
}
