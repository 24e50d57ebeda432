package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/csvrecords"
)

// writeST writes a safetensors file with one tensor.
func writeST(t *testing.T, path string, tn safetensors.Tensor, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(path, []safetensors.Tensor{tn}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestPredictBadInputs: every broken input is an error (exit 1, never a panic) naming the
// file and, for safetensors, the tensor, or for CSV the line.
func TestPredictBadInputs(t *testing.T) {
	dir := t.TempDir()
	row := strings.TrimSuffix(strings.Repeat("0.5,", 784), ",")
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		mustWrite(t, p, []byte(content))
		return p
	}
	st := func(name string, shape []int) string {
		p := filepath.Join(dir, name)
		n := 1
		for _, d := range shape {
			n *= d
		}
		tn, err := safetensors.NewF32("inputs", shape, make([]float32, n))
		writeST(t, p, tn, err)
		return p
	}
	nan := filepath.Join(dir, "nan.safetensors")
	vals := make([]float32, 2*784)
	vals[784+3] = float32(nanValue())
	tn, err := safetensors.NewF32("x", []int{2, 784}, vals)
	writeST(t, nan, tn, err)
	big := filepath.Join(dir, "big64.safetensors")
	v64 := make([]float64, 784)
	v64[5] = 1e300
	tn, err = safetensors.NewF64("x", []int{1, 784}, v64)
	writeST(t, big, tn, err)
	// raw writes a safetensors file with header JSON hdr and data.
	raw := func(name, hdr string, data []byte) string {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
		return file(name, string(append(append(b, hdr...), data...)))
	}
	rank := raw("rank.safetensors", `{"inputs":{"dtype":"F32","shape":[1,784`+strings.Repeat(",1", 64)+`],"data_offsets":[0,3136]}}`, make([]byte, 3136))
	var many strings.Builder
	many.WriteString("{")
	for i := range 20 {
		fmt.Fprintf(&many, `"t%02d":{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]},`, i, 4*i, 4*i+4)
	}
	manyNames := raw("many.safetensors", strings.TrimSuffix(many.String(), ",")+"}", make([]byte, 80))
	longKey := strings.Repeat("k", 100_000)
	long := raw("long.safetensors", `{"`+longKey+`":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"`+longKey+`":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8))
	zero := filepath.Join(dir, "zero.csv")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, input string
		extra       []string
		want        []string
	}{
		{"zero rows", st("rows0.safetensors", []int{0, 784}), nil, []string{"rows0.safetensors", `"inputs"`, "no inputs"}},
		{"zero columns", st("cols0.safetensors", []int{3, 0}), nil, []string{"cols0.safetensors", `"inputs"`, "[3 0]"}},
		{"zero everything", st("all0.safetensors", []int{0, 0}), nil, []string{"all0.safetensors", `"inputs"`}},
		{"scalar", st("scalar.safetensors", []int{}), nil, []string{"scalar.safetensors", `"inputs"`, "scalar"}},
		{"one dimension", st("flat.safetensors", []int{784}), nil, []string{"flat.safetensors", `"inputs"`, "[784]"}},
		{"wrong width", st("w.safetensors", []int{2, 783}), nil, []string{"w.safetensors", `"inputs"`, "784"}},
		{"image shape mismatch", st("img.safetensors", []int{2, 1, 28, 27}), nil, []string{"img.safetensors", "[2 1 28 27]"}},
		{"NaN value", nan, nil, []string{"nan.safetensors", `"x"`, "input 1, value 3"}},
		{"f64 overflow", big, nil, []string{"big64.safetensors", `"x"`, "input 0, value 5"}},
		{"not safetensors", file("junk.safetensors", "hello"), nil, []string{"junk.safetensors"}},
		// The limits of safetensors.Parse (predict's reader once skipped them: 20 M dimensions took 1.2 GB).
		{"rank above 64", rank, nil, []string{"rank.safetensors", "shape has more than 64 values"}},
		{"missing key among many", manyNames, []string{"--input-key", "nope"}, []string{"many.safetensors", `no tensor "nope"`, "t07 and 12 more"}},
		{"duplicate long key", long, nil, []string{"long.safetensors", "duplicate key", "(100000 bytes)"}},
		{"header flag on safetensors", st("h.safetensors", []int{1, 784}), []string{"--header"}, []string{"h.safetensors", "--header"}},
		{"malformed first row", file("first.csv", strings.Replace(row, "0.5", "0.5x", 1)+"\n"+row+"\n"), nil, []string{"first.csv", "line 1, column 1", `"0.5x"`, "--header"}},
		{"NaN first row", file("nanfirst.csv", strings.Replace(row, "0.5", "NaN", 1)+"\n"+row+"\n"), nil, []string{"nanfirst.csv", "line 1, column 1", "finite"}},
		{"Inf later row", file("inf.csv", row+"\n"+row+"\n"+strings.Replace(row, "0.5", "-Inf", 2)+"\n"), nil, []string{"inf.csv", "line 3, column 1"}},
		{"float32 overflow", file("ovf.csv", strings.Replace(row, "0.5", "1e39", 1)+"\n"), nil, []string{"ovf.csv", "line 1, column 1"}},
		{"numeric header with --header is skipped, then bad row", file("hdr.csv", row+"\n1,2\n"), []string{"--header"}, []string{"hdr.csv", "line 2 has 2 values"}},
		{"header only", file("onlyhdr.csv", "a,b,c\n"), nil, []string{"onlyhdr.csv", "no inputs (line 1 was taken as a header)"}},
		{"empty fields are not a header", file("emptyhdr.csv", strings.Repeat(",", 783)+"\n"+row+"\n"), nil, []string{"emptyhdr.csv", "line 1, column 1", "not a number"}},
		{"one tab-separated row", file("tab.csv", strings.ReplaceAll(row, ",", "\t")+"\n"), nil, []string{"tab.csv", "line 1 has 1 values"}},
		{"an image is not CSV", file("img.PNG", "\x89PNG\r\n"), nil, []string{"img.PNG", "not .png files"}},
		{"upper-case safetensors", st("UP.SAFETENSORS", []int{0, 784}), nil, []string{"UP.SAFETENSORS", "no inputs"}},
		{"Go number syntax", file("hex.csv", strings.Replace(row, "0.5", "0x1p4", 1)+"\n"), nil, []string{"hex.csv", "line 1, column 1", `"0x1p4" is not a number`}},
		{"empty file", file("empty.csv", ""), nil, []string{"empty.csv", "no inputs"}},
		{"blank lines only", file("blank.csv", "\n\n\n"), nil, []string{"blank.csv", "no inputs"}},
		{"ragged quote", file("quote.csv", "\"0.5,"+row+"\n"), nil, []string{"quote.csv"}},
		{"directory", dir, nil, []string{dir, "not a regular file"}},
		{"symlink to /dev/zero", zero, nil, []string{"zero.csv", "not a regular file"}},
		{"missing", filepath.Join(dir, "none.csv"), nil, []string{"none.csv"}},
		// Finite inputs so large that the network overflows: an error naming the input, never
		// class 0 with confidence −1 (issue 14, item 2), whatever the batch the input falls in.
		// (--normalized: the built-in model would first scale raw pixels by 1/255.)
		{"overflowing inputs", file("huge.csv", row+"\n"+row+"\n"+strings.ReplaceAll(row, "0.5", "3e38")+"\n"), []string{"--normalized"},
			[]string{"huge.csv", "input 2", "not finite"}},
		{"overflowing inputs, batch 1", file("huge1.csv", row+"\n"+row+"\n"+strings.ReplaceAll(row, "0.5", "-3e38")+"\n"+row+"\n"),
			[]string{"--batch", "1", "--normalized"}, []string{"huge1.csv", "input 2", "not finite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"predict", "--model", filepath.Join("demo", "model.ebnn"), "--input", c.input, "--samples", "2"}, c.extra...)
			code := run(args, &out, &errb)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s%s", code, out.String(), errb.String())
			}
			for _, w := range c.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("error lacks %q: %.2000s", w, errb.String())
				}
			}
			if errb.Len() > 4096 {
				t.Errorf("an error of %d bytes (names clipped?)", errb.Len())
			}
		})
	}
}

func nanValue() float64 { return math.NaN() }

// TestPredictHeader: a first row with no number is a header; --header makes any first row one.
func TestPredictHeader(t *testing.T) {
	dir := t.TempDir()
	row := strings.TrimSuffix(strings.Repeat("0.25,", 784), ",")
	names := strings.TrimSuffix(strings.Repeat("px,", 784), ",")
	for _, c := range []struct {
		name, content string
		flag          bool
		inputs        int
	}{
		{"no header", row + "\n" + row + "\n", false, 2},
		{"named header", names + "\n" + row + "\n", false, 1},
		{"--header", row + "\n" + row + "\n" + row + "\n", true, 2},
		{"blank lines", "\n" + names + "\n\n" + row + "\n\n", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".csv")
			mustWrite(t, p, []byte(c.content))
			args := []string{"predict", "--model", filepath.Join("demo", "model.ebnn"), "--input", p, "--samples", "2", "--json"}
			if c.flag {
				args = append(args, "--header")
			}
			if got := strings.Count(runOK(t, args...), "\n"); got != c.inputs {
				t.Fatalf("%d predictions, want %d", got, c.inputs)
			}
		})
	}
}

// TestPredictFlagLimits: absurd --batch, --threads and --samples are usage errors naming the
// flag, before anything is allocated.
func TestPredictFlagLimits(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	mustWrite(t, in, []byte(strings.TrimSuffix(strings.Repeat("0.5,", 784), ",")+"\n"))
	for _, c := range []struct {
		flag, value string
		code        int
	}{
		{"--batch", "1000000000", 2},
		{"--batch", "0", 2},
		{"--threads", "100000", 2},
		{"--threads", "-1", 2},
		{"--samples", "1000000000", 2},
		{"--samples", "-5", 2},
		{"--batch", "65536", 0},   // clamped to the one input
		{"--threads", "256", 0},   // clamped to the processors
		{"--samples", "65536", 0}, // allowed, with a clamped batch
	} {
		t.Run(c.flag+"="+c.value, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{"predict", "--model", filepath.Join("demo", "model.ebnn"), "--input", in, c.flag, c.value}
			if c.flag != "--samples" {
				args = append(args, "--samples", "2")
			}
			code := run(args, &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errb.String())
			}
			if c.code != 0 && !strings.Contains(errb.String(), c.flag) {
				t.Errorf("error does not name %s: %s", c.flag, errb.String())
			}
		})
	}
}

// TestAlignedTableMatchesTabwriter: the streamed table is byte for byte what text/tabwriter
// prints when the widths are the widest cells.
func TestAlignedTableMatchesTabwriter(t *testing.T) {
	rows := [][]string{classHeader, {"0", "3", "0.9000", "0.1234", "0.1000", "0.0234"}, {"123456", "7", "1.0000", "-0.0000", "12.3456", "0.0000"}}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', tabwriter.AlignRight)
	widths := make([]int, len(classHeader))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	tw.Flush()
	var got bytes.Buffer
	at := &alignedTable{w: &got, widths: widths, padding: 2}
	for _, r := range rows {
		if err := at.row(r...); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

// FuzzCSVInputs: predict's CSV reader returns finite rows of the model's width or an error
// naming the file; never a panic.
func FuzzCSVInputs(f *testing.F) {
	f.Add("a,b,c\n1,2,3\n4,5,6\n", false)
	f.Add("1,2,3\n\n4,5,NaN\n", false)
	f.Add("1,2,3\n", true)
	f.Add("\"1\",\" 2\",3\n", false)
	f.Add("1,x,3\n4,5,6\n", false)
	f.Fuzz(func(t *testing.T, content string, header bool) {
		open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }
		src, err := newCSVInputs(open, "f.csv", 3, header, csvFuzzLimits)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		total := 0
		for {
			xs, err := src.next(2)
			if err != nil {
				if !strings.Contains(err.Error(), "f.csv") {
					t.Fatalf("error %q does not name the file", err)
				}
				return
			}
			if len(xs) == 0 {
				break
			}
			if len(xs)%3 != 0 || len(xs) > 6 {
				t.Fatalf("chunk of %d values", len(xs))
			}
			for _, v := range xs {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("non-finite value %v", v)
				}
			}
			total += len(xs) / 3
		}
		n, err := src.count()
		if err != nil || n != total {
			t.Fatalf("count %d, %v; read %d", n, err, total)
		}
	})
}

var csvFuzzLimits = csvrecords.Limits{MaxLineBytes: 512, MaxRows: 64, MaxColumns: 32}

// TestSpillTableMatchesTabwriter: the regression table, held in a file until its widths are
// known, prints byte for byte what text/tabwriter prints.
func TestSpillTableMatchesTabwriter(t *testing.T) {
	rows := [][]string{{"INPUT", "MEAN", "STD", "EPISTEMIC STD"}, {"0", "-3.4028e+38", "1", "0.1"}, {"1", "0.5", "1.235e-05", "0"}, {"10", "12", "3", "4"}}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
	var got bytes.Buffer
	st := newSpillTable(&got, 2)
	for _, r := range rows {
		if err := st.row(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}
