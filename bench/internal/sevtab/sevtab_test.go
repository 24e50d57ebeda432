package sevtab

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"

	"gonum.org/v1/plot/vg"
)

// tiny is a 3-image one-channel 4×4 data set of constant grey 0.5.
func tiny() *data.Dataset {
	x := make([]float32, 3*16)
	for i := range x {
		x[i] = 0.5
	}
	return &data.Dataset{Name: "tiny", N: 3, Dim: 16, Shape: []int{1, 4, 4}, X: x, Labels: []int{0, 1, 2}, Classes: 3}
}

// TestSweep: every corruption at severities 1–5 exactly once, in table order, after prep, and
// each set equal to data.Corrupt's (so the first n images after corrupting are the corruption
// of the first n).
func TestSweep(t *testing.T) {
	base := tiny()
	var got []string
	prep := func(d *data.Dataset) (*data.Dataset, error) { return d.Head(2), nil }
	err := Sweep(base, 7, prep, func(c string, s int, d *data.Dataset) error {
		got = append(got, Key(c, s))
		if d.N != 2 {
			t.Errorf("%s: %d images after prep, want 2", Key(c, s), d.N)
		}
		ref, err := data.Corrupt(base.Head(2), c, s, 7)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ref.X {
			if ref.X[i] != d.X[i] {
				t.Fatalf("%s: pixel %d is %g, data.Corrupt of the first 2 images gives %g", Key(c, s), i, d.X[i], ref.X[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cs := data.Corruptions()
	if len(got) != len(cs)*5 {
		t.Fatalf("%d sets, want %d", len(got), len(cs)*5)
	}
	if got[0] != cs[0]+":1" || got[4] != cs[0]+":5" || got[5] != cs[1]+":1" {
		t.Errorf("order %v", got[:6])
	}
	if Key("rotation", 2) != "rotation:2" {
		t.Error(Key("rotation", 2))
	}
}

func TestSeverityMean(t *testing.T) {
	cs := data.Corruptions()
	v := map[string]float64{}
	want := 0.0
	for i, c := range cs {
		v[Key(c, 2)] = float64(i * i)
		v[Key(c, 3)] = -1
		want += float64(i * i)
	}
	want /= float64(len(cs))
	id := func(x float64) float64 { return x }
	if got := SeverityMean(7.5, v, 2, id); !(math.Abs(got-want) <= 1e-12) {
		t.Errorf("SeverityMean at 2 = %g, want %g", got, want)
	}
	if got := SeverityMean(7.5, v, 0, id); got != 7.5 {
		t.Errorf("SeverityMean at 0 = %g, want the clean 7.5", got)
	}
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	ln := Line{Name: "a", Color: color.Black, Y: []float64{90, 80, 70, 60, 50, 40}, Err: []float64{1, math.NaN(), 1, 1, 1, 1}}
	p := Panel{Title: "t", XLabel: "severity", YLabel: "y", Lines: []Line{ln, {Name: "b", Color: color.Black, Dashed: true, Y: ln.Y}}}
	path := filepath.Join(dir, "p.png")
	if err := Plot(path, []Panel{p, p}, 2, 6*vg.Inch, 3*vg.Inch); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("not a PNG: %v", err)
	}
	if err := Plot(path, []Panel{p, p, p}, 2, 6*vg.Inch, 3*vg.Inch); err == nil {
		t.Error("3 panels in rows of 2: no error")
	}
}
