package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestCSVValueAndClassBounds: values beyond ±MaxAbsValue (finite float32 values whose squares
// overflow in training) and labels making more than MaxClasses classes are errors naming the
// file, the line and the column; ordinary data — 8-bit pixels, UCI Boston's values, large
// counts, values at the bound, MaxClasses names — is read.
func TestCSVValueAndClassBounds(t *testing.T) {
	names := func(k int) string {
		var b strings.Builder
		b.WriteString("x,label\n")
		for i := 0; i < k; i++ {
			fmt.Fprintf(&b, "%d,c%d\n", i, i)
		}
		return b.String()
	}
	cases := []struct {
		name, in   string
		regression bool
		want       []string // nil: accepted
		classes    int
	}{
		{"pixels", "0,255,128,3\n17,0,255,1\n", false, nil, 4},
		{"boston", "0.00632,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,396.9,4.98,24\n", true, nil, 0},
		{"large counts", "1e9,3.3e12,1\n-2.5e14,7,2\n", true, nil, 0},
		{"at the bound", "1e15,-1e15\n", true, nil, 0},
		{"target 1e20", "x,y\n1,1e20\n2,1\n", true, []string{"line 2 column 2 (the target)", `"1e20"`, "±1e+15"}, 0},
		{"feature -3e38", "x,y\n1,0\n-3e38,1\n", true, []string{"line 3 column 1", `"-3e38"`}, 0},
		{"feature of a classifier", "x,y,l\n1,2,0\n3,1.5e16,1\n", false, []string{"line 3 column 2"}, 0},
		{"MaxClasses names", names(MaxClasses), false, nil, MaxClasses},
		{"one name too many", names(MaxClasses + 1), false, []string{fmt.Sprintf("line %d column 2", MaxClasses+2), `"c65536"`, "MaxClasses = 65536"}, 0},
		{"class number MaxClass", "1,65535\n2,0\n", false, nil, MaxClasses},
		{"class number above MaxClass", "1,0\n2,65536\n", false, []string{"line 2 column 2", `"65536"`, "MaxClasses = 65536"}, 0},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
			if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := ReadCSVFile(path, CSVOptions{Regression: tc.regression})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if d.Classes != tc.classes {
					t.Fatalf("%d classes, want %d", d.Classes, tc.classes)
				}
				return
			}
			testutil.ErrorContains(t, err, append(tc.want, path)...)
		})
	}
}

// TestDigitsHead: only the first n rows are read and upsampled — a bad row after them is never
// seen, and a file of 20 000 rows costs about what its first rows do, not 20 000 upsampled
// images (a 171 kB gzip of identical rows took 3.9 GB) — and a gzipped file that decompresses
// to more than 64 times its size (a decompression bomb) or holds more than 65 536 rows is an
// error naming it.
func TestDigitsHead(t *testing.T) {
	// Rows of random pixels compress about as the real file (4.6 times); identical rows, 250
	// times, past the bound on the gzip ratio.
	rng := rand.New(rand.NewPCG(1, 2))
	rows := func(k int) string {
		var b strings.Builder
		for range k {
			for range 64 {
				b.WriteString(strconv.Itoa(rng.IntN(17)) + ",")
			}
			b.WriteString("5\n")
		}
		return b.String()
	}
	row := rows(1)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	many := write("many.csv.gz", gzipped(t, rows(20000)))
	for _, tc := range []struct {
		name, path string
		n          int
		wantN      int
		want       string
	}{
		{"head of a long file", many, 10, 10, ""},
		{"bad row after the head", write("bad.csv", []byte(row+row+"x,y\n")), 2, 2, ""},
		{"bad row read without a limit", filepath.Join(dir, "bad.csv"), 0, 0, "line 3"},
		{"blank-line bomb", write("blank.csv.gz", gzipped(t, row+strings.Repeat("\n", 8<<20))), 0, 0, "too large"},
		{"identical rows", write("same.csv.gz", gzipped(t, strings.Repeat(row, 20000))), 0, 0, "too large"},
		{"too many rows", write("rows.csv.gz", gzipped(t, rows(digitsMaxRows+1))), 0, 0, "line 65537: more than 65536 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d, err := DigitsHead(tc.path, 28, tc.n)
			runtime.ReadMemStats(&after)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, tc.path, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.N != tc.wantN || len(d.X) != tc.wantN*28*28 || d.Labels[0] != 5 {
				t.Fatalf("N %d, %d values, labels %v; want %d rows", d.N, len(d.X), d.Labels, tc.wantN)
			}
			// 20 000 images of 28×28 float32 are 63 MB.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Fatalf("reading %d rows allocated %d MB", tc.n, alloc>>20)
			}
		})
	}
	all, err := Digits(many, 28)
	if err != nil || all.N != 20000 {
		t.Fatalf("every row: %v", err)
	}
}
