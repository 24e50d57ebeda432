package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/format"
)

// TestPrint: λ = softplus(_lamda) = log(1 + e^x) per layer, optimizer state skipped.
func TestPrint(t *testing.T) {
	w := format.NewWriter()
	for _, tc := range []struct {
		name string
		v    float32
	}{{"1._lamda", 0}, {"optim/exp_avg/1._lamda", 5}, {"3._lamda", -2}, {"3.z_row", 7}} {
		if _, err := w.AddTensor(tc.name, []int{}, []float32{tc.v}, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "m.ebnn")
	if err := w.WriteFile(p, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeLine(&out, p); err != nil {
		t.Fatal(err)
	}
	// log 2 = 0.6931, log(1 + e^−2) = 0.1269.
	if want := p + "\t1=0.6931\t3=0.1269\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
