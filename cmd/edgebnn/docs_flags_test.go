package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// flagLine matches a flag in the flag list printUsage writes: "  --name" or "  -x".
var flagLine = regexp.MustCompile(`(?m)^  (--?[a-z][a-z0-9-]*)`)

// TestFlagsDocumented checks that every flag a command lists under -h is documented: it stands in
// README.md or docs/*.md as the flag itself (`--name`, `-o`), or, for train, whose config-file
// keys are its flags (README), as its key (`name_with_underscores`). A flag added without a
// word in the docs fails here.
func TestFlagsDocumented(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/*.md: %v (%d files)", err, len(files))
	}
	var docs strings.Builder
	for _, f := range append([]string{"../../README.md"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
		docs.WriteByte('\n')
	}
	text := docs.String()
	// standsAlone reports whether word occurs in text with no name character (letter, digit,
	// dash, underscore) on either side.
	standsAlone := func(word string) bool {
		return regexp.MustCompile(`(?:^|[^\w-])` + regexp.QuoteMeta(word) + `(?:$|[^\w-])`).MatchString(text)
	}
	for _, c := range commandTable() {
		_, help, _ := runCLI(c.name, "-h")
		flags := flagLine.FindAllStringSubmatch(help, -1)
		if c.name == "train" && len(flags) < 50 {
			t.Fatalf("train -h lists %d flags; the pattern no longer reads printUsage's list:\n%s", len(flags), help)
		}
		for _, m := range flags {
			flag := m[1]
			if standsAlone(flag) {
				continue
			}
			if c.name == "train" && standsAlone(strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_")) {
				continue
			}
			t.Errorf("%s %s: in the flag list of 'edgebnn %s -h' but nowhere in README.md or docs/*.md", c.name, flag, c.name)
		}
	}
}
