package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func idxBytes(dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(data)
	return b.Bytes()
}

func TestReadIDX(t *testing.T) {
	dims, data, err := ReadIDX(bytes.NewReader(idxBytes([]uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6})))
	if err != nil || !reflect.DeepEqual(dims, []int{2, 3}) || !bytes.Equal(data, []byte{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("got %v %v %v", dims, data, err)
	}
	bad := map[string][]byte{
		"magic":     {1, 0, 8, 1, 0, 0, 0, 1, 0},
		"type":      {0, 0, 0x0d, 1, 0, 0, 0, 1, 0},
		"dims":      {0, 0, 8, 9},
		"truncated": idxBytes([]uint32{2, 3}, []byte{1, 2}),
		"huge":      idxBytes([]uint32{1 << 20, 1 << 20}, nil),
	}
	for name, b := range bad {
		if _, _, err := ReadIDX(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func writeGz(t *testing.T, path string, b []byte) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFashionMNISTFiles(t *testing.T) {
	dir := t.TempDir()
	img := make([]byte, 3*2*2)
	for i := range img {
		img[i] = byte(i * 20)
	}
	writeGz(t, filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), idxBytes([]uint32{3, 2, 2}, img))
	writeGz(t, filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), idxBytes([]uint32{3}, []byte{9, 0, 4}))
	d, err := FashionMNIST(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 3 || d.Dim != 4 || !reflect.DeepEqual(d.Shape, []int{1, 2, 2}) || !reflect.DeepEqual(d.Labels, []int{9, 0, 4}) {
		t.Fatalf("got %+v", d)
	}
	if d.X[5] != float32(100)/255 {
		t.Errorf("pixel 5 = %v, want 100/255", d.X[5])
	}
	if _, err := FashionMNIST(dir, "train"); err == nil {
		t.Error("missing train files accepted")
	}
	// The real data set, when installed.
	if _, err := os.Stat(DefaultFashionMNISTDir); err == nil && !testing.Short() {
		d, err := FashionMNIST(DefaultFashionMNISTDir, "test")
		if err != nil {
			t.Fatal(err)
		}
		if d.N != 10000 || d.Dim != 784 || d.Validate() != nil {
			t.Errorf("real test set: %d examples of %d", d.N, d.Dim)
		}
	}
}

func TestReadCSV(t *testing.T) {
	d, err := ReadCSV(strings.NewReader("x,y,label\n1,2,cat\n3,4,dog\n5,6,cat\n"), "t", CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Classes != 2 || !reflect.DeepEqual(d.Labels, []int{0, 1, 0}) || !reflect.DeepEqual(d.X, []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("got %+v", d)
	}
	if !reflect.DeepEqual(d.ClassNames, []string{"cat", "dog"}) {
		t.Fatalf("class names %q, want cat, dog", d.ClassNames)
	}
	// Names are numbered in sorted order, whatever the first row: another file of the same
	// classes numbers them alike (in order of first appearance "dog" was 0 here).
	d2, err := ReadCSV(strings.NewReader("x,y,label\n1,2,dog\n3,4,cat\n"), "t2", CSVOptions{})
	if err != nil || !reflect.DeepEqual(d2.Labels, []int{1, 0}) {
		t.Fatalf("second file: %v %v", d2, err)
	}
	// A file with only some of the classes, mapped to a model's names; an unknown name fails.
	d3, err := ReadCSV(strings.NewReader("x,label\n1,emu\n2,dog\n"), "t3", CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d3.MatchClassNames([]string{"cat", "dog", "emu"}); err != nil || !reflect.DeepEqual(d3.Labels, []int{2, 1}) || d3.Classes != 3 {
		t.Fatalf("matched: %v %v (classes %d)", d3.Labels, err, d3.Classes)
	}
	if err := d2.MatchClassNames([]string{"cat", "emu"}); err == nil || !strings.Contains(err.Error(), `class "dog" is not one of the model's 2 classes`) {
		t.Fatalf("unknown class: %v", err)
	}
	// One label that is not a class number (-1) makes the column names, numbered "-1", "0",
	// "1": every label would move up by one. Against a model without names that is an error;
	// class numbers (no names) and a model's names are unaffected.
	neg, err := ReadCSV(strings.NewReader("x,label\n1,0\n2,2\n3,-1\n"), "neg", CSVOptions{})
	if err != nil || !neg.NamedLabels {
		t.Fatalf("neg: %v %v", neg, err)
	}
	if err := neg.MatchClassNames(nil); err == nil || !strings.Contains(err.Error(), `"-1, 0, 2"`) || !strings.Contains(err.Error(), "no class names") ||
		!strings.Contains(err.Error(), `label "-1" on line 4 is not a class number`) {
		t.Fatalf("named labels, model without names: %v", err)
	}
	// Against a model with names, the error says which label made the column names, not only
	// the first name the model lacks.
	if err := neg.MatchClassNames([]string{"cat", "dog", "emu"}); err == nil || !strings.Contains(err.Error(), `class "-1" is not one of the model's 3 classes`) ||
		!strings.Contains(err.Error(), `because label "-1" on line 4 is not a class number`) {
		t.Fatalf("named labels, model with names: %v", err)
	}
	if err := d3.MatchClassNames(nil); err == nil {
		t.Fatal("names against a model without names: no error")
	}
	if ints, err := ReadCSV(strings.NewReader("x,label\n1,0\n2,2\n"), "ints", CSVOptions{}); err != nil || ints.NamedLabels || ints.MatchClassNames(nil) != nil {
		t.Fatalf("class numbers: %v %v", ints, err)
	}
	// Integer labels written as floats (pandas) are integers, not names.
	f, err := ReadCSV(strings.NewReader("x,label\n1,1.0\n2,0.0\n"), "f", CSVOptions{})
	if err != nil || !reflect.DeepEqual(f.Labels, []int{1, 0}) || f.ClassNames != nil {
		t.Fatalf("float labels: %v %q %v", f.Labels, f.ClassNames, err)
	}
	r, err := ReadCSV(strings.NewReader("0.5,1,2\n1.5,3,4\n"), "r", CSVOptions{Target: "0", Regression: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Targets, []float32{0.5, 1.5}) || !reflect.DeepEqual(r.X, []float32{1, 2, 3, 4}) {
		t.Fatalf("got %+v", r)
	}
	for name, in := range map[string]string{
		"nan feature": "a,b\nNaN,1\n",
		"text":        "a,b\n1,2\nx,3\n",
		"ragged":      "1,2,3\n4,5\n",
		"one column":  "1\n2\n",
	} {
		if _, err := ReadCSV(strings.NewReader(in), name, CSVOptions{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestClasses(t *testing.T) {
	cs, err := ParseClasses("0-2,7")
	if err != nil || !reflect.DeepEqual(cs, []int{0, 1, 2, 7}) || FormatClasses(cs) != "0-2,7" {
		t.Fatalf("got %v %v", cs, err)
	}
	// Many ranges of classes above MaxClass: refused at the first, before any is expanded (200
	// such ranges once cost a gigabyte), with the list clipped in the message.
	var many []string
	for i := 1; i <= 200; i++ {
		many = append(many, fmt.Sprintf("%d-%d", i*65537, i*65537+65536))
	}
	for _, bad := range []string{"", "a", "3-1", "1,1", "-1", "65536", strings.Join(many, ",")} {
		if _, err := ParseClasses(bad); err == nil || len(err.Error()) > 500 {
			t.Errorf("%.40q: %v, want a short error", bad, err)
		}
	}
	if cs, err := ParseClasses("65535"); err != nil || cs[0] != MaxClass {
		t.Errorf("class MaxClass: %v %v", cs, err)
	}
	d := &Dataset{Name: "d", N: 4, Dim: 1, Shape: []int{1}, X: []float32{0, 1, 2, 3}, Labels: []int{3, 1, 2, 1}, Classes: 4}
	s, err := d.SelectClasses([]int{1, 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Labels, []int{1, 0, 0}) || !reflect.DeepEqual(s.X, []float32{0, 1, 3}) || s.Classes != 2 {
		t.Fatalf("got %+v", s)
	}
	if got := Complement([]int{1, 3}, 4); !reflect.DeepEqual(got, []int{0, 2}) {
		t.Errorf("complement %v", got)
	}
}

func TestToy1D(t *testing.T) {
	d := Toy1D(100, 3)
	if d.Validate() != nil || d.N != 100 {
		t.Fatal(d.Validate())
	}
	var res float64
	for i := 0; i < d.N; i++ {
		x := float64(d.X[i])
		if !((x >= -1 && x <= -0.7) || (x >= 0.5 && x <= 1)) {
			t.Errorf("input %v outside both clusters", x)
		}
		r := float64(d.Targets[i]) - math.Cos(4*x+0.8)
		res += r * r
	}
	if sd := math.Sqrt(res / 100); !(sd >= 0.07) || !(sd <= 0.13) {
		t.Errorf("noise sd %v, want about 0.1", sd)
	}
	if e := Toy1D(100, 3); !reflect.DeepEqual(e.X, d.X) {
		t.Error("same seed, different data")
	}
}

func TestTwoMoons(t *testing.T) {
	d := TwoMoons(400, 0, 1)
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	n := [2]int{}
	for i := 0; i < d.N; i++ {
		x, y := float64(d.X[2*i]), float64(d.X[2*i+1])
		c := d.Labels[i]
		n[c]++
		cx, cy := 0.0, 0.0 // noiseless points lie on the unit circle about (0, 0) or (1, ½)
		if c == 1 {
			cx, cy = 1, 0.5
		}
		if r := math.Hypot(x-cx, y-cy); !(math.Abs(r-1) <= 1e-5) || (c == 0 && !(y >= -1e-6)) || (c == 1 && !(y <= 0.5+1e-6)) {
			t.Fatalf("point %d (%g, %g) class %d off its moon", i, x, y, c)
		}
	}
	if n[0] != 200 || n[1] != 200 {
		t.Errorf("class counts %v", n)
	}
}
