package strictjson

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

type layer struct {
	Name string  `json:"name"`
	Out  int     `json:"out"`
	P    float64 `json:"p,omitempty"`
}

type base struct {
	Version int `json:"version"`
}

type doc struct {
	base                                    // promoted: "version"
	Epochs   int                            `json:"epochs"`
	Layers   []layer                        `json:"layers"`
	ByName   map[string]layer               `json:"by_name"`
	Settings map[string]any                 `json:"settings"`
	Info     json.RawMessage                `json:"info"`
	Any      any                            `json:"any"`
	Custom   selfDecoding                   `json:"custom"`
	Values   []float64                      `json:"values"`
	Nested   map[string]map[string][]string `json:"nested"`
	Skipped  int                            `json:"-"`
	Plain    int                            // named "Plain"
}

// selfDecoding decodes itself: its object's names are a map's (exact).
type selfDecoding struct{ m map[string]int }

func (c *selfDecoding) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &c.m) }

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       string // substring of the error; "" for none
	}{
		{"distinct", `{"version": 1, "epochs": 2, "layers": [{"name": "a", "out": 1}, {"name": "a", "out": 2}]}`, ""},
		{"a value equal to a name", `{"epochs": 1, "layers": [{"name": "name"}], "any": {"a": "a"}}`, ""},
		{"twice", `{"epochs": 1, "epochs": 3}`, `member "epochs" appears twice`},
		{"case", `{"epochs": 1, "Epochs": 3}`, `member "Epochs" repeats "epochs"`},
		{"promoted field in another case", `{"version": 1, "VERSION": 2}`, `member "VERSION" repeats "version"`},
		{"field without a tag", `{"Plain": 1, "plain": 2}`, `member "plain" repeats "Plain"`},
		{"Kelvin sign folds to k", `{"layers": [{"name": "a", "name": "b"}]}`, `member "name" appears twice`},
		{"in a list of structs", `{"layers": [{"out": 1}, {"out": 1, "OUT": 2}]}`, `member "OUT" repeats "out"`},
		{"map keys are case-sensitive", `{"by_name": {"Linear": {"out": 1}, "linear": {"out": 2}}}`, ""},
		{"a map key twice", `{"by_name": {"a": {}, "a": {}}}`, `member "a" appears twice`},
		{"struct values of a map", `{"by_name": {"a": {"out": 1, "Out": 2}}}`, `member "Out" repeats "out"`},
		{"interface values: exact", `{"settings": {"Lr": 1, "lr": 2, "x": {"K": 1, "k": 2}}}`, ""},
		{"interface values: twice", `{"settings": {"x": {"k": 1, "k": 2}}}`, `member "k" appears twice`},
		{"any field", `{"any": [{"a": 1, "a": 2}]}`, `member "a" appears twice`},
		{"raw is opaque", `{"info": {"Note": 1, "note": 2, "x": 1, "x": 2}}`, ""},
		{"custom decoding: exact", `{"custom": {"A": 1, "a": 2}}`, ""},
		{"custom decoding: twice", `{"custom": {"a": 1, "a": 2}}`, `member "a" appears twice`},
		{"nested maps", `{"nested": {"a": {"b": ["x"], "B": ["y"]}, "A": {}}}`, ""},
		{"nested maps twice", `{"nested": {"a": {"b": [], "b": []}}}`, `member "b" appears twice`},
		{"unknown members are not examined", `{"unknown": {"a": 1, "a": 2}, "Unknown": 3}`, ""},
		{"a skipped field", `{"Skipped": {"a": 1, "a": 2}}`, ""},
		{"numbers skipped as bytes", `{"values": [1, 2, {"a": 1, "a": 2}]}`, ""},
		{"malformed is left to the decoder", `{"epochs": 1, "layers" 2}`, ""},
		{"scalar and empty", `1`, ""},
		{"too deep", `{"any": ` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, "nested deeper than 10000"},
		{"deep but allowed", `{"any": ` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d doc
			err := Check([]byte(c.json), &d)
			if c.want == "" && err != nil {
				t.Fatalf("%v, want nil", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("%v, want an error containing %q", err, c.want)
			}
		})
	}
}

type selfList []selfList

// TestCheckSelfNestingType: a type that holds itself (type T []T) does not send the check into
// an endless recursion.
func TestCheckSelfNestingType(t *testing.T) {
	var v selfList
	if err := Check([]byte(`[[], [[]], [{"a": 1, "a": 2}]]`), &v); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("%v, want the repeated a refused", err)
	}
}

// TestCheckKelvin: names that differ by a Unicode case fold (K and the Kelvin sign) are one
// struct field to encoding/json, and so one name here.
func TestCheckKelvin(t *testing.T) {
	var v struct {
		K int `json:"k"`
	}
	doc := []byte(`{"k": 1, "\u212a": 2}`)
	if err := json.Unmarshal(doc, &v); err != nil || v.K != 2 {
		t.Fatalf("encoding/json: %v, k = %d (this test assumes it matches the Kelvin sign to k)", err, v.K)
	}
	if err := Check(doc, &v); err == nil || !strings.Contains(err.Error(), `repeats "k"`) {
		t.Errorf("%v, want the Kelvin sign refused as a repeat of k", err)
	}
}

// TestFoldIsEqualFold: two names collide exactly when strings.EqualFold says so (how
// encoding/json matches a name with a field), over strings of runes with non-trivial folds.
func TestFoldIsEqualFold(t *testing.T) {
	alphabet := []rune("aAkKsSß\u212a\u017f\u1e9eσςΣ1_")
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		r := make([]rune, 1+rng.IntN(3))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	for range 20000 {
		a, b := word(), word()
		if got, want := Fold(a) == Fold(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("%q, %q: fold equal %v, EqualFold %v", a, b, got, want)
		}
	}
}

// TestCheckAgreesWithDecoding: a repeat Check refuses is one encoding/json would have resolved
// silently (the last value wins, whatever the case).
func TestCheckAgreesWithDecoding(t *testing.T) {
	var v struct {
		Epochs int `json:"epochs"`
	}
	doc := []byte(`{"epochs": 1, "Epochs": 300}`)
	if err := json.Unmarshal(doc, &v); err != nil || v.Epochs != 300 {
		t.Fatalf("encoding/json: %v, epochs %d (this test assumes it keeps the last)", err, v.Epochs)
	}
	if Check(doc, &v) == nil {
		t.Error("Check accepted the document")
	}
}

func TestDecode(t *testing.T) {
	type small struct {
		Epochs int      `json:"epochs"`
		Names  []string `json:"names"`
	}
	for _, c := range []struct {
		name, json string
		want       string
		epochs     int
	}{
		{"ok", ` {"epochs": 3, "names": ["a", "a"]} `, "", 3},
		{"unknown member", `{"epochs": 3, "epoch": 4}`, `unknown field "epoch"`, 0},
		{"repeated member", `{"epochs": 3, "Epochs": 4}`, `repeats "epochs"`, 0},
		{"second value", `{"epochs": 3} {}`, "trailing data after the JSON object at byte", 0},
		{"stray bracket", `{"epochs": 3}]`, "trailing data after the JSON object", 0},
		{"stray brace", `{"epochs": 3}}`, "trailing data after the JSON object", 0},
		{"syntax", `{"epochs": 3,}`, "invalid character", 0},
		{"empty", ``, "empty: no JSON value", 0},
		{"white space", " \n\t", "empty: no JSON value", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d small
			err := Decode([]byte(c.json), &d)
			if c.want == "" {
				if err != nil || d.Epochs != c.epochs {
					t.Fatalf("%v, epochs %d; want nil, %d", err, d.Epochs, c.epochs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestCheckMemory: members no field takes and opaque values are skipped without building
// anything, so a hostile document of 200 000 unknown members (or one RawMessage holding them)
// costs a small multiple of its size, not the 40× a map of its names did.
func TestCheckMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"info": {`)
	for i := range 200000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(`": 1`)
	}
	b.WriteString(`}, "zz": {"a": 1}}`)
	data := []byte(strings.Replace(b.String(), `{"info": {`, `{"info": {"pad": 0, `, 1))
	unknown := []byte(strings.Replace(string(data), `"info"`, `"unknown"`, 1))
	var d doc
	for _, in := range [][]byte{data, unknown} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := Check(in, &d); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("Check of %d bytes allocated %d bytes", len(in), got)
		// The json.Decoder's own buffer, grown by doubling to hold the one large value, is
		// about 4× its size; a map of the 200 000 names was 40×.
		if got > 6*uint64(len(in)) {
			t.Errorf("Check of %d bytes allocated %d bytes (> 6×)", len(in), got)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"layers": [`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name": "linear", "out": 256, "p": 0.5}`)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	var d doc
	for b.Loop() {
		if err := Check(data, &d); err != nil {
			b.Fatal(err)
		}
	}
}
