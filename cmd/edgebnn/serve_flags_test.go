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

// TestServeHelpOneDefault: each serve flag's help states its default once. --max-pending-bytes
// said "(default 32 MiB, raised to --max-body) (default 33554432)": the flag package's own
// default line, wrong whenever --max-body is above 32 MiB.
func TestServeHelpOneDefault(t *testing.T) {
	code, stdout, _ := runCLI("serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	help := map[string]string{}
	var name string
	for line := range strings.Lines(stdout) {
		if f, ok := strings.CutPrefix(line, "  --"); ok {
			name, _, _ = strings.Cut(strings.TrimSpace(f), " ")
			continue
		}
		if text, ok := strings.CutPrefix(line, "    \t"); ok && name != "" {
			help[name] += text
		}
	}
	if help["max-pending-bytes"] == "" {
		t.Fatalf("no --max-pending-bytes in:\n%s", stdout)
	}
	for name, h := range help {
		if n := strings.Count(h, "default"); n > 1 {
			t.Errorf("--%s: %d defaults in %q", name, n, h)
		}
	}
}
