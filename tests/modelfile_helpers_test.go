package tests

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
)

// writeFixtureModel writes a fixture as a model file (f32, the hand-built Spec) into dir, without
// going through convert/, and returns its path.
func writeFixtureModel(t testing.TB, fixture, dir string) string {
	t.Helper()
	w := format.NewWriter()
	modeltest.AddSpec(t, w, fixtureSpec(fixture))
	sd := stateDict(t, fixture)
	names := make([]string, 0, len(sd))
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := w.AddTensor(n, sd[n].Shape, sd[n].Data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, fixture+".ebnn")
	modeltest.Save(t, w, path)
	return path
}
