package csvrecords

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// readAll returns the records of in (copies) or the first error.
func readAll(in string, lim Limits) ([][]string, error) {
	rs := New(strings.NewReader(in), "t.csv", lim)
	var out [][]string
	for {
		rec, _, err := rs.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, append([]string(nil), rec...))
	}
}

func TestRecordsLimits(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		lim      Limits
		fields   []int  // fields per record read
		want     string // error substring; "" for none
	}{
		{"plain", "1,2,3\n4,5,6\n", Limits{MaxColumns: 3}, []int{3, 3}, ""},
		{"too many fields", "1,2,3\n4,5,6,7\n", Limits{MaxColumns: 3}, nil, "t.csv: line 2: more than 3 fields"},
		{"quoted commas are not separators", "\"1,5\",2,3\n", Limits{MaxColumns: 3}, []int{3}, ""},
		{"escaped quotes", "\"a\"\"b\",\"c,d\"\"\",3\n", Limits{MaxColumns: 3}, []int{3}, ""},
		{"quoted line break", "\"1\n2\",3\n", Limits{}, nil, "t.csv: line 1: a quoted field spans lines"},
		{"long line", "1234567890\n", Limits{MaxLineBytes: 8}, nil, "t.csv: line 1: longer than 8 bytes"},
		{"blank lines and CRLF", "1,2\r\n\r\n\n3,4\r\n", Limits{MaxColumns: 2}, []int{2, 2}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := readAll(tc.in, tc.lim)
			if testutil.WantError(t, err, tc.want) {
				return
			}
			if len(recs) != len(tc.fields) {
				t.Fatalf("%d records %q, want %d", len(recs), recs, len(tc.fields))
			}
			for i, r := range recs {
				if len(r) != tc.fields[i] {
					t.Errorf("record %d: %d fields %q, want %d", i, len(r), r, tc.fields[i])
				}
			}
		})
	}
}

// TestRecordsFieldLimitBeforeParsing: a 16 MiB line of commas under a 784-column limit is refused
// after memory near the input's size, not the ≈ 40 bytes a field encoding/csv spends on a whole
// record (16 Mi fields: 640 MB).
func TestRecordsFieldLimitBeforeParsing(t *testing.T) {
	in := strings.Repeat(",", 16<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAll(in, Limits{MaxColumns: 784})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than 784 fields") {
		t.Fatalf("error %v, want more than 784 fields", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("%d bytes allocated to refuse a %d-byte line", alloc, len(in))
	}
}

func TestParseFinite(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float32
		err  string
	}{
		{"1.5", 1.5, ""},
		{" -2 ", -2, ""},
		{"3.4028235e38", 3.4028235e38, ""}, // float32's largest, as numpy prints it
		{"-3.4028235e38", -3.4028235e38, ""},
		{"3.5e38", 0, "not a finite float32"},
		{"1e400", 0, "not a finite float32"},
		{"NaN", 0, "not a finite float32"},
		{"inf", 0, "not a finite float32"},
		{"1e-50", 0, ""},
		{"x", 0, "not a number"},
		{"0x1p4", 0, "not a number"}, // Go's syntax, not CSV's
		{"1_000", 0, "not a number"},
	} {
		v, err := ParseFinite(tc.in)
		switch {
		case tc.err == "" && (err != nil || v != tc.want):
			t.Errorf("ParseFinite(%q) = %v, %v; want %v", tc.in, v, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseFinite(%q) = %v, %v; want an error %q", tc.in, v, err, tc.err)
		}
	}
}

// TestIsHeaderRow: only a row of names is a header; a row with a number, an empty field, or no
// letter in a field ("?", a line of another separator) is data, so that its error is reported
// instead of the row dropped.
func TestIsHeaderRow(t *testing.T) {
	for _, tc := range []struct {
		rec  []string
		want bool
	}{
		{[]string{"x1", "x2", "label"}, true},
		{[]string{" petal length ", "species"}, true},
		{[]string{"x", "1"}, false},
		{[]string{"", "", ""}, false},
		{[]string{"?", "?", "?"}, false},
		{[]string{"1\t2\t3"}, false},
		{[]string{"1;2;3"}, false},
		{[]string{"nan", "inf"}, false}, // numbers (data, refused there as not finite)
		{[]string{"1e999", "a"}, false},
		{nil, false},
	} {
		if got := IsHeaderRow(tc.rec); got != tc.want {
			t.Errorf("IsHeaderRow(%q) = %v, want %v", tc.rec, got, tc.want)
		}
	}
}
