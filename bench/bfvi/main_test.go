package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuick runs every experiment in quick mode (reduced sizes) and checks that each writes its
// table and figures; the experiments themselves fail on non-finite KL or k̂. Skipped under -short.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment (quick mode, a few seconds)")
	}
	dir := t.TempDir()
	o := options{quick: true, outDir: filepath.Join(dir, "res"), imgDir: filepath.Join(dir, "img")}
	md, err := runExperiments("all", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range experiments {
		b, err := os.ReadFile(filepath.Join(o.outDir, e.name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "|---|") || !strings.Contains(string(b), "CPU time") {
			t.Errorf("%s: table missing:\n%s", e.name, b)
		}
	}
	for _, want := range []string{"| BF-VI | 30 |", "| Gaussian-VI | – |", "| BF-VI MAF (M = 10) |", "| NCP | Gaussian VI full rank |"} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, f := range []string{"bernoulli.png", "cauchy.png", "linreg_pairs_maf.png", "linreg_pairs_mfgauss.png", "eightschools_funnel.png"} {
		st, err := os.Stat(filepath.Join(o.imgDir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Size() < 1000 || st.Size() > 150<<10 {
			t.Errorf("%s: %d bytes", f, st.Size())
		}
	}
	if _, err := runExperiments("nope", o); err == nil {
		t.Error("unknown experiment accepted")
	}
}
