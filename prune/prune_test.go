package prune

import (
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

type entry struct {
	mag   float64
	layer int
	t     int
	i     int
}

// refPrune is a naive reference: list every entry with its position, stable-sort by magnitude
// and zero the first k.
func refPrune(layers []Layer, k int) {
	var es []entry
	for li, l := range layers {
		for ti, z := range [][]float32{l.ZRow, l.ZCol} {
			for i, v := range z {
				es = append(es, entry{math.Abs(float64(v)), li, ti, i})
			}
		}
	}
	sort.SliceStable(es, func(a, b int) bool { return es[a].mag < es[b].mag })
	// Each tensor's last entry in this order (its largest) is kept.
	last := map[[2]int]int{}
	for j, e := range es {
		last[[2]int{e.layer, e.t}] = j
	}
	var cand []entry
	for j, e := range es {
		if last[[2]int{e.layer, e.t}] != j {
			cand = append(cand, e)
		}
	}
	for _, e := range cand[:min(k, len(cand))] {
		if e.t == 0 {
			layers[e.layer].ZRow[e.i] = 0
		} else {
			layers[e.layer].ZCol[e.i] = 0
		}
	}
}

func randLayers(rng *rand.Rand, shapes [][2]int, ties bool) []Layer {
	var ls []Layer
	for i, s := range shapes {
		l := Layer{Name: string(rune('a' + i)), ZRow: make([]float32, s[0]), ZCol: make([]float32, s[1])}
		for _, z := range [][]float32{l.ZRow, l.ZCol} {
			for j := range z {
				if ties {
					z[j] = float32(rng.Intn(5)-2) / 4 // many exact ties, both signs, zeros
				} else {
					z[j] = float32(rng.NormFloat64())
				}
			}
		}
		ls = append(ls, l)
	}
	return ls
}

func clone(ls []Layer) []Layer {
	out := make([]Layer, len(ls))
	for i, l := range ls {
		out[i] = Layer{Name: l.Name, ZRow: append([]float32(nil), l.ZRow...), ZCol: append([]float32(nil), l.ZCol...)}
	}
	return out
}

func TestGlobalMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	shapes := [][2]int{{12, 30}, {0, 7}, {40, 5}, {3, 0}, {25, 25}}
	for _, ties := range []bool{false, true} {
		for _, f := range []float64{0, 0.1, 0.5, 0.73, 1} {
			ls := randLayers(rng, shapes, ties)
			want := clone(ls)
			total := 0
			for _, l := range ls {
				total += len(l.ZRow) + len(l.ZCol)
			}
			k := int(math.Floor(f*float64(total) + 0.5))
			refPrune(want, k)
			kept := 0 // the largest entry of each non-empty tensor stays
			for _, l := range ls {
				for _, z := range [][]float32{l.ZRow, l.ZCol} {
					if len(z) > 0 {
						kept++
					}
				}
			}
			k = min(k, total-kept)
			rep, err := Prune(ls, Options{Fraction: f})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Pruned != k || rep.Entries != total || rep.Mode != "global" {
				t.Fatalf("f=%v: report %+v, want %d of %d pruned", f, rep, k, total)
			}
			sum := 0
			for i := range ls {
				for j := range ls[i].ZRow {
					if ls[i].ZRow[j] != want[i].ZRow[j] {
						t.Fatalf("ties=%v f=%v: layer %d z_row[%d] = %v, reference %v", ties, f, i, j, ls[i].ZRow[j], want[i].ZRow[j])
					}
				}
				for j := range ls[i].ZCol {
					if ls[i].ZCol[j] != want[i].ZCol[j] {
						t.Fatalf("ties=%v f=%v: layer %d z_col[%d] = %v, reference %v", ties, f, i, j, ls[i].ZCol[j], want[i].ZCol[j])
					}
				}
				sum += rep.Layers[i].Pruned
			}
			if sum != k {
				t.Errorf("per-layer pruned counts sum to %d, want %d", sum, k)
			}
		}
	}
}

func TestPerLayer(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	shapes := [][2]int{{10, 10}, {7, 0}, {33, 2}}
	ls := randLayers(rng, shapes, true)
	want := clone(ls)
	fr := []float64{0.5, 0.5, 0.25}
	for i := range want {
		n := shapes[i][0] + shapes[i][1]
		refPrune(want[i:i+1], int(math.Floor(fr[i]*float64(n)+0.5)))
	}
	rep, err := Prune(ls, Options{Fraction: 0.5, Layers: map[string]float64{"c": 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "per-layer" {
		t.Errorf("mode %q", rep.Mode)
	}
	for i := range ls {
		for j := range ls[i].ZRow {
			if ls[i].ZRow[j] != want[i].ZRow[j] {
				t.Fatalf("layer %d z_row[%d] differs from reference", i, j)
			}
		}
		for j := range ls[i].ZCol {
			if ls[i].ZCol[j] != want[i].ZCol[j] {
				t.Fatalf("layer %d z_col[%d] differs from reference", i, j)
			}
		}
		lr := rep.Layers[i]
		if want := float64(lr.Pruned) / float64(lr.Entries); !(math.Abs(lr.Fraction-want) <= 1e-12) {
			t.Errorf("layer %s fraction %v, want %v", lr.Layer, lr.Fraction, want)
		}
	}
	if rep.Layers[2].Pruned != 9 { // round(0.25 × 35) = 9
		t.Errorf("layer c pruned %d, want 9", rep.Layers[2].Pruned)
	}
}

// TestPrunedPriorStaysPD: Ψ = Z Zᵀ + D² stays positive definite however much of Z is removed.
func TestPrunedPriorStaysPD(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m, n := 6, 20
	for _, f := range []float64{0.5, 0.9, 1} {
		ls := randLayers(rng, [][2]int{{m * n, m * n}}, false)
		if _, err := Prune(ls, Options{Fraction: f}); err != nil {
			t.Fatal(err)
		}
		z := ls[0].ZRow
		psi := make([]float64, m*m)
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				for k := 0; k < n; k++ {
					psi[i*m+j] += float64(z[i*n+k]) * float64(z[j*n+k])
				}
			}
			psi[i*m+i] += 1e-6 // D² with D = softplus(ρ) > 0
		}
		if !cholOK(psi, m) {
			t.Errorf("f=%v: Z Zᵀ + D² is not positive definite", f)
		}
	}
}

func cholOK(a []float64, n int) bool {
	l := make([]float64, n*n)
	for j := 0; j < n; j++ {
		s := a[j*n+j]
		for k := 0; k < j; k++ {
			s -= l[j*n+k] * l[j*n+k]
		}
		if !(s > 0) {
			return false
		}
		l[j*n+j] = math.Sqrt(s)
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := 0; k < j; k++ {
				s -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = s / l[j*n+j]
		}
	}
	return true
}

func TestErrors(t *testing.T) {
	good := func() []Layer { return []Layer{{Name: "a", ZRow: []float32{1, 2}, ZCol: []float32{3}}} }
	nan := good()
	nan[0].ZCol[0] = float32(math.NaN())
	tests := []struct {
		name   string
		layers []Layer
		opt    Options
		want   string
	}{
		{"negative", good(), Options{Fraction: -0.1}, "not in [0, 1]"},
		{"above one", good(), Options{Fraction: 1.5}, "not in [0, 1]"},
		{"nan fraction", good(), Options{Fraction: math.NaN()}, "not in [0, 1]"},
		{"nan entry", nan, Options{Fraction: 0.5}, `layer "a": Z entry 0 is NaN`},
		{"unknown layer", good(), Options{Layers: map[string]float64{"b": 0.5}}, `no inducing layer named "b"`},
		{"bad layer fraction", good(), Options{Layers: map[string]float64{"a": 2}}, `layer "a" fraction`},
		{"duplicate", append(good(), good()...), Options{}, "given twice"},
	}
	for _, tc := range tests {
		if _, err := Prune(tc.layers, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Nothing is modified when an error is reported.
	if nan[0].ZRow[0] != 1 || nan[0].ZRow[1] != 2 {
		t.Error("entries modified despite the error")
	}
}

// TestNeverEmptiesATensor prunes everything it may: each non-empty z_row and z_col keeps exactly
// its largest-magnitude entry, so Z Zᵀ is never the zero matrix.
func TestNeverEmptiesATensor(t *testing.T) {
	for _, perLayer := range []bool{false, true} {
		ls := []Layer{
			{Name: "a", ZRow: []float32{0.1, -0.4, 0.2}, ZCol: []float32{0.01, 0.02}},
			{Name: "b", ZRow: []float32{-3}, ZCol: nil},
			{Name: "c", ZRow: []float32{0.5, -0.5}, ZCol: []float32{7, 8, 9}},
		}
		rep, err := Prune(ls, Options{Fraction: 1, PerLayer: perLayer})
		if err != nil {
			t.Fatal(err)
		}
		want := [][2][]float32{
			{{0, -0.4, 0}, {0, 0.02}},
			{{-3}, nil},
			{{0, -0.5}, {0, 0, 9}}, // tie: the later entry counts as larger
		}
		for i, l := range ls {
			for j, z := range [][]float32{l.ZRow, l.ZCol} {
				for e := range z {
					if z[e] != want[i][j][e] {
						t.Fatalf("perLayer=%v: layer %s tensor %d = %v, want %v", perLayer, l.Name, j, z, want[i][j])
					}
				}
			}
		}
		if rep.Pruned != 6 || rep.Entries != 11 {
			t.Fatalf("perLayer=%v: pruned %d of %d, want 6 of 11", perLayer, rep.Pruned, rep.Entries)
		}
	}
}
