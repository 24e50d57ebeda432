package strictjson

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCheckNames(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       string // substring of the error; "" for none
	}{
		{"distinct", `{"a": 1, "b": [1, {"a": 2}], "c": {"a": {"a": 3}}}`, ""},
		{"a value equal to a name", `{"a": "a", "b": ["a", "a"], "c": {"d": "c"}}`, ""},
		{"same name in sibling objects", `[{"a": 1}, {"a": 2}]`, ""},
		{"scalar and empty", `1`, ""},
		{"twice", `{"epochs": 1, "epochs": 3}`, `member "epochs" appears twice`},
		{"case", `{"epochs": 1, "Epochs": 3}`, `member "Epochs" repeats "epochs"`},
		{"Kelvin sign folds to k", `{"k": 1, "\u212a": 2}`, `repeats "k"`},
		{"long s folds to s", `{"s": 1, "\u017f": 2}`, `repeats "s"`},
		{"after a nested value", `{"a": {"x": [1, 2]}, "b": 2, "A": 3}`, `member "A" repeats "a"`},
		{"inside an array", `{"layers": [{"w": 1}, {"w": 1, "w": 2}]}`, `member "w" appears twice`},
		{"escaped", `{"a": 1, "\u0061": 2}`, `member "a" appears twice`},
		{"malformed is left to the decoder", `{"a": 1, "b" 2}`, ""},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "nested deeper than 10000"},
		{"deep but allowed", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckNames([]byte(c.json))
			if c.want == "" && err != nil {
				t.Fatalf("%v, want nil", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("%v, want an error containing %q", err, c.want)
			}
		})
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

// TestCheckNamesAgreesWithDecoding: a repeat CheckNames refuses is one encoding/json would have
// resolved silently (the last value wins, whatever the case).
func TestCheckNamesAgreesWithDecoding(t *testing.T) {
	var v struct {
		Epochs int `json:"epochs"`
	}
	doc := []byte(`{"epochs": 1, "Epochs": 300}`)
	if err := json.Unmarshal(doc, &v); err != nil || v.Epochs != 300 {
		t.Fatalf("encoding/json: %v, epochs %d (this test assumes it keeps the last)", err, v.Epochs)
	}
	if CheckNames(doc) == nil {
		t.Error("CheckNames accepted the document")
	}
}

func TestDecode(t *testing.T) {
	type doc struct {
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
		{"empty", ``, "EOF", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d doc
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

func BenchmarkCheckNames(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"layers": [`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"type": "linear", "in": 784, "out": 256, "posterior": "ffg_u", "inducing_rows": 64}`)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := CheckNames(data); err != nil {
			b.Fatal(err)
		}
	}
}
