package train

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEvalDataKeepsFileOrder: a CSV evaluated whole (eval --data csv:FILE) is the file's rows in
// the file's order, so test_limit takes its first rows and input numbers are its rows.
func TestEvalDataKeepsFileOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	var csv []byte
	for i := range 40 {
		csv = append(csv, []byte(string(rune('0'+i%10))+","+string(rune('0'+i/10))+","+string(rune('0'+i%2))+"\n")...)
	}
	if err := os.WriteFile(path, csv, 0o644); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Data, c.Task, c.EvalAllRows = "csv:"+path, "classification", true
	for _, limit := range []int{0, 5} {
		c.TestLimit = limit
		test, _, err := LoadEvalData(c)
		if err != nil {
			t.Fatal(err)
		}
		want := 40
		if limit > 0 {
			want = limit
		}
		if test.N != want {
			t.Fatalf("test_limit %d: %d rows, want %d", limit, test.N, want)
		}
		for i := range test.N {
			if x0, x1 := test.X[2*i], test.X[2*i+1]; x0 != float32(i%10) || x1 != float32(i/10) || test.Labels[i] != i%2 {
				t.Fatalf("test_limit %d: row %d is (%g, %g; %d), want file row %d", limit, i, x0, x1, test.Labels[i], i)
			}
		}
	}
}
