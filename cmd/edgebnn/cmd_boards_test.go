package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBoardsVerbose: boards -v prints the table boards prints, each row followed by its board's
// description indented to the PLATFORM column; a description, however long, does not widen a
// column.
func TestBoardsVerbose(t *testing.T) {
	userDir := t.TempDir()
	long := "A board with a long description: " + strings.Repeat("many words, ", 20) + "the end"
	mustWrite(t, filepath.Join(userDir, "tiny.json"), []byte(`{"name": "tiny", "description": "`+long+`", "goos": "linux",
 "goarch": "arm64", "qemu": "qemu-aarch64-static", "qemu_cpu": "cortex-a53", "ram_bytes": 16000000,
 "budget_bytes": 4000000, "simd": {"neon": true}}`))
	for _, tc := range []struct {
		name, dir string
	}{
		{"built-in", ""},
		{"user profile", userDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"boards"}
			if tc.dir != "" {
				args = append(args, "--dir", tc.dir)
			}
			table := runOK(t, args...)
			verbose := runOK(t, append(args, "-v")...)
			profiles, err := loadProfiles(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			rows := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
			if len(rows) != len(profiles)+1 {
				t.Fatalf("boards: %d lines for %d profiles:\n%s", len(rows), len(profiles), table)
			}
			indent := strings.Index(rows[0], "PLATFORM")
			if indent <= 0 {
				t.Fatalf("boards: no PLATFORM in the header %q", rows[0])
			}
			var want strings.Builder
			want.WriteString(rows[0] + "\n")
			for i, p := range profiles {
				want.WriteString(rows[i+1] + "\n" + strings.Repeat(" ", indent) + p.Description + "\n")
			}
			if verbose != want.String() {
				t.Errorf("boards -v:\n%s\nwant:\n%s", verbose, want.String())
			}
		})
	}
}
