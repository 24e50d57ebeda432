package plot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
)

func isPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", path)
	}
}

func TestPlots(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		draw func(string) error
	}{
		{"lines.png", func(p string) error {
			return Lines(p, "t", "x", "y", []Series{{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 1, 2}}}, 4, 3)
		}},
		{"rel.png", func(p string) error {
			return Reliability(p, "r", []Bin{{Lo: 0.8, Hi: 0.9, Count: 3, Confidence: 0.85, Accuracy: 0.7}, {Lo: 0, Hi: 0.1}})
		}},
		{"fit.png", func(p string) error {
			return Regression1D(p, "f", Band1D{X: []float64{-1, 0, 1}, Mean: []float64{0, 1, 0}, SD: []float64{0.1, 0.5, 0.1},
				TrainX: []float64{-1}, TrainY: []float64{0.1}, TrueX: []float64{-1, 1}, TrueY: []float64{0, 0}})
		}},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		if err := tc.draw(p); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		isPNG(t, p)
	}
	if err := Lines(filepath.Join(dir, "bad.png"), "", "", "", []Series{{X: []float64{1}, Y: nil}}, 4, 3); err == nil {
		t.Error("mismatched series accepted")
	}
	if err := Regression1D(filepath.Join(dir, "bad2.png"), "", Band1D{X: []float64{1, 0}, Mean: []float64{0, 0}, SD: []float64{1, 1}}); err == nil {
		t.Error("decreasing inputs accepted")
	}
}

// TestSDBand: the band mean ± k·sd runs along mean + k·sd from the first x to the last and back
// along mean − k·sd (values worked out by hand), in the colour given; a NaN is an error.
func TestSDBand(t *testing.T) {
	pg, err := SDBand([]float64{0, 1, 2}, []float64{1, 2, 3}, []float64{0.5, 1, 0}, 2, Red)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]float64{{0, 2}, {1, 4}, {2, 3}, {2, 3}, {1, 0}, {0, 0}}
	if len(pg.XYs) != 1 || pg.XYs[0].Len() != len(want) {
		t.Fatalf("polygon %v, want one ring of %d points", pg.XYs, len(want))
	}
	for i, w := range want {
		if x, y := pg.XYs[0].XY(i); x != w[0] || y != w[1] {
			t.Errorf("point %d = (%g, %g), want (%g, %g)", i, x, y, w[0], w[1])
		}
	}
	if pg.Color != Red || pg.LineStyle.Color != Red {
		t.Errorf("colours %v / %v, want %v", pg.Color, pg.LineStyle.Color, Red)
	}
	if _, err := SDBand([]float64{0, 1}, []float64{0, math.NaN()}, []float64{1, 1}, 1, Red); err == nil {
		t.Error("a NaN mean gave no error")
	}
}

// TestCheckFormat: CheckFormat accepts exactly what Save can write (gonum's WriterTo).
func TestCheckFormat(t *testing.T) {
	p := gplot.New()
	for _, name := range []string{"a.png", "a.PNG", "a.svg", "a.pdf", "a.eps", "a.jpg", "a.jpeg", "a.tif", "a.tiff", "a.tex", "a.xyz", "a", "dir.png/a.gif"} {
		_, werr := p.WriterTo(1, 1, strings.ToLower(strings.TrimPrefix(filepath.Ext(name), ".")))
		if err := CheckFormat(name); (err == nil) != (werr == nil) {
			t.Errorf("CheckFormat(%q) = %v; gonum's WriterTo: %v", name, err, werr)
		}
	}
}

// TestExtremeValuesReturn: values whose range overflows float64 (±1.7e308, finite each, as a
// doctored checkpoint's history held) are left out instead of sending gonum/plot's tick search
// into an endless loop; every plot returns promptly and writes a PNG.
func TestExtremeValuesReturn(t *testing.T) {
	dir := t.TempDir()
	const big = 1.7e308
	for _, tc := range []struct {
		name string
		draw func(string) error
	}{
		{"lines.png", func(p string) error {
			return Lines(p, "t", "epoch", "objective", []Series{{Name: "loss", X: []float64{1, 2}, Y: []float64{big, 1}},
				{Name: "NLL", X: []float64{1, 2}, Y: []float64{-big, 0.5}}}, 4, 3)
		}},
		{"lines_x.png", func(p string) error {
			return Lines(p, "t", "x", "y", []Series{{X: []float64{-big, big, 1, 2}, Y: []float64{1, 2, 3, 4}}}, 4, 3)
		}},
		{"marks.png", func(p string) error {
			return LinesWithMarks(p, "t", "x", "y", []Series{{X: []float64{0, 1}, Y: []float64{0, 1}}},
				[]Mark{{Name: "a", X: big, Y: 0}, {Name: "b", X: 0, Y: -big}}, 4, 3)
		}},
		{"rel.png", func(p string) error {
			return Reliability(p, "r", []Bin{{Lo: -big, Hi: big, Count: 3, Confidence: -big, Accuracy: big}, {Lo: 0.8, Hi: 0.9, Count: 1, Confidence: 0.85, Accuracy: 0.7}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			done := make(chan error, 1)
			go func() { done <- tc.draw(p) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("still drawing after 30 s")
			}
			isPNG(t, p)
		})
	}
}
