//go:build !noserve

package main

import (
	"strings"
	"testing"
)

// TestServeFlagErrorsNameTheFlag: a serve flag out of range is refused with a message
// naming the flag the operator typed (--max-body, --max-instances, --concurrency,
// --max-pending-bytes, --max-header-bytes, --drain-timeout), not the Go field of serve.Config (MaxBodyBytes…); an
// explicit 0 is refused, not taken as the default; --max-instances -1 is blamed on itself, not
// on --batch.
func TestServeFlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--max-body", "-1"},
		{"--max-body", "2000000000"},
		{"--max-instances", "-1"},
		{"--concurrency", "5000"},
		{"--max-pending-bytes", "-1"},
		{"--max-pending-bytes", "1000"},
		{"--max-header-bytes", "10"},
		{"--drain-timeout", "1h"},
		{"--max-body", "0"},
		{"--max-instances", "0"},
	} {
		code, _, stderr := runCLI("serve", "--model", "demo/model.ebnn", c.flag, c.value)
		if code != exitUsage {
			t.Errorf("%s %s: exit %d, want %d", c.flag, c.value, code, exitUsage)
		}
		if !strings.Contains(stderr, c.flag) {
			t.Errorf("%s %s: the error does not name the flag: %q", c.flag, c.value, strings.TrimSpace(stderr))
		}
	}
}
