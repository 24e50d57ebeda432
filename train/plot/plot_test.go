package plot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
