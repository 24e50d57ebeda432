package kernels

import (
	"math"
	"slices"
	"testing"
)

// Known-answer vectors of Random123 (kat_vectors, "philox4x32 10" lines): counter, key, output.
func TestPhiloxKnownAnswers(t *testing.T) {
	cases := []struct {
		name string
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{"zeros", [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{"ones", [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{"pi", [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, tc := range cases {
		if got := philox4x32(tc.ctr, tc.key); got != tc.want {
			t.Errorf("%s: got %08x, want %08x", tc.name, got, tc.want)
		}
	}
}

func TestStreamLayout(t *testing.T) {
	// The stream's words are the Philox blocks for counters (block, 0, a, b), key = seed halves.
	const seed = 0x0123456789abcdef
	s := NewStream(seed, 7, 9)
	key := [2]uint32{0x89abcdef, 0x01234567}
	for blk := uint32(0); blk < 3; blk++ {
		w := philox4x32([4]uint32{blk, 0, 7, 9}, key)
		for i := 0; i < 4; i += 2 {
			want := uint64(w[i+1])<<32 | uint64(w[i])
			if got := s.Uint64(); got != want {
				t.Fatalf("block %d word %d: got %#x, want %#x", blk, i, got, want)
			}
		}
	}
}

func TestStreamDeterminism(t *testing.T) {
	const n = 1001
	draw := func(seed uint64, a, b uint32) []float32 {
		s := NewStream(seed, a, b)
		x := make([]float32, n)
		s.Normal(x)
		return x
	}
	ref := draw(42, 3, 5)
	if again := draw(42, 3, 5); !equal32(ref, again) {
		t.Fatal("same (seed, a, b) gave different sequences")
	}
	for _, other := range [][3]uint64{{43, 3, 5}, {42, 4, 5}, {42, 3, 6}, {42, 5, 3}, {42 + 1<<32, 3, 5}} {
		if x := draw(other[0], uint32(other[1]), uint32(other[2])); equal32(ref, x) || x[0] == ref[0] {
			t.Fatalf("(seed, a, b) = %v gave the same sequence as (42, 3, 5)", other)
		}
	}
	// Chunking: words are buffered across calls, so any chunks of Normal or Uniform reproduce a
	// single call.
	s := NewStream(42, 3, 5)
	chunked := make([]float32, 0, n)
	for _, c := range []int{1, 6, 3, 100, 890} {
		x := make([]float32, c)
		s.Normal(x)
		chunked = append(chunked, x...)
	}
	if !equal32(ref[:1000], chunked) {
		t.Fatal("Normal in even chunks differs from a single call")
	}
	var zero Stream
	z0, z1 := NewStream(0, 0, 0), zero
	if z0.Uint64() != z1.Uint64() || z0.Uint64() != z1.Uint64() || z0.Uint64() != z1.Uint64() {
		t.Fatal("the zero Stream differs from NewStream(0, 0, 0)")
	}
	u1 := NewStream(1, 2, 3)
	u2 := u1 // copying a Stream forks an identical sequence
	all := make([]float32, 20)
	u1.Uniform(all)
	for i := 0; i < 20; i += 5 {
		part := make([]float32, 5)
		u2.Uniform(part)
		if !equal32(all[i:i+5], part) {
			t.Fatal("Uniform in chunks differs from a single call")
		}
	}
	// Misaligned state (an odd number of words consumed) still yields valid normals.
	m := NewStream(1, 2, 3)
	m.Uniform(make([]float32, 3))
	z := make([]float32, 9)
	m.Normal(z)
	for _, v := range z {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("Normal after Uniform: %v", z)
		}
	}
}

// checkTails compares the two-sided tail masses P(|z| > c) with their binomial standard errors;
// c = 3.5 and 4 lie beyond the ziggurat's base layer (r ≈ 3.44) and exercise its tail sampler.
func checkTails(t *testing.T, name string, x []float64) {
	t.Helper()
	n := float64(len(x))
	for _, c := range []float64{0.5, 1, 2, 3, 3.5, 4} {
		var cnt float64
		for _, v := range x {
			if math.Abs(v) > c {
				cnt++
			}
		}
		p := math.Erfc(c / math.Sqrt2)
		if se := math.Sqrt(p * (1 - p) / n); !(math.Abs(cnt/n-p) <= 5*se) {
			t.Errorf("%s: P(|z|>%g) = %g, want %g ± %g", name, c, cnt/n, p, 5*se)
		}
	}
}

// checkKS runs a Kolmogorov–Smirnov test against Φ: √N·D exceeds 2.3 with probability < 1e-4.
func checkKS(t *testing.T, name string, x []float64) {
	t.Helper()
	y := append([]float64(nil), x...)
	slices.Sort(y)
	n := float64(len(y))
	var d float64
	for i, v := range y {
		f := 0.5 * math.Erfc(-v/math.Sqrt2)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n))
	}
	if !(d*math.Sqrt(n) <= 2.3) {
		t.Errorf("%s: Kolmogorov–Smirnov √N·D = %g > 2.3", name, d*math.Sqrt(n))
	}
}

// TestZigguratTables checks the layer construction independently: every layer i ≥ 1 has area
// x_i·(f(x_{i-1}) − f(x_i)) = v, the base layer r·f(r) + ∫_r^∞ f = v, and the top edge reaches 0.
func TestZigguratTables(t *testing.T) {
	f := func(x float64) float64 { return math.Exp(-x * x / 2) }
	xs := make([]float64, zigLayers)
	for i := 1; i < zigLayers; i++ {
		xs[i] = zig.w[i] * zigScale
		if !closeTo(zig.f[i], f(xs[i]), 1e-15) {
			t.Fatalf("f[%d] = %g, want f(x) = %g", i, zig.f[i], f(xs[i]))
		}
	}
	if xs[zigLayers-1] != zigR {
		t.Fatalf("x_127 = %g, want r = %g", xs[zigLayers-1], zigR)
	}
	for i := 1; i < zigLayers; i++ {
		prev := 1.0
		if i > 1 {
			prev = f(xs[i-1])
		}
		if area := xs[i] * (prev - f(xs[i])); !closeTo(area, zigV, 1e-9) {
			t.Fatalf("layer %d area %g, want %g", i, area, zigV)
		}
		if i > 1 && !(xs[i] > xs[i-1]) {
			t.Fatalf("boundaries not increasing at %d", i)
		}
		var want uint32
		if i > 1 {
			want = uint32(xs[i-1] / xs[i] * zigScale)
		}
		if d := int64(zig.k[i]) - int64(want); d < -1 || d > 1 {
			t.Fatalf("k[%d] = %d, want %d", i, zig.k[i], want)
		}
	}
	tail := math.Sqrt(math.Pi/2) * math.Erfc(zigR/math.Sqrt2)
	if base := zigR*f(zigR) + tail; !closeTo(base, zigV, 1e-9) {
		t.Fatalf("base layer area %g, want %g", base, zigV)
	}
	// The top layer reaches the mode: x_1 is small and v/x_1 + f(x_1) = f(0) = 1 within
	// the precision of the published constants.
	if got := zigV/xs[1] + f(xs[1]); !closeTo(got, 1, 1e-6) {
		t.Fatalf("top layer does not close at the mode: %g", got)
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// checkMoments checks mean 0, variance 1 and fourth moment 3 of N(0,1) samples within 5
// standard errors: SE(mean) = 1/√N, SE(mean of x²) = √(2/N), SE(mean of x⁴) = √(96/N)
// (Var x⁴ = E x⁸ − 9 = 105 − 9).
func checkMoments(t *testing.T, name string, x []float64) {
	t.Helper()
	if len(x) == 0 {
		t.Fatalf("%s: no samples", name)
	}
	n := float64(len(x))
	var m1, m2, m4 float64
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: non-finite sample %g", name, v)
		}
		v2 := v * v
		m1 += v
		m2 += v2
		m4 += v2 * v2
	}
	m1, m2, m4 = m1/n, m2/n, m4/n
	if se := 1 / math.Sqrt(n); !(math.Abs(m1) <= 5*se) {
		t.Errorf("%s: mean %g, |mean| > 5 SE = %g", name, m1, 5*se)
	}
	if se := math.Sqrt(2 / n); !(math.Abs(m2-1) <= 5*se) {
		t.Errorf("%s: E[x²] = %g, want 1 ± %g", name, m2, 5*se)
	}
	if se := math.Sqrt(96 / n); !(math.Abs(m4-3) <= 5*se) {
		t.Errorf("%s: E[x⁴] = %g, want 3 ± %g", name, m4, 5*se)
	}
}

func TestNormalMoments(t *testing.T) {
	n := shortOr(t, 100_000, 2_000_000)
	s := NewStream(2024, 1, 2)
	x32 := make([]float32, n)
	s.Normal(x32)
	x := make([]float64, n)
	for i, v := range x32 {
		x[i] = float64(v)
	}
	checkMoments(t, "Normal", x)
	checkTails(t, "Normal", x)
	checkKS(t, "Normal", x)
	s64 := NewStream(2024, 1, 3)
	y := make([]float64, n+1) // odd length
	s64.Normal64(y)
	checkMoments(t, "Normal64", y)
	checkTails(t, "Normal64", y)
	checkKS(t, "Normal64", y)

	u := make([]float32, n)
	us := NewStream(5, 0, 0)
	us.Uniform(u)
	var mu, m2 float64
	for _, v := range u {
		if !(v >= 0) || !(v < 1) {
			t.Fatalf("Uniform value %g outside [0, 1)", v)
		}
		mu += float64(v)
		m2 += float64(v) * float64(v)
	}
	mu /= float64(n)
	m2 /= float64(n)
	// U[0,1): mean 1/2 (variance 1/12), E u² = 1/3 (variance 1/5 − 1/9 = 4/45).
	if se := math.Sqrt(1.0 / 12 / float64(n)); !(math.Abs(mu-0.5) <= 5*se) {
		t.Errorf("Uniform mean %g", mu)
	}
	if se := math.Sqrt(4.0 / 45 / float64(n)); !(math.Abs(m2-1.0/3) <= 5*se) {
		t.Errorf("Uniform E[u²] %g", m2)
	}
}

func TestStreamIndependence(t *testing.T) {
	n := shortOr(t, 50_000, 500_000)
	ids := [][3]uint64{{7, 0, 0}, {7, 1, 0}, {7, 0, 1}, {7, 1, 1}, {8, 0, 0}, {7 + 1<<32, 0, 0}}
	draws := make([][]float32, len(ids))
	for i, id := range ids {
		s := NewStream(id[0], uint32(id[1]), uint32(id[2]))
		draws[i] = make([]float32, n)
		s.Normal(draws[i])
	}
	// Under independence the sample correlation has SE ≈ 1/√N.
	lim := 5 / math.Sqrt(float64(n))
	for i := range draws {
		for j := i + 1; j < len(draws); j++ {
			if c := corr(draws[i], draws[j]); !(math.Abs(c) <= lim) {
				t.Errorf("streams %v and %v: correlation %g exceeds %g", ids[i], ids[j], c, lim)
			}
		}
		// Lag-1 autocorrelation within a stream (also across Box–Muller pairs).
		if c := corr(draws[i][1:], draws[i][:n-1]); !(math.Abs(c) <= lim) {
			t.Errorf("stream %v: lag-1 autocorrelation %g", ids[i], c)
		}
	}
}

func corr(x, y []float32) float64 {
	n := float64(len(x))
	var sx, sy, sxx, syy, sxy float64
	for i := range x {
		a, b := float64(x[i]), float64(y[i])
		sx += a
		sy += b
		sxx += a * a
		syy += b * b
		sxy += a * b
	}
	cov := sxy/n - sx/n*sy/n
	return cov / math.Sqrt((sxx/n-sx/n*sx/n)*(syy/n-sy/n*sy/n))
}

// TestStreamReset checks that a used stream, reset, gives the same values as a new one.
func TestStreamReset(t *testing.T) {
	s := NewStream(5, 6, 7)
	x := make([]float32, 1001)
	s.Normal(x[:77])
	s.Reset(9, 10, 11)
	r := NewStream(9, 10, 11)
	y := make([]float32, 1001)
	s.Normal(x)
	r.Normal(y)
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			t.Fatalf("normal %d after Reset = %v, new stream %v", i, x[i], y[i])
		}
	}
	if s.Uint64() != r.Uint64() {
		t.Fatal("Uint64 after Reset differs")
	}
}

// TestUniformMatchesWords: Uniform, which converts whole runs of buffered words, gives exactly
// one word()'s top 24 bits per value, in order, across refills and after a partial buffer.
func TestUniformMatchesWords(t *testing.T) {
	for _, tc := range []struct{ skip, n int }{{0, 1}, {0, 1000}, {3, 7}, {5, 4099}} {
		a, b := NewStream(11, 2, 3), NewStream(11, 2, 3)
		for i := 0; i < tc.skip; i++ {
			a.word()
			b.word()
		}
		got := make([]float32, tc.n)
		a.Uniform(got)
		for i, v := range got {
			if want := float32(b.word()>>8) / (1 << 24); v != want {
				t.Fatalf("skip %d, n %d: value %d = %g, want %g", tc.skip, tc.n, i, v, want)
			}
		}
		if a.word() != b.word() {
			t.Fatalf("skip %d, n %d: the streams disagree after Uniform", tc.skip, tc.n)
		}
	}
}

// TestZigWedgeLines checks the lines of every layer's wedge row against math.Exp over the x the
// wedge can give (u from k to 2²⁴−1, ends included): the lower one below the density and the upper
// one above it by more than Exp's rounding, so that zigRun's decisions are exp's. And the band
// between them, where exp is still needed, stays thin (under 10 % of the layer's height; under
// 1 % but in the outermost layers).
func TestZigWedgeLines(t *testing.T) {
	steps := 4000
	if testing.Short() {
		steps = 400
	}
	for i := 1; i < zigLayers; i++ {
		e := zig.wedge[i]
		if e.w != zig.w[i] || e.f != zig.f[i] || e.d != zig.f[i-1]-zig.f[i] {
			t.Fatalf("layer %d: wedge row %+v does not copy w, f, f[i-1]-f", i, e)
		}
		lo, hi := uint64(zig.k[i]), uint64(zigScale-1)
		var band float64
		for j := 0; j <= steps; j++ {
			u := lo + (hi-lo)*uint64(j)/uint64(steps)
			x := float64(u) * zig.w[i]
			g := math.Exp(-0.5 * x * x)
			l, h := e.alo+e.b*x*x, e.ahi+e.b*x*x
			if !(l < g-1e-14 && g+1e-14 < h) {
				t.Fatalf("layer %d, u = %d (x = %g): lines %g, %g do not enclose exp(−x²/2) = %g",
					i, u, x, l, h, g)
			}
			band = max(band, (h-l)/e.d)
		}
		if !(band <= 0.1) {
			t.Errorf("layer %d: the lines are %.3g of the layer's height apart", i, band)
		}
	}
}
