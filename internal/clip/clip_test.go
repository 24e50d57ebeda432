package clip

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestQV(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	cases := []struct {
		name, got, want string
	}{
		{"short", Q("w.b"), `"w.b"`},
		{"exact", Q(strings.Repeat("x", Max)), `"` + strings.Repeat("x", Max) + `"`},
		{"long", Q(long), `"` + strings.Repeat("a", Max) + `"… (1048576 bytes)`},
		{"rune boundary", Q(strings.Repeat("é", 40)), `"` + strings.Repeat("é", 32) + `"… (80 bytes)`},
		{"V string", V(long), `"` + strings.Repeat("a", Max) + `"… (1048576 bytes)`},
		{"V bytes", V([]byte("ab")), `"ab"`},
		{"V int", V(42), `42`},
		{"S", S(long), strings.Repeat("a", Max) + "… (1048576 bytes)"},
		{"Error", Error(errors.New(long)).Error(), strings.Repeat("a", MaxMessage/2) + "… (1048576 bytes) …" + strings.Repeat("a", MaxMessage/2)},
		{"Error keeps the reason", Error(errors.New(long + ": the reason")).Error(),
			strings.Repeat("a", MaxMessage/2) + "… (1048588 bytes) …" + strings.Repeat("a", MaxMessage/2-12) + ": the reason"},
		{"V slice", V(make([]int, 100))[:12], `[0 0 0 0 0 0`},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
	if s := V(make([]int, 100)); len(s) > Max+20 || !strings.HasSuffix(s, "… (201 bytes)") {
		t.Errorf("V of a long slice: %s", s)
	}
}

func TestErrorUnwraps(t *testing.T) {
	base := errors.New("base")
	err := Error(fmt.Errorf("%s: %w", strings.Repeat("x", 1000), base))
	if !errors.Is(err, base) {
		t.Fatal("Error hides the wrapped error")
	}
	if Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
}
