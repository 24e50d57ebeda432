package kernels

import (
	"fmt"
	"testing"
	"time"
)

// naiveGemm is the textbook triple loop C = A·B (no transposes), the baseline of BenchmarkGemm.
func naiveGemm(n int, a, b, c []float32) {
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for l := 0; l < n; l++ {
				s += a[i*n+l] * b[l*n+j]
			}
			c[i*n+j] = s
		}
	}
}

// BenchmarkGemm reports GFLOP/s of Gemm on square matrices and the speed-up over naiveGemm
// timed in the same run.
func BenchmarkGemm(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			r := newRand(uint64(n))
			x, y, z := randSlice(r, n*n), randSlice(r, n*n), make([]float32, n*n)
			flops := 2 * float64(n) * float64(n) * float64(n)
			// Time the naive loop over at least 100 ms (a single run for large n).
			reps, start, cpu0 := 0, time.Now(), processCPUSeconds()
			for reps == 0 || time.Since(start) < 100*time.Millisecond {
				naiveGemm(n, x, y, z)
				reps++
			}
			naive := time.Since(start).Seconds() / float64(reps)
			naiveCPU := (processCPUSeconds() - cpu0) / float64(reps)
			b.ResetTimer()
			cpu1 := processCPUSeconds()
			for i := 0; i < b.N; i++ {
				Gemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
			}
			perCPU := (processCPUSeconds() - cpu1) / float64(b.N)
			per := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(flops/per/1e9, "GFLOP/s")
			b.ReportMetric(flops/naive/1e9, "naive-GFLOP/s")
			b.ReportMetric(naive/per, "x-vs-naive")
			if perCPU > 0 && naiveCPU > 0 {
				b.ReportMetric(flops/perCPU/1e9, "GFLOP/cpu-s")
				b.ReportMetric(naiveCPU/perCPU, "x-vs-naive-cpu")
			}
		})
	}
}

// BenchmarkGemmShapes covers shapes typical of the runtime (tall-skinny, transposed operands).
func BenchmarkGemmShapes(b *testing.B) {
	for _, s := range []struct {
		m, n, k        int
		transA, transB bool
	}{{1, 512, 512, false, false}, {16, 256, 784, false, true}, {128, 128, 128, true, false}, {10, 10, 10, false, false},
		// The inducing weight sampler of a 784→128 layer with 16×24 inducing: Z_r E1, R·(core C).
		{16, 785, 128, false, false}, {128, 785, 16, false, false}} {
		b.Run(fmt.Sprintf("m%d_n%d_k%d_tA%v_tB%v", s.m, s.n, s.k, s.transA, s.transB), func(b *testing.B) {
			r := newRand(1)
			x, y, z := randSlice(r, s.m*s.k), randSlice(r, s.k*s.n), make([]float32, s.m*s.n)
			lda, ldb := s.k, s.n
			if s.transA {
				lda = s.m
			}
			if s.transB {
				ldb = s.k
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Gemm(s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGemv reports GFLOP/s of Gemv on square matrices.
func BenchmarkGemv(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		for _, trans := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/trans=%v", n, trans), func(b *testing.B) {
				r := newRand(uint64(n))
				a, x, y := randSlice(r, n*n), randSlice(r, n), make([]float32, n)
				b.ResetTimer()
				cpu0 := processCPUSeconds()
				for i := 0; i < b.N; i++ {
					Gemv(trans, n, n, 1, a, n, x, 0, y)
				}
				reportRate(b, cpu0, 2*float64(n*n)/1e9, "GFLOP")
			})
		}
	}
}

// BenchmarkNormal reports standard normal draws per second.
func BenchmarkNormal(b *testing.B) {
	s := NewStream(1, 2, 3)
	const n = 4096
	x, y := make([]float32, n), make([]float64, n)
	for _, bc := range []struct {
		name string
		draw func() // n draws
	}{
		{"float32", func() { s.Normal(x) }},
		{"float64", func() { s.Normal64(y) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := processCPUSeconds()
			for i := 0; i < b.N; i++ {
				bc.draw()
			}
			reportRate(b, cpu0, n, "normals")
		})
	}
}

func BenchmarkCholesky(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			a := convert[float64](spd(1, n))
			w := make([]float64, len(a))
			for i := 0; i < b.N; i++ {
				copy(w, a)
				if err := Cholesky(w, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIm2Col times Im2Col on a ResNet's first- and last-stage 3×3 convolutions (stride 1,
// "same" padding: the one-copy-per-plane path) and reports its speed-up over the row-by-row path
// (im2colRows) timed in the same run.
func BenchmarkIm2Col(b *testing.B) {
	for _, g := range []ConvGeom{
		{InC: 32, InH: 32, InW: 32, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1},
		{InC: 512, InH: 4, InW: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1},
	} {
		b.Run(fmt.Sprintf("%dx%dx%d", g.InC, g.InH, g.InW), func(b *testing.B) {
			img := make([]float32, g.InC*g.InH*g.InW)
			col := make([]float32, g.InC*g.KH*g.KW*g.OutH()*g.OutW())
			b.SetBytes(int64(4 * len(col)))
			for b.Loop() {
				Im2Col(g, img, col)
			}
			fast := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
			start := time.Now()
			for range b.N {
				im2colRows(g, img, col, g.OutH(), g.OutW())
			}
			rows := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(rows/fast, "speedup_vs_rows")
		})
	}
}

// BenchmarkPhiloxBlocks generates 1024 Philox4x32-10 blocks (4096 words) per op with the
// dispatched kernel and reports words per second and the speed-up over the generic twin timed
// in the same run.
func BenchmarkPhiloxBlocks(b *testing.B) {
	dst := make([]uint32, 4096)
	key := [2]uint32{1, 2}
	start := time.Now()
	reps := 0
	for reps == 0 || time.Since(start) < 50*time.Millisecond {
		philoxBlocksGeneric(dst, key, uint64(reps)*1024, 3, 4)
		reps++
	}
	generic := time.Since(start).Seconds() / float64(reps)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		philoxBlocks(dst, key, uint64(i)*1024, 3, 4)
	}
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(dst))/per, "words/s")
	b.ReportMetric(generic/per, "x-vs-generic")
}

// reportRate reports count·b.N per second of wall-clock time as unit+"/s" and, where the
// platform measures it, per second of the process's CPU time since cpu0 as unit+"/cpu-s".
func reportRate(b *testing.B, cpu0, count float64, unit string) {
	b.ReportMetric(count*float64(b.N)/b.Elapsed().Seconds(), unit+"/s")
	if cpu := processCPUSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(count*float64(b.N)/cpu, unit+"/cpu-s")
	}
}

// BenchmarkGemmPackedLocal times GemmPacked on the products of the local sampler's second layer
// and first-layer output (mlp_ffgu, K = 32: 32 rows), whose A the drivers read in place where the
// build has an in-place kernel (gemmInPlaceA), and reports GFLOP/s.
func BenchmarkGemmPackedLocal(b *testing.B) {
	for _, s := range []struct{ m, n, k int }{{32, 25, 128}, {32, 16, 144}, {32, 128, 16}, {32, 10, 16}, {32, 16, 24}} {
		b.Run(fmt.Sprintf("m%d_n%d_k%d", s.m, s.n, s.k), func(b *testing.B) {
			r := newRand(2)
			a, bm, c := randSlice(r, s.m*s.k), randSlice(r, s.k*s.n), make([]float32, s.m*s.n)
			pb := NewPackedB(false, s.k, s.n, bm, s.n)
			work := make([]float32, GemmPackedWork)
			for b.Loop() {
				GemmPacked(false, s.m, 1, a, s.k, pb, 0, c, s.n, work)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkElementwise times the vector kernels of the local sampler and the softmax (assembly
// where the build has it) and their generic twins, on n values (rows × 16 for the row kernels),
// and reports values per second.
func BenchmarkElementwise(b *testing.B) {
	for _, n := range []int{12, 128, 4096} {
		r := newRand(3)
		x, y, z := randSlice(r, n), randSlice(r, n), randSlice(r, n)
		e := make([]float32, n)
		alpha := randSlice(r, n/16+1)
		for _, k := range []struct {
			name string
			f    func()
		}{
			{"ReLU", func() { relu(x) }},
			{"ReLU/generic", func() { reluGeneric(x) }},
			{"SqrtPos", func() { sqrtPos(x) }},
			{"SqrtPos/generic", func() { sqrtPosGeneric(x) }},
			{"Mul", func() { mul(z, x, y) }},
			{"Mul/generic", func() { mulGeneric(z, x, y) }},
			{"MulAddRows", func() { mulAddRows(max(1, n/16), min(n, 16), x, 16, y, 16, z, 0, e, 16) }},
			{"MulAddRows/generic", func() { mulAddRowsGeneric(max(1, n/16), min(n, 16), x, 16, y, 16, z, 0, e, 16) }},
			{"AxpyRows", func() { axpyRows(max(1, n/16), min(n, 16), alpha, 1, x, 16, e, 16) }},
			{"AxpyRows/generic", func() { axpyRowsGeneric(max(1, n/16), min(n, 16), alpha, 1, x, 16, e, 16) }},
			{"ExpMax", func() { copy(e, x); expMax(e) }},
			{"ExpMax/generic", func() { copy(e, x); expMaxGeneric(e) }},
		} {
			b.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(b *testing.B) {
				for b.Loop() {
					k.f()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "values/s")
			})
		}
	}
}

// BenchmarkCol2Im: the input gradient's scatter of a 3×3 convolution with 32 input channels on
// 14×14 images (the second convolution of paper004-fmnist-fsvi's CNN), one image per op.
func BenchmarkCol2Im(b *testing.B) {
	g := ConvGeom{InC: 32, InH: 14, InW: 14, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1}
	col := make([]float32, g.InC*g.KH*g.KW*g.OutH()*g.OutW())
	for i := range col {
		col[i] = float32(i%7) - 3
	}
	img := make([]float32, g.InC*g.InH*g.InW)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Col2Im(g, col, img)
	}
}
