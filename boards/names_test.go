package boards

import (
	"regexp"
	"testing"
)

// TestValidNameAndCPU: the hand-written matchers accept exactly what the regular expressions
// they replace accept, on every string of up to five characters over an alphabet that covers
// each character class (and a few longer names).
func TestValidNameAndCPU(t *testing.T) {
	nameRE := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	cpuRE := regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)
	check := func(s string) {
		if got, want := validName(s), nameRE.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, want %v", s, got, want)
		}
		if got, want := validCPU(s), cpuRE.MatchString(s); got != want {
			t.Errorf("validCPU(%q) = %v, want %v", s, got, want)
		}
	}
	const alphabet = "az09-.A_ é"
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+string(c), n-1)
		}
	}
	walk("", 5)
	for _, s := range []string{"rpi4", "rpi-zero-2w", "cortex-a53", "cortex-a7.1", "jetson--nano", "-rpi", "rpi-", "max"} {
		check(s)
	}
	// The expected verdicts, written out for the common cases.
	for _, c := range []struct {
		s           string
		name, cpuOK bool
	}{{"rpi-zero-2w", true, true}, {"cortex-a53", true, true}, {"a--b", false, true}, {"-a", false, false}, {"a.b", false, true}, {"", false, false}} {
		if validName(c.s) != c.name || validCPU(c.s) != c.cpuOK {
			t.Errorf("%q: validName %v validCPU %v, want %v %v", c.s, validName(c.s), validCPU(c.s), c.name, c.cpuOK)
		}
	}
}
