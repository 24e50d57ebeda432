package testutil

import (
	"os"
	"testing"
)

// DirNames lists the names in dir, sorted (os.ReadDir's order); the test fails at once if dir
// cannot be read.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
