package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictPreprocessOverflow: an input value that is finite in the file but overflows in the
// model's preprocessing is named by its input in the file (not within its batch) and its value,
// with the raw number.
func TestPredictPreprocessOverflow(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.ebnn")
	convertDemo(t, model, "--input-scale", "1e10")
	var csv strings.Builder
	for i := range 12 {
		for j := range 784 {
			v := "0.5"
			if i == 9 && j == 5 {
				v = "1e30"
			}
			sep := ","
			if j == 783 {
				sep = "\n"
			}
			fmt.Fprintf(&csv, "%s%s", v, sep)
		}
	}
	in := filepath.Join(dir, "in.csv")
	mustWrite(t, in, []byte(csv.String()))
	code, _, stderr := runCLI("predict", "--model", model, "--input", in, "--batch", "4")
	if code == 0 || !strings.Contains(stderr, "input 9 (counting from 0), value 5: 1e+30 becomes infinite in the model's preprocessing") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
